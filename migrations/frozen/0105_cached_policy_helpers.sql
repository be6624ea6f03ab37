-- Up Migration
-- Policy helpers whose plans are cached (issue 12). A `security definer` function with
-- `set search_path` is never inlined, and PostgreSQL before 18 plans a non-inlined SQL function's
-- body again on every call: app.can_see_post cost 139 µs around a 6 µs body and
-- app.session_access_level 430 µs around a 16 µs body on PostgreSQL 15. The same bodies in
-- PL/pgSQL keep their plans for the life of the connection (prepared once, then reused), so each
-- call costs about what its body does. Names, signatures, attributes (stable, security definer,
-- search_path) and rules are unchanged; only the language of the bodies moves. app.viewer_id() and
-- app.post_visible_to(...) stay plain SQL: they are inlined where they are used.

-- The level rule itself, over the columns it reads: plain SQL, inlined wherever it is used, so
-- app.user_access_level and app.onboarding_status share one rule without calling each other.
create function app.access_level_of(p_full_name text, p_username text, p_terms_accepted_at timestamptz,
  p_has_phone boolean, p_media_completed_at timestamptz, p_contacts_synced_at timestamptz)
  returns int
  language sql immutable
  as $$
  select case
    when p_full_name is null or p_username is null or p_terms_accepted_at is null then 1
    when not p_has_phone or p_media_completed_at is null then 2
    when p_contacts_synced_at is null then 3
    else 4
  end
$$;

create or replace function app.user_access_level(p_user_id uuid)
  returns int
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (
    select app.access_level_of(u.full_name, u.username, u.terms_accepted_at, p.user_id is not null, u.media_completed_at, u.contacts_synced_at)
    from app.users u
    left join app.phone_identities p on p.user_id = u.id
    where u.id = p_user_id);
end
$$;

-- Called on every authenticated request, in the same round trip as `begin` and the role settings.
create or replace function app.session_access_level(p_session_id uuid, p_user_id uuid)
  returns int
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (
    select app.access_level_of(u.full_name, u.username, u.terms_accepted_at, p.user_id is not null, u.media_completed_at, u.contacts_synced_at)
    from app.sessions s
    join app.users u on u.id = s.user_id
    left join app.phone_identities p on p.user_id = u.id
    where s.id = p_session_id and s.user_id = p_user_id and s.revoked_at is null and s.expires_at > now());
end
$$;

create or replace function app.viewer_has_level(p_level int)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return coalesce(app.user_access_level(app.viewer_id()) >= p_level, false); end $$;

create or replace function app.onboarding_status()
  returns table (access_level int, profile_basics_completed boolean, media_completed boolean,
                 phone_confirmed boolean, contacts_synced_at timestamptz)
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return query
  select app.access_level_of(u.full_name, u.username, u.terms_accepted_at, p.user_id is not null, u.media_completed_at, u.contacts_synced_at),
         u.full_name is not null and u.username is not null and u.terms_accepted_at is not null,
         u.media_completed_at is not null,
         p.user_id is not null,
         u.contacts_synced_at
  from app.users u
  left join app.phone_identities p on p.user_id = u.id
  where u.id = app.viewer_id();
end
$$;

create or replace function app.viewer_block_list()
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (
    select coalesce(array_agg(other), '{}') from (
      select b.blocked_id as other from app.blocks b where b.blocker_id = app.viewer_id()
      union
      select b.blocker_id from app.blocks b where b.blocked_id = app.viewer_id()) pairs);
end
$$;

create or replace function app.viewer_active_hub_ids()
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
          where m.user_id = app.viewer_id() and app.viewer_has_level(4));
end
$$;

create or replace function app.viewer_admin_hub_ids()
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
          where m.user_id = app.viewer_id() and m.role in ('admin', 'super_admin') and app.viewer_has_level(4));
end
$$;

create or replace function app.viewer_co_member_ids()
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (select coalesce(array_agg(distinct other.user_id), '{}')
          from app.hub_memberships mine
          join app.hub_memberships other on other.hub_id = mine.hub_id
          where mine.user_id = app.viewer_id() and app.viewer_has_level(4));
end
$$;

create or replace function app.is_active_member(p_hub_id uuid, p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = p_user_id)
     and coalesce(app.user_access_level(p_user_id) >= 4, false);
end
$$;

