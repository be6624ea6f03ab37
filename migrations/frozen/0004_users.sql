-- Up Migration
-- Users: the public profile row. Anonymous sessions are real users too (no handle, no phone).
-- Private data lives elsewhere: phones in app.phone_identities, the Hub identity in app.hub_profiles.
create table app.users (
  id uuid primary key default gen_random_uuid(),
  username text,
  full_name text,
  bio text,
  profile_asset_id uuid,
  terms_version text,
  terms_accepted_at timestamptz,
  media_completed_at timestamptz,
  contacts_synced_at timestamptz,
  merged_into uuid references app.users (id),
  created_at timestamptz not null default now(),
  constraint users_username_format check (username ~ '^[a-z0-9_]{3,30}$'),
  constraint users_full_name_length check (char_length(full_name) between 2 and 80),
  constraint users_bio_length check (char_length(bio) <= 160)
);

-- The canonical handle is unique; this index, not any client-side check, is the authority
-- (USERNAME_TAKEN). Handles freed by an update are reusable as soon as it commits.
create unique index users_username_key on app.users (username);

-- Handles nobody may take. Availability previews and the trigger below both read this table.
create table app.reserved_handles (handle text primary key);
insert into app.reserved_handles (handle) values
  ('admin'), ('api'), ('support'), ('root'), ('me'), ('null'), ('administrator'), ('help'),
  ('system'), ('moderator'), ('staff'), ('official'), ('undefined'), ('anonymous'), ('settings');

create function app_private.users_reject_reserved_handle() returns trigger
  language plpgsql
  as $$
begin
  if new.username is not null and exists (select from app.reserved_handles where handle = new.username) then
    perform app.fail('USERNAME_TAKEN');
  end if;
  return new;
end
$$;

create trigger users_reserved_handle
  before insert or update of username on app.users
  for each row execute function app_private.users_reject_reserved_handle();

alter table app.users enable row level security;
alter table app.users force row level security;

-- Anyone may read a user who has a public profile (a handle); a user always reads their own row.
-- Block visibility is added to this policy by the users/blocks migration.
create policy users_select_public on app.users
  for select to app_anonymous
  using (username is not null or id = (select app.viewer_id()));

-- A user edits only their own row, and only the columns granted below.
create policy users_update_self on app.users
  for update to app_user
  using (id = (select app.viewer_id()))
  with check (id = (select app.viewer_id()));

-- Admin tooling reads every row.
create policy users_select_admin on app.users
  for select to app_admin
  using (true);

grant select (id, username, full_name, bio, profile_asset_id, created_at) on app.users to app_anonymous;
grant select on app.users to app_admin;
grant update (full_name, username, bio, profile_asset_id) on app.users to app_user;
grant select on app.reserved_handles to app_anonymous, app_admin;

-- Down Migration
drop table app.reserved_handles;
drop table app.users;
drop function app_private.users_reject_reserved_handle();
