-- Up Migration
-- The private Hub identity, separate from the public profile: a display name and image shown to
-- co-members only. A missing row means "use the public full name".
create table app.hub_profiles (
  user_id uuid primary key references app.users (id),
  display_name text,
  profile_asset_id uuid,
  updated_at timestamptz not null default now(),
  constraint hub_profiles_display_name_length check (char_length(display_name) between 2 and 80)
);

alter table app.hub_profiles enable row level security;
alter table app.hub_profiles force row level security;

-- The owner reads and writes their Hub identity. The hubs migrations add co-member reads.
create policy hub_profiles_select_self on app.hub_profiles
  for select to app_user
  using (user_id = (select app.viewer_id()));

create policy hub_profiles_insert_self on app.hub_profiles
  for insert to app_user
  with check (user_id = (select app.viewer_id()));

create policy hub_profiles_update_self on app.hub_profiles
  for update to app_user
  using (user_id = (select app.viewer_id()))
  with check (user_id = (select app.viewer_id()));

grant select, insert (user_id, display_name, profile_asset_id),
  update (display_name, profile_asset_id, updated_at) on app.hub_profiles to app_user;

-- Down Migration
drop table app.hub_profiles;
