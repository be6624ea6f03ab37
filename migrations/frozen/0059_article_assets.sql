-- Up Migration
-- Assets in visible use now include the media of articles of visible posts.
create or replace function app.asset_in_visible_use(p_asset_id uuid)
  returns boolean
  language sql stable
  as $$
  select exists (select from app.users u where u.profile_asset_id = p_asset_id)
      or exists (select from app.hubs h where h.profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles hp where hp.profile_asset_id = p_asset_id)
      or exists (select from app.articles a where p_asset_id = any (a.asset_ids))
$$;

create or replace function app_private.asset_referenced(p_asset_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$
  select exists (select from app.users where profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles where profile_asset_id = p_asset_id)
      or exists (select from app.hubs where profile_asset_id = p_asset_id)
      or exists (select from app.articles where p_asset_id = any (asset_ids))
$$;

-- Down Migration
create or replace function app_private.asset_referenced(p_asset_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$
  select exists (select from app.users where profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles where profile_asset_id = p_asset_id)
      or exists (select from app.hubs where profile_asset_id = p_asset_id)
$$;
create or replace function app.asset_in_visible_use(p_asset_id uuid)
  returns boolean
  language sql stable
  as $$
  select exists (select from app.users u where u.profile_asset_id = p_asset_id)
      or exists (select from app.hubs h where h.profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles hp where hp.profile_asset_id = p_asset_id)
$$;
