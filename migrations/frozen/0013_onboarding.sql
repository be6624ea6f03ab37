-- Up Migration
-- Onboarding transitions (spec 4.2, contract section 4). Each one changes the viewer's own row.

-- Raises the 403 code of the first missing access level (contract section 2).
create function app.require_level(p_level int)
  returns void
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
declare
  v_level int := coalesce(app.user_access_level(app.viewer_id()), 0);
begin
  if v_level >= p_level then
    return;
  end if;
  perform app.fail(case greatest(v_level + 1, 2)
    when 2 then 'PROFILE_BASICS_REQUIRED'
    when 3 then 'PHONE_VERIFICATION_REQUIRED'
    else 'HUB_READINESS_REQUIRED' end);
end
$$;

-- Profile basics: name, canonical handle and accepted terms. Reaches level 2.
create function app.complete_profile_basics(p_full_name text, p_username text, p_terms_version text)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  update app.users
    set full_name = p_full_name, username = p_username,
        terms_version = p_terms_version, terms_accepted_at = coalesce(terms_accepted_at, now())
    where id = app.viewer_id();
end
$$;

-- The media step, answered with or without a photo. Returns false (and changes nothing) when the
-- photo is not an asset the viewer may use as a profile photo.
create function app.complete_media(p_profile_asset_id uuid)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_profile_asset_id is not null and not app.profile_asset_usable(p_profile_asset_id) then
    return false;
  end if;
  update app.users
    set media_completed_at = coalesce(media_completed_at, now()),
        profile_asset_id = coalesce(p_profile_asset_id, profile_asset_id)
    where id = app.viewer_id();
  return true;
end
$$;

-- The one-time contacts acknowledgement. Needs level 3; later OS permission changes never clear it.
create function app.acknowledge_contacts()
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.require_level(3);
  update app.users set contacts_synced_at = coalesce(contacts_synced_at, now()) where id = app.viewer_id();
end
$$;

grant execute on function app.require_level(int) to app_anonymous;
grant execute on function app.complete_profile_basics(text, text, text), app.complete_media(uuid),
  app.acknowledge_contacts() to app_user;

-- Down Migration
drop function app.acknowledge_contacts();
drop function app.complete_media(uuid);
drop function app.complete_profile_basics(text, text, text);
drop function app.require_level(int);
