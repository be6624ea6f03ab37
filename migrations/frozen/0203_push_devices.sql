-- Up Migration
-- Push devices (contract 12 "Devices"): the FCM registration tokens a user's sessions registered.
-- A token belongs to one session: registering it from another session moves it there (another
-- account on the same phone takes it over), and a device goes with its session: revoking a session
-- (logout, logout from all devices, refresh-token reuse, a merge: whatever revokes it) deletes its
-- devices in the same transaction (trigger below), deleting a session deletes them (foreign key),
-- and an expired session's devices are neither listed nor pushed to (the policy below and the push
-- worker test the session) until the hourly purge removes them (0206).
--
-- The token is never shown: no API role has a grant on it (GraphQL cannot select it either); REST
-- shows its last 8 characters. Tokens are up to 4,096 characters, more than a btree entry holds, so
-- uniqueness is on their SHA-256.

create table app.push_devices (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references app.users (id),
  session_id uuid not null references app.sessions (id) on delete cascade,
  provider text not null check (provider = 'fcm'),
  platform text not null check (platform in ('ios', 'android')),
  token text not null check (char_length(token) between 1 and 4096),
  token_hash bytea not null unique,
  token_suffix text not null generated always as (right(token, 8)) stored,
  locale text check (char_length(locale) <= 35),
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now()
);
create index push_devices_user on app.push_devices (user_id, last_seen_at desc);
create index push_devices_session on app.push_devices (session_id);

alter table app.push_devices enable row level security;
alter table app.push_devices force row level security;

-- A user sees the devices of their own live sessions (an expired session's are gone for them).
create policy push_devices_select_own on app.push_devices
  for select to app_user
  using (user_id = (select app.viewer_id()) and app.session_access_level(session_id, user_id) is not null);

-- What REST shows (contract 12), and nothing more: not the token, its hash, the session or the locale.
grant select (id, provider, platform, token_suffix, created_at, last_seen_at) on app.push_devices to app_user;

-- At most this many devices per user: registering one more forgets the one seen longest ago (each
-- device is one more message per notification).
create function app_private.push_devices_per_user() returns int language sql immutable as $$ select 10 $$;

-- POST /users/me/push-devices: registers the token for the viewer's session. Answers the record and
-- whether it is new:
--   * a token the viewer already registered (from any of their sessions): the same record, moved to
--     this session, with platform and locale updated and last_seen_at refreshed (created false);
--   * a token registered by another user: that record is deleted (its pending pushes with it: they
--     were that user's) and a new one made for the viewer (created true);
--   * otherwise a new record (created true).
-- Race-safe: a concurrent registration of the same token is waited for (the unique hash) and the
-- loop takes the branch its outcome leaves, so two registrations of one token never fail.
create function app.register_push_device(p_provider text, p_platform text, p_token text, p_locale text)
  returns table (id uuid, provider text, platform text, token_suffix text, created_at timestamptz, last_seen_at timestamptz, created boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
#variable_conflict use_column
declare
  v_viewer uuid := app.viewer_id();
  v_session uuid := app.viewer_session_id();
  v_hash bytea := sha256(convert_to(p_token, 'UTF8'));
  v_device app.push_devices;
  v_created boolean;
begin
  loop
    update app.push_devices d
      set session_id = v_session, platform = p_platform, locale = p_locale, last_seen_at = now()
      where d.token_hash = v_hash and d.user_id = v_viewer
      returning * into v_device;
    if found then
      v_created := false;
      exit;
    end if;
    delete from app.push_devices d where d.token_hash = v_hash;
    insert into app.push_devices (user_id, session_id, provider, platform, token, token_hash, locale)
      values (v_viewer, v_session, p_provider, p_platform, p_token, v_hash, p_locale)
      on conflict (token_hash) do nothing
      returning * into v_device;
    if found then
      v_created := true;
      exit;
    end if;
  end loop;
  delete from app.push_devices d
    where d.user_id = v_viewer and d.id in (
      select o.id from app.push_devices o where o.user_id = v_viewer
      order by o.last_seen_at desc, o.id offset app_private.push_devices_per_user());
  return query select v_device.id, v_device.provider, v_device.platform, v_device.token_suffix, v_device.created_at,
                      v_device.last_seen_at, v_created;
end
$$;

-- DELETE /users/me/push-devices/{id}: true when the viewer had that device.
create function app.delete_push_device(p_device_id uuid)
  returns boolean
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  with gone as (delete from app.push_devices d where d.id = p_device_id and d.user_id = app.viewer_id() returning 1)
  select exists (select from gone)
$$;

grant execute on function app.register_push_device(text, text, text, text), app.delete_push_device(uuid) to app_user;

-- A revoked session takes its devices with it, whichever path revoked it.
create function app_private.forget_revoked_session_devices() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  delete from app.push_devices d where d.session_id = new.id;
  return null;
end
$$;

create trigger sessions_forget_push_devices
  after update of revoked_at on app.sessions
  for each row when (old.revoked_at is null and new.revoked_at is not null)
  execute function app_private.forget_revoked_session_devices();

-- Down Migration
drop trigger sessions_forget_push_devices on app.sessions;
drop function app_private.forget_revoked_session_devices();
drop function app.delete_push_device(uuid);
drop function app.register_push_device(text, text, text, text);
drop function app_private.push_devices_per_user();
drop table app.push_devices;
