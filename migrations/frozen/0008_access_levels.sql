-- Up Migration
-- Access levels (spec part 5), computed from the user row and nothing else:
--   1 anonymous: any live session
--   2 registered public profile: full name, handle and accepted terms
--   3 phone-confirmed: level 2, a verified phone, and the media step answered (with or without photo)
--   4 Hub-ready: level 3 and a recorded contacts acknowledgement (contacts_synced_at)
create function app.user_access_level(p_user_id uuid)
  returns int
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select case
    when u.full_name is null or u.username is null or u.terms_accepted_at is null then 1
    when p.user_id is null or u.media_completed_at is null then 2
    when u.contacts_synced_at is null then 3
    else 4
  end
  from app.users u
  left join app.phone_identities p on p.user_id = u.id
  where u.id = p_user_id
$$;

-- Called on every authenticated request: the access level of the session's user, or NULL when the
-- session is revoked, expired or belongs to someone else (the token is then refused with 401).
create function app.session_access_level(p_session_id uuid, p_user_id uuid)
  returns int
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select app.user_access_level(s.user_id)
  from app.sessions s
  where s.id = p_session_id and s.user_id = p_user_id
    and s.revoked_at is null and s.expires_at > now()
$$;

-- True when the viewer has at least the given level. Policies and functions use it for level gates.
create function app.viewer_has_level(p_level int)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select coalesce(app.user_access_level(app.viewer_id()) >= p_level, false) $$;

-- Onboarding progress of the viewer (contract section 4); the HTTP layer shapes it.
create function app.onboarding_status()
  returns table (access_level int, profile_basics_completed boolean, media_completed boolean,
                 phone_confirmed boolean, contacts_synced_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select app.user_access_level(u.id),
         u.full_name is not null and u.username is not null and u.terms_accepted_at is not null,
         u.media_completed_at is not null,
         p.user_id is not null,
         u.contacts_synced_at
  from app.users u
  left join app.phone_identities p on p.user_id = u.id
  where u.id = app.viewer_id()
$$;

grant execute on function app.viewer_has_level(int) to app_anonymous, app_admin;
grant execute on function app.session_access_level(uuid, uuid) to app_anonymous;
grant execute on function app.onboarding_status() to app_user;

-- Down Migration
drop function app.onboarding_status();
drop function app.viewer_has_level(int);
drop function app.session_access_level(uuid, uuid);
drop function app.user_access_level(uuid);
