-- Up Migration
-- The social part of a public profile (contract section 5): counts, activity stats, the hubs the
-- user administers that the viewer may see, and the viewer's relationship to the user. Follows,
-- blocks, posts, votes and hubs each replace this function when they arrive, adding their part.
create function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint,
  out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, '[]'::jsonb, false, false, false $$;

-- Whether an asset may become the viewer's profile photo. No asset exists before the uploads
-- migration, which replaces this function with the real check (owned, completed, profile_photo).
create function app.profile_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select false $$;

grant execute on function app.profile_social(uuid) to app_anonymous;
grant execute on function app.profile_asset_usable(uuid) to app_user;

-- Down Migration
drop function app.profile_asset_usable(uuid);
drop function app.profile_social(uuid);
