-- Up Migration
-- Logout (contract section 3, amended): the submitted refresh token must belong to one of the
-- caller's sessions. Another user's token, or an unknown one, changes nothing (the endpoint still
-- answers 200), whatever logoutFromAllDevices says; before, `true` signed the caller out
-- everywhere without looking at the token. With the caller's own token: that session, or with
-- p_all_devices every session of the caller. Returns the revoked session ids.
create or replace function app.logout(p_refresh_hash bytea, p_all_devices boolean)
  returns setof uuid
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  with own as (
    select t.session_id
    from app_private.refresh_tokens t
    join app.sessions o on o.id = t.session_id
    where t.token_hash = p_refresh_hash and o.user_id = app.viewer_id()
  )
  update app.sessions s set revoked_at = now()
  from own
  where s.user_id = app.viewer_id() and s.revoked_at is null
    and (p_all_devices or s.id = own.session_id)
  returning s.id
$$;

-- Down Migration
create or replace function app.logout(p_refresh_hash bytea, p_all_devices boolean)
  returns setof uuid
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  update app.sessions s set revoked_at = now()
  where s.user_id = app.viewer_id() and s.revoked_at is null
    and (p_all_devices or s.id = (select t.session_id from app_private.refresh_tokens t where t.token_hash = p_refresh_hash))
  returning s.id
$$;
