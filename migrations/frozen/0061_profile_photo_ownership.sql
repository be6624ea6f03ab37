-- Up Migration
-- A profile photo (public profile or Hub identity) must be a completed profile_photo asset of the
-- user whose row it is. The API roles may write profile_asset_id directly (column grants on
-- app.users and app.hub_profiles), so the rule is enforced on every write of the column, not only
-- by the REST handlers that ask app.profile_asset_usable first for a field message.

-- The rule, for any user; app.profile_asset_usable (0018) becomes its form for the viewer.
create function app.is_profile_photo_of(p_asset_id uuid, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (
    select from app.assets a where a.id = p_asset_id and a.owner_id = p_user_id and a.purpose = 'profile_photo')
$$;

create or replace function app.profile_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select app.is_profile_photo_of(p_asset_id, app.viewer_id()) $$;

-- TG_ARGV[0] names the column holding the row's user (id on users, user_id on hub_profiles).
create function app_private.check_profile_asset() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if new.profile_asset_id is not null
     and (tg_op = 'INSERT' or new.profile_asset_id is distinct from old.profile_asset_id)
     and not app.is_profile_photo_of(new.profile_asset_id, (to_jsonb(new) ->> tg_argv[0])::uuid) then
    perform app.fail('VALIDATION_FAILED');
  end if;
  return new;
end
$$;

create trigger users_check_profile_asset
  before update of profile_asset_id on app.users
  for each row execute function app_private.check_profile_asset('id');

create trigger hub_profiles_check_profile_asset
  before insert or update of profile_asset_id on app.hub_profiles
  for each row execute function app_private.check_profile_asset('user_id');

-- Down Migration
drop trigger hub_profiles_check_profile_asset on app.hub_profiles;
drop trigger users_check_profile_asset on app.users;
drop function app_private.check_profile_asset();
create or replace function app.profile_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (
    select from app.assets a
    where a.id = p_asset_id and a.owner_id = app.viewer_id() and a.purpose = 'profile_photo')
$$;
drop function app.is_profile_photo_of(uuid, uuid);
