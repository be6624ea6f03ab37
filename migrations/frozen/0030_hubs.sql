-- Up Migration
-- Hubs and their active members (spec 2.5, 4.6; contract section 8). Membership rows hold active
-- members only: invitations and join requests have their own tables (0031).
create type app.hub_role as enum ('member', 'admin', 'super_admin');

create table app.hubs (
  id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(name) between 3 and 60),
  description text not null default '' check (char_length(description) <= 1000),
  profile_asset_id uuid not null references app.assets (id),
  -- Stored lowercase: the link is reserved case-insensitively.
  custom_link text unique check (custom_link ~ '^[a-z0-9_-]{3,40}$'),
  is_recommended boolean not null default false,
  created_by uuid not null references app.users (id),
  created_at timestamptz not null default now(),
  -- Kept by the membership trigger below; exact under concurrency.
  member_count int not null default 0 check (member_count >= 0),
  last_activity_at timestamptz not null default now()
);
create index hubs_recommended on app.hubs (name) where is_recommended;
create index hubs_profile_asset_id on app.hubs (profile_asset_id);

create table app.hub_memberships (
  hub_id uuid not null references app.hubs (id),
  user_id uuid not null references app.users (id),
  role app.hub_role not null default 'member',
  joined_at timestamptz not null default now(),
  -- Notification setting of this member for this hub (spec 6.3 rule 1).
  content_muted boolean not null default false,
  primary key (hub_id, user_id)
);
create index hub_memberships_user_id on app.hub_memberships (user_id);
create index hub_memberships_admins on app.hub_memberships (hub_id) where role in ('admin', 'super_admin');

-- Who did something in a hub, and when last (activeUsers24h). Transitions, posts, votes and
-- discussion messages touch it through app_private.touch_hub_activity.
create table app.hub_activity (
  hub_id uuid not null references app.hubs (id),
  user_id uuid not null references app.users (id),
  last_active_at timestamptz not null default now(),
  primary key (hub_id, user_id)
);
create index hub_activity_recent on app.hub_activity (hub_id, last_active_at);

create function app_private.touch_hub_activity(p_hub_id uuid, p_user_id uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  insert into app.hub_activity (hub_id, user_id) values (p_hub_id, p_user_id)
    on conflict (hub_id, user_id) do update set last_active_at = now();
  update app.hubs set last_activity_at = now() where id = p_hub_id;
$$;

create function app_private.hub_member_count() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    update app.hubs set member_count = member_count + 1 where id = new.hub_id;
  else
    update app.hubs set member_count = member_count - 1 where id = old.hub_id;
  end if;
  return null;
end
$$;

create trigger hub_memberships_count
  after insert or delete on app.hub_memberships
  for each row execute function app_private.hub_member_count();

-- Membership helpers for policies. Each returns the viewer's set once per statement when called
-- as `(select ...)`. Hub surfaces need a Hub-ready viewer (level 4): below it, no membership counts.
create function app.viewer_active_hub_ids()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
  where m.user_id = app.viewer_id() and app.viewer_has_level(4)
$$;

create function app.viewer_admin_hub_ids()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
  where m.user_id = app.viewer_id() and m.role in ('admin', 'super_admin') and app.viewer_has_level(4)
$$;

-- Users who share at least one active membership with a Hub-ready viewer (the viewer included).
create function app.viewer_co_member_ids()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(distinct other.user_id), '{}')
  from app.hub_memberships mine
  join app.hub_memberships other on other.hub_id = mine.hub_id
  where mine.user_id = app.viewer_id() and app.viewer_has_level(4)
$$;

-- Whether a Hub-ready user is an active member of a hub. The one definition of "active member"
-- used by notification visibility, votes and feeds.
create function app.is_active_member(p_hub_id uuid, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = p_user_id)
     and coalesce(app.user_access_level(p_user_id) >= 4, false)
$$;

alter table app.hubs enable row level security;
alter table app.hubs force row level security;
alter table app.hub_memberships enable row level security;
alter table app.hub_memberships force row level security;
alter table app.hub_activity enable row level security;
alter table app.hub_activity force row level security;

-- A hub's public face (name, description, image, link, counts) is visible to every signed-in user:
-- search, invite-link previews and profiles show it. Membership, phones and content are not.
create policy hubs_select_signed_in on app.hubs
  for select to app_user
  using (true);

-- Memberships: the viewer's own, and every membership of a hub the viewer is related to (active,
-- invited or pending): members see each other; invited and pending users get the dark preview.
-- The related-hub helper is defined with the invitation tables (0031) and replaces this policy.
create policy hub_memberships_select_own on app.hub_memberships
  for select to app_user
  using (user_id = (select app.viewer_id()));

create policy hubs_select_admin on app.hubs for select to app_admin using (true);
create policy hub_memberships_select_admin on app.hub_memberships for select to app_admin using (true);

-- Every change goes through the stored functions of 0032; internal tooling sets the
-- recommended flag (GET /search/hubs with an empty q lists recommended hubs).
create policy hubs_update_recommended_admin on app.hubs for update to app_admin using (true) with check (true);

grant select on app.hubs to app_user, app_admin;
grant select on app.hub_memberships to app_user, app_admin;
grant update (is_recommended) on app.hubs to app_admin;
grant execute on function app.viewer_active_hub_ids(), app.viewer_admin_hub_ids(), app.viewer_co_member_ids(),
  app.is_active_member(uuid, uuid) to app_user, app_admin;
-- hub_activity: read only through app.hub_active_users (below); no API role reads the table.

-- activeUsers24h of a hub.
create function app.hub_active_users(p_hub_id uuid)
  returns int
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select count(*)::int from app.hub_activity a
  where a.hub_id = p_hub_id and a.last_active_at > now() - interval '24 hours'
$$;

grant execute on function app.hub_active_users(uuid) to app_user, app_admin;

-- Down Migration
drop function app.hub_active_users(uuid);
drop table app.hub_activity;
drop table app.hub_memberships cascade;
drop table app.hubs cascade;
drop function app.is_active_member(uuid, uuid);
drop function app.viewer_co_member_ids();
drop function app.viewer_admin_hub_ids();
drop function app.viewer_active_hub_ids();
drop function app_private.hub_member_count();
drop function app_private.touch_hub_activity(uuid, uuid);
drop type app.hub_role;
