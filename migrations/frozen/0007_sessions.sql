-- Up Migration
-- Sessions and refresh tokens.
-- A session is one sign-in on one device; its refresh tokens form one family. Refresh tokens are
-- opaque, stored only as SHA-256 hashes, single use, and rotated on every refresh. Presenting a
-- rotated token again revokes the whole session (reuse detection). Access tokens name the session,
-- and every request checks it is still live, so revocation takes effect at once.
create table app.sessions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references app.users (id),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index sessions_user_id on app.sessions (user_id);

create table app_private.refresh_tokens (
  token_hash bytea primary key,
  session_id uuid not null references app.sessions (id),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  rotated_at timestamptz
);
create index refresh_tokens_session_id on app_private.refresh_tokens (session_id);

-- How a session was obtained without a phone: an anonymous device, or an identity-provider subject.
create table app_private.anonymous_devices (
  device_id text primary key,
  user_id uuid not null references app.users (id)
);

create table app_private.idp_subjects (
  subject text primary key,
  user_id uuid not null references app.users (id)
);

alter table app.sessions enable row level security;
alter table app.sessions force row level security;

-- A user sees their own sessions (device list), never anyone else's.
create policy sessions_select_self on app.sessions
  for select to app_user
  using (user_id = (select app.viewer_id()));

grant select (id, user_id, created_at, expires_at, revoked_at) on app.sessions to app_user;

-- Starts a session with its first refresh token. Callers are the sign-in functions below.
create function app_private.start_session(p_user_id uuid, p_refresh_hash bytea)
  returns uuid
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_session uuid;
begin
  insert into app.sessions (user_id, expires_at)
    values (p_user_id, now() + interval '30 days')
    returning id into v_session;
  insert into app_private.refresh_tokens (token_hash, session_id, expires_at)
    values (p_refresh_hash, v_session, now() + interval '30 days');
  return v_session;
end
$$;

-- Rotates a refresh token. Returns the session's user and id, or reason 'invalid' / 'reused'.
-- The row lock makes concurrent refreshes with one token serial: the first rotates, the second
-- sees a rotated token and revokes the family, so two live tokens never come out of one.
create function app.refresh_session(p_refresh_hash bytea, p_new_refresh_hash bytea,
  out user_id uuid, out session_id uuid, out outcome text)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_token app_private.refresh_tokens;
  v_session app.sessions;
begin
  select * into v_token from app_private.refresh_tokens t where t.token_hash = p_refresh_hash for update;
  if not found then
    outcome := 'invalid';
    return;
  end if;
  select * into v_session from app.sessions s where s.id = v_token.session_id for update;
  if v_token.rotated_at is not null then
    update app.sessions s set revoked_at = coalesce(s.revoked_at, now()) where s.id = v_session.id;
    outcome := 'reused';
    return;
  end if;
  if v_session.revoked_at is not null or v_token.expires_at <= now() or v_session.expires_at <= now() then
    outcome := 'invalid';
    return;
  end if;
  update app_private.refresh_tokens t set rotated_at = now() where t.token_hash = p_refresh_hash;
  insert into app_private.refresh_tokens (token_hash, session_id, expires_at)
    values (p_new_refresh_hash, v_session.id, now() + interval '30 days');
  user_id := v_session.user_id;
  session_id := v_session.id;
  outcome := 'rotated';
end
$$;

-- Logout: revokes the session that owns the submitted refresh token when it is the caller's, or
-- every session of the caller. Returns the revoked session ids (open streams close on them).
create function app.logout(p_refresh_hash bytea, p_all_devices boolean)
  returns setof uuid
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  update app.sessions s set revoked_at = now()
  where s.user_id = app.viewer_id() and s.revoked_at is null
    and (p_all_devices or s.id = (select t.session_id from app_private.refresh_tokens t where t.token_hash = p_refresh_hash))
  returning s.id
$$;

grant execute on function app.refresh_session(bytea, bytea) to app_anonymous;
grant execute on function app.logout(bytea, boolean) to app_user;

-- Down Migration
drop function app.logout(bytea, boolean);
drop function app.refresh_session(bytea, bytea);
drop function app_private.start_session(uuid, bytea);
drop table app_private.idp_subjects;
drop table app_private.anonymous_devices;
drop table app_private.refresh_tokens;
drop table app.sessions;
