-- Up Migration
-- The level, session, block, membership and notification-visibility rules as inlinable SQL
-- (issue 12: the policy helpers cost no more than their bodies).
--
-- Before, each rule lived in a `security definer` PL/pgSQL helper (0105): its plan is cached, but
-- every call still pays the function call, the search_path switch, an SPI statement with its own
-- executor start and plan-cache check. A vote called five to seven of them (session, block list,
-- membership and level per hub), and live delivery called app.session_access_level and
-- app.notification_visible_to for every row of every batch (PostgreSQL 15: 60-190 µs per call,
-- most of a batch's 100 µs per row).
--
-- Now each rule is written once, here, as a plain `language sql stable` function in app_private
-- (no security definer, no SET clause: the planner inlines it into the statement that uses it, so
-- a caller that is itself security definer pays only the rule's index probes). The app.* helpers
-- keep their names, signatures, grants and attributes and become doors onto these rules for
-- callers that need a function call (row-level policies, other roles): each is one expression over
-- the rule. app_private is not usable by app_user or app_anonymous, and these functions are
-- executable by their owner only, so the rules run only inside the owner's security-definer
-- functions, under the search_path those functions set (every name below is schema-qualified).
--
-- Set-returning rules (returns table) are inlined where they stand in a FROM clause; the scalar
-- rule (notification visibility) is inlined as an expression.

-- A user's access level (contract section 2) over the columns it reads: the level rule is
-- app.access_level_of (0105); this is how its inputs are read. No row: no such user.
create function app_private.user_level(p_user_id uuid)
  returns table (level int)
  language sql stable
  as $$
  select app.access_level_of(u.full_name, u.username, u.terms_accepted_at, p.user_id is not null, u.media_completed_at, u.contacts_synced_at)
  from app.users u
  left join app.phone_identities p on p.user_id = u.id
  where u.id = p_user_id
$$;

-- The level of a live session: the session is this user's, not revoked and not expired. No row:
-- the session may not act (401).
create function app_private.session_level(p_session_id uuid, p_user_id uuid)
  returns table (level int)
  language sql stable
  as $$
  select l.level
  from app.sessions s
  cross join lateral app_private.user_level(s.user_id) l
  where s.id = p_session_id and s.user_id = p_user_id and s.revoked_at is null and s.expires_at > now()
$$;

-- The users p_user_id has blocked or is blocked by (the block rule, 0021/0150), as one array.
create function app_private.block_list(p_user_id uuid)
  returns table (ids uuid[])
  language sql stable
  as $$
  select coalesce(array_agg(other), '{}') from (
    select b.blocked_id as other from app.blocks b where b.blocker_id = p_user_id
    union
    select b.blocker_id from app.blocks b where b.blocked_id = p_user_id) pairs
$$;

-- Active membership (0030/0033): a membership row, and the member is Hub-ready (level 4).
create function app_private.active_member(p_hub_id uuid, p_user_id uuid)
  returns table (active boolean)
  language sql stable
  as $$
  select exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = p_user_id)
     and coalesce((select l.level from app_private.user_level(p_user_id) l) >= 4, false)
$$;

-- Whether p_user_id may see the notification now (0019, widened by 0033 and 0056): their own row,
-- and for a hub row an active membership of that hub, for a repost row the repost still visible.
-- A scalar expression (no sub-select), so it is inlined where it is used; the hub and repost
-- branches call their helpers only for such rows.
create function app_private.notification_visible(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable
  as $$
  select p_notification.recipient_id = p_user_id
     and case
           when p_notification.hub_id is not null then app.is_active_member(p_notification.hub_id, p_user_id)
           when p_notification.type = 'post_reposted' then app_private.repost_row_visible(p_notification.post_id, p_user_id)
           else true
         end
$$;

revoke all on function app_private.user_level(uuid), app_private.session_level(uuid, uuid), app_private.block_list(uuid),
  app_private.active_member(uuid, uuid), app_private.notification_visible(app.notifications, uuid) from public;

-- The doors: same names, signatures and grants; each is the rule above. PL/pgSQL, so the statement
-- holding the inlined rule keeps its plan for the connection.
create or replace function app.user_access_level(p_user_id uuid)
  returns int
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return (select l.level from app_private.user_level(p_user_id) l); end $$;

create or replace function app.session_access_level(p_session_id uuid, p_user_id uuid)
  returns int
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return (select l.level from app_private.session_level(p_session_id, p_user_id) l); end $$;

create or replace function app.user_block_list(p_user_id uuid)
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return (select b.ids from app_private.block_list(p_user_id) b); end $$;

create or replace function app.is_active_member(p_hub_id uuid, p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return (select m.active from app_private.active_member(p_hub_id, p_user_id) m); end $$;

-- Used by the notifications policy for every row it filters: a PL/pgSQL simple expression (no
-- statement of its own per call) instead of a SQL function planned and started per call.
create or replace function app.notification_visible_to(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return app_private.notification_visible(p_notification, p_user_id); end $$;

-- Down Migration
-- The helpers as 0105 (levels, membership), 0100 (block list) and 0056 (notification visibility) left them.
create or replace function app.notification_visible_to(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select p_notification.recipient_id = p_user_id
     and case
           when p_notification.hub_id is not null then app.is_active_member(p_notification.hub_id, p_user_id)
           when p_notification.type = 'post_reposted' then app_private.repost_row_visible(p_notification.post_id, p_user_id)
           else true
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

create or replace function app.user_block_list(p_user_id uuid)
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (
    select coalesce(array_agg(other), '{}') from (
      select b.blocked_id as other from app.blocks b where b.blocker_id = p_user_id
      union
      select b.blocker_id from app.blocks b where b.blocked_id = p_user_id) pairs);
end
$$;

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

drop function app_private.notification_visible(app.notifications, uuid);
drop function app_private.active_member(uuid, uuid);
drop function app_private.block_list(uuid);
drop function app_private.session_level(uuid, uuid);
drop function app_private.user_level(uuid);