create or replace function app.is_member_of_post_target(p_post_id uuid, p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return exists (
    select from app.post_hubs ph
    join app.hub_memberships m on m.hub_id = ph.hub_id and m.user_id = p_user_id
    where ph.post_id = p_post_id and ph.kind = 'target');
end
$$;

create or replace function app.can_see_post(p_post_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return coalesce((select app.post_visible_to(p, app.viewer_id(), app.viewer_block_list()) from app.posts p where p.id = p_post_id), false);
end
$$;

create or replace function app.viewer_follows(p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return exists (select from app.follows f where f.follower_id = app.viewer_id() and f.followee_id = p_user_id);
end
$$;

create or replace function app_private.record_activity(p_post_id uuid, p_kind app.activity_kind, p_hub_id uuid default null)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  insert into app.activity_events (actor_id, post_id, kind, hub_id) values (app.viewer_id(), p_post_id, p_kind, p_hub_id);
end
$$;

-- Down Migration
create or replace function app_private.record_activity(p_post_id uuid, p_kind app.activity_kind, p_hub_id uuid default null)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$ insert into app.activity_events (actor_id, post_id, kind, hub_id) values (app.viewer_id(), p_post_id, p_kind, p_hub_id) $$;

create or replace function app.viewer_follows(p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select exists (select from app.follows f where f.follower_id = app.viewer_id() and f.followee_id = p_user_id) $$;

create or replace function app.can_see_post(p_post_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce((select app.post_visible_to(p, app.viewer_id(), app.viewer_block_list()) from app.posts p where p.id = p_post_id), false)
$$;

create or replace function app.is_member_of_post_target(p_post_id uuid, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (
    select from app.post_hubs ph
    join app.hub_memberships m on m.hub_id = ph.hub_id and m.user_id = p_user_id
    where ph.post_id = p_post_id and ph.kind = 'target')
$$;

create or replace function app.is_active_member(p_hub_id uuid, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = p_user_id)
     and coalesce(app.user_access_level(p_user_id) >= 4, false)
$$;

create or replace function app.viewer_co_member_ids()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(distinct other.user_id), '{}')
  from app.hub_memberships mine
  join app.hub_memberships other on other.hub_id = mine.hub_id
  where mine.user_id = app.viewer_id() and app.viewer_has_level(4)
$$;

create or replace function app.viewer_admin_hub_ids()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
  where m.user_id = app.viewer_id() and m.role in ('admin', 'super_admin') and app.viewer_has_level(4)
$$;

create or replace function app.viewer_active_hub_ids()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
  where m.user_id = app.viewer_id() and app.viewer_has_level(4)
$$;

create or replace function app.viewer_block_list()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(other), '{}') from (
    select b.blocked_id as other from app.blocks b where b.blocker_id = app.viewer_id()
    union
    select b.blocker_id from app.blocks b where b.blocked_id = app.viewer_id()) pairs
$$;

create or replace function app.onboarding_status()
  returns table (access_level int, profile_basics_completed boolean, media_completed boolean,
                 phone_confirmed boolean, contacts_synced_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select app.user_access_level(u.id),
         u.full_name is not null and u.username is not null and u.terms_accepted_at is not null,
         u.media_completed_at is not null,
         p.user_id is not null,
         u.contacts_synced_at
  from app.users u
  left join app.phone_identities p on p.user_id = u.id
  where u.id = app.viewer_id()
$$;

create or replace function app.viewer_has_level(p_level int)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select coalesce(app.user_access_level(app.viewer_id()) >= p_level, false) $$;

create or replace function app.session_access_level(p_session_id uuid, p_user_id uuid)
  returns int
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select app.user_access_level(s.user_id)
  from app.sessions s
  where s.id = p_session_id and s.user_id = p_user_id
    and s.revoked_at is null and s.expires_at > now()
$$;

create or replace function app.user_access_level(p_user_id uuid)
  returns int
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select case
    when u.full_name is null or u.username is null or u.terms_accepted_at is null then 1
    when p.user_id is null or u.media_completed_at is null then 2
    when u.contacts_synced_at is null then 3
    else 4
  end
  from app.users u
  left join app.phone_identities p on p.user_id = u.id
  where u.id = p_user_id
$$;

drop function app.access_level_of(text, text, timestamptz, boolean, timestamptz, timestamptz);
