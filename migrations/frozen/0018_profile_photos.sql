-- Up Migration
-- Profile photos are real now: a completed profile_photo asset owned by the viewer.
create or replace function app.profile_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (
    select from app.assets a
    where a.id = p_asset_id and a.owner_id = app.viewer_id() and a.purpose = 'profile_photo')
$$;

-- Down Migration
create or replace function app.profile_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select false $$;
