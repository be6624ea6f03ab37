-- Sessions and sign-in: who the viewer is (app.viewer_id), the session check and the access-level ladder
-- (app.session_access_level, app.session_gate, app.require_level), OTP sign-in, refresh, logout and the rate limits.
-- Identity of the current request. The API sets both with set_config(..., true) at the start of each
-- transaction (db/viewer.ts); nothing else passes identity to SQL. After a transaction the settings
-- read back as '' rather than NULL, hence nullif.
create or replace function app.viewer_id()
  returns uuid
  language sql
  stable parallel safe
  as $$
  select
    nullif(current_setting('app.user_id', true), '')::uuid
$$;

comment on function app.viewer_id() is
  'The viewer of the transaction (app.user_id, set by db/viewer.ts with set_config(..., true)); null when anonymous. Read by every policy and function that acts for the viewer.';

grant execute on function app.viewer_id() to app_anonymous;

grant execute on function app.viewer_id() to app_admin;

create or replace function app.viewer_session_id()
  returns uuid
  language sql
  stable parallel safe
  as $$
  select
    nullif(current_setting('app.session_id', true), '')::uuid
$$;

comment on function app.viewer_session_id() is
  'The session of the transaction (app.session_id, set by db/viewer.ts); null when anonymous. Read by the session check (app.viewer_session_gate) and by what acts on the current session (logout, push devices).';

grant execute on function app.viewer_session_id() to app_anonymous;

-- The suspension rule: suspended from suspended_at until suspended_until (none: until lifted).
create or replace function app_private.suspended_now(
  p_state app_private.account_states
)
  returns boolean
  language sql
  stable
  as $$
  select
    p_state.suspended_at is not null
    and(p_state.suspended_until is null
      or p_state.suspended_until > now())
$$;

comment on function app_private.suspended_now(app_private.account_states) is
  'Whether an account state is a suspension in force now. Used by app_private.start_session (sign-in) and app.refresh_session (refresh), both ACCOUNT_SUSPENDED.';

-- Every sign-in goes through start_session (OTP, identity provider, anonymous session): a suspended
-- account is refused (ACCOUNT_SUSPENDED; a suspension past its end is lifted here), and an account
-- whose deletion was requested is restored: the purge job is cancelled and the transaction's
-- app.restored setting tells the session payload (user.restored: true).
create or replace function app_private.start_session(
  p_user_id uuid,
  p_refresh_hash bytea
)
  returns uuid
  language plpgsql
  set search_path = pg_catalog
  as $$
declare
  v_session uuid;
  v_state app_private.account_states;
begin
  select * into v_state from app_private.account_states s where s.user_id = p_user_id for update;
  if found then
    if v_state.purge_started_at is not null then
      -- A sign-in that found the account just before its purge took its identities away.
      perform app.fail('UNAUTHORIZED');
    end if;
    if app_private.suspended_now(v_state) then
      perform app.fail('ACCOUNT_SUSPENDED');
    end if;
    update app_private.account_states s
      set suspended_at = null, suspended_until = null, suspension_reason = null, deletion_requested_at = null, purge_after = null
      where s.user_id = p_user_id;
    if v_state.deletion_requested_at is not null then
      perform graphile_worker.remove_job('purge_account:' || p_user_id);
      perform set_config('app.restored', 'true', true);
    end if;
    perform app_private.show_account(p_user_id);
  end if;
  insert into app.sessions (user_id, expires_at)
    values (p_user_id, now() + interval '30 days')
    returning id into v_session;
  insert into app_private.refresh_tokens (token_hash, session_id, expires_at)
    values (p_refresh_hash, v_session, now() + interval '30 days');
  return v_session;
end
$$;

comment on function app_private.start_session(uuid, bytea) is
  'Every sign-in''s session (OTP, identity provider, anonymous): refuses a suspended account (ACCOUNT_SUSPENDED), restores one whose deletion was requested, stores the refresh token''s hash. Called by app.verify_otp (POST /auth/otp/verify), app.idp_session (POST /auth/idp/token) and app.anonymous_session (POST /auth/anonymous/session).';

-- Rotates a refresh token: the old one stays valid for a grace window, and its reuse after that
-- revokes the session. A suspended account gets 403 ACCOUNT_SUSPENDED.
create or replace function app.refresh_session(
  p_refresh_hash bytea,
  p_new_refresh_hash bytea,
  out user_id uuid,
  out session_id uuid,
  out outcome text,
  out issued_at timestamptz
)
  returns record
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_token app_private.refresh_tokens;
  v_session app.sessions;
begin
  -- The row lock makes concurrent refreshes of one token serial: the first rotates, the others
  -- then see the rotation.
  select * into v_token from app_private.refresh_tokens t where t.token_hash = p_refresh_hash for update;
  if not found then
    outcome := 'invalid';
    return;
  end if;
  select * into v_session from app.sessions s where s.id = v_token.session_id for update;
  -- A suspended account's refresh tokens answer 403 ACCOUNT_SUSPENDED, not 401 (contract 14).
  if exists (select from app_private.account_states a where a.user_id = v_session.user_id and app_private.suspended_now(a)) then
    perform app.fail('ACCOUNT_SUSPENDED');
  end if;
  if v_token.rotated_at is not null then
    -- clock_timestamp(): a refresh that waited for the lock measures the window from now, not from
    -- its transaction's start.
    if v_token.rotated_at > clock_timestamp() - interval '10 seconds'
       and v_session.revoked_at is null and v_session.expires_at > now()
       and exists (select from app_private.refresh_tokens n
                   where n.token_hash = p_new_refresh_hash and n.session_id = v_session.id
                     and n.rotated_at is null and n.expires_at > now()) then
      user_id := v_session.user_id;
      session_id := v_session.id;
      issued_at := v_token.rotated_at;
      outcome := 'rotated';
      return;
    end if;
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
  issued_at := now();
  outcome := 'rotated';
end
$$;

comment on function app.refresh_session(bytea, bytea) is
  'POST /auth/session/refresh: rotates a refresh token (the old one is kept for a grace window; reuse after it revokes the session); a suspended account gets ACCOUNT_SUSPENDED.';

grant execute on function app.refresh_session(bytea, bytea) to app_anonymous;

-- Logout (contract section 3, amended): the submitted refresh token must belong to one of the
-- caller's sessions. Another user's token, or an unknown one, changes nothing (the endpoint still
-- answers 200), whatever logoutFromAllDevices says; before, `true` signed the caller out
-- everywhere without looking at the token. With the caller's own token: that session, or with
-- p_all_devices every session of the caller. Returns the revoked session ids.
create or replace function app.logout(
  p_refresh_hash bytea,
  p_all_devices boolean
)
  returns setof uuid
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  with own as(
    select
      t.session_id
    from
      app_private.refresh_tokens t
      join app.sessions o on o.id = t.session_id
    where
      t.token_hash = p_refresh_hash
      and o.user_id = app.viewer_id())
  update
    app.sessions s
  set
    revoked_at = now()
  from
    own
  where
    s.user_id = app.viewer_id()
    and s.revoked_at is null
    and(p_all_devices
      or s.id = own.session_id)
  returning
    s.id
$$;

comment on function app.logout(bytea, boolean) is
  'POST /auth/logout: revokes the session of the submitted refresh token when it is one of the caller''s, or every session of the caller with p_all_devices; answers the revoked session ids (their open streams are closed).';

grant execute on function app.logout(bytea, boolean) to app_user;

-- The doors: same names, signatures and grants; each applies a rule of this file
-- (app_private.user_level, session_level). PL/pgSQL, so the statement
-- holding the inlined rule keeps its plan for the connection.
create or replace function app.user_access_level(
  p_user_id uuid
)
  returns int
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return (select l.level from app_private.user_level(p_user_id) l); end $$;

comment on function app.user_access_level(uuid) is
  'A user''s access level (contract section 2): app_private.user_level behind a PL/pgSQL door whose plan stays per connection. Used by app.viewer_has_level, app.require_level and app.session_user.';

create or replace function app.session_access_level(
  p_session_id uuid,
  p_user_id uuid
)
  returns int
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return (select l.level from app_private.session_level(p_session_id, p_user_id) l); end $$;

comment on function app.session_access_level(uuid, uuid) is
  'A live session''s access level, null when the session may not act (revoked, expired, another user''s): app_private.session_level behind a door. The session check of every signed-in request (app.viewer_session_gate), the notification stream''s session checks (GET /notifications/stream) and internal GraphQL''s.';

grant execute on function app.session_access_level(uuid, uuid) to app_anonymous;

create or replace function app.viewer_has_level(
  p_level int
)
  returns boolean
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return coalesce(app.user_access_level(app.viewer_id()) >= p_level, false); end $$;

comment on function app.viewer_has_level(integer) is
  'Whether the viewer''s account is at a level: used by policies and readers that show more to a user at level 4 (hub membership lists, feeds).';

grant execute on function app.viewer_has_level(integer) to app_anonymous;

-- Issues a code for a phone. Returns 0 when the code was stored, or the
-- seconds to wait: while the previous code is younger than 60 s, or when the phone already got 10
-- codes in the last 24 hours (until the oldest of them leaves the window). A request refused by the
-- 60 s rule issues no code and does not count. The advisory lock serialises requests for one phone.
create or replace function app.request_otp(
  p_phone text,
  p_code_hash bytea
)
  returns int
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_created timestamptz;
  v_wait int;
begin
  perform pg_advisory_xact_lock(hashtextextended('otp_phone:' || p_phone, 0));
  select o.created_at into v_created from app_private.otp_codes o where o.phone_e164 = p_phone;
  if found and v_created > now() - interval '60 seconds' then
    return greatest(1, ceil(60 - extract(epoch from now() - v_created)))::int;
  end if;
  v_wait := app_private.consume_sliding_limit('phone_codes:' || p_phone, 10, interval '24 hours');
  if v_wait > 0 then
    return v_wait;
  end if;
  insert into app_private.otp_codes as o (phone_e164, code_hash, expires_at)
    values (p_phone, p_code_hash, now() + interval '300 seconds')
    on conflict (phone_e164) do update
      set code_hash = excluded.code_hash, created_at = now(), expires_at = excluded.expires_at, failed_attempts = 0;
  return 0;
end
$$;

comment on function app.request_otp(text, bytea) is
  'POST /auth/otp/request: stores a new code''s hash for a phone, or answers the seconds to wait (60 s between codes, 10 codes a day per phone).';

grant execute on function app.request_otp(text, bytea) to app_anonymous;

-- Signing in one new phone twice at once (two identity-provider phone tokens, or a phoneless user
-- verifying two phones at once) read "no identity" twice and the second insert broke
-- phone_identities' keys (500). One transaction at a time signs in a given phone, and one at a
-- time attaches a phone to a given caller: transaction advisory locks, the caller's first, then the
-- phone's (never the other way round, so no two sign-ins wait on each other in a cycle). The next
-- statement sees what the previous holder committed, so the second answers as a second sign-in
-- does.
create or replace function app_private.sign_in_phone(
  p_phone text
)
  returns uuid
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_caller uuid := app.viewer_id();
  v_target uuid;
  v_caller_is_phoneless boolean;
begin
  if v_caller is not null then
    perform pg_advisory_xact_lock(hashtextextended('phone_sign_in_caller:' || v_caller, 0));
  end if;
  perform pg_advisory_xact_lock(hashtextextended('phone_sign_in:' || p_phone, 0));
  select p.user_id into v_target from app.phone_identities p where p.phone_e164 = p_phone;
  v_caller_is_phoneless := v_caller is not null
    and not exists (select from app.phone_identities p where p.user_id = v_caller)
    and exists (select from app.users u where u.id = v_caller and u.merged_into is null);
  if v_caller_is_phoneless and v_target is null then
    insert into app.phone_identities (user_id, phone_e164) values (v_caller, p_phone);
    return v_caller;
  end if;
  if v_caller_is_phoneless and v_target <> v_caller then
    perform app_private.merge_user(v_caller, v_target);
    return v_target;
  end if;
  if v_target is null then
    insert into app.users default values returning id into v_target;
    insert into app.phone_identities (user_id, phone_e164) values (v_target, p_phone);
  end if;
  return v_target;
end
$$;

comment on function app_private.sign_in_phone(text) is
  'The user of a phone at sign-in: its identity, or a new user, or the caller''s account gaining the phone (an anonymous or phoneless caller upgraded or merged), one phone and one caller at a time (advisory locks). Called by app.verify_otp (POST /auth/otp/verify) and app.idp_session (POST /auth/idp/token).';

-- Verifies a code. outcome: 'ok' (session started), 'invalid' (wrong, expired, replaced or unknown:
-- one answer for all), or 'locked' (5 wrong attempts burned the code; retry_after says when a new
-- one may be requested). Wrong attempts are counted and committed: this returns, it does not raise.
create or replace function app.verify_otp(
  p_phone text,
  p_code_hash bytea,
  p_refresh_hash bytea,
  out outcome text,
  out retry_after int,
  out user_id uuid,
  out session_id uuid
)
language plpgsql
volatile
security definer
set search_path = pg_catalog
as $$
declare
  v_code app_private.otp_codes;
begin
  select * into v_code from app_private.otp_codes o where o.phone_e164 = p_phone for update;
  if found and v_code.failed_attempts >= 5 then
    outcome := 'locked';
    retry_after := greatest(1, ceil(60 - extract(epoch from now() - v_code.created_at)))::int;
    return;
  end if;
  if not found or v_code.expires_at <= now() then
    outcome := 'invalid';
    return;
  end if;
  if v_code.code_hash <> p_code_hash then
    update app_private.otp_codes o set failed_attempts = o.failed_attempts + 1 where o.phone_e164 = p_phone;
    outcome := 'invalid';
    return;
  end if;
  delete from app_private.otp_codes o where o.phone_e164 = p_phone;
  user_id := app_private.sign_in_phone(p_phone);
  session_id := app_private.start_session(user_id, p_refresh_hash);
  outcome := 'ok';
end
$$;

comment on function app.verify_otp(text, bytea, bytea) is
  'POST /auth/otp/verify: checks a code (wrong attempts counted and committed; 5 burn it) and on success signs the phone in and starts a session.';

grant execute on function app.verify_otp(text, bytea, bytea) to app_anonymous;

-- An anonymous session never brings back a deleted anonymous account: the device gets a new one
-- (the deleted one is purged on schedule).
create or replace function app.anonymous_session(
  p_device_id text,
  p_refresh_hash bytea,
  out user_id uuid,
  out session_id uuid
)
  returns record
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('anonymous_device:' || p_device_id, 0));
  select d.user_id into user_id
  from app_private.anonymous_devices d
  join app.users u on u.id = d.user_id
  where d.device_id = p_device_id and u.merged_into is null
    and not exists (select from app.phone_identities p where p.user_id = d.user_id)
    and not exists (select from app_private.account_states s where s.user_id = d.user_id and s.deletion_requested_at is not null);
  if user_id is null then
    insert into app.users default values returning id into user_id;
    insert into app_private.anonymous_devices (device_id, user_id) values (p_device_id, user_id)
      on conflict (device_id) do update set user_id = excluded.user_id;
  end if;
  session_id := app_private.start_session(user_id, p_refresh_hash);
end
$$;

comment on function app.anonymous_session(text, bytea) is
  'POST /auth/anonymous/session: the anonymous user of an app install (a new one when the device''s was deleted) and a new session.';

grant execute on function app.anonymous_session(text, bytea) to app_anonymous;

-- Identity-provider sign-in after the API verified the ID token. A phone-provider token signs in
-- the phone identity (with the same upgrade/merge rule as OTP); an anonymous-provider token maps
-- its subject to one anonymous user.
create or replace function app.idp_session(
  p_subject text,
  p_phone text,
  p_refresh_hash bytea,
  out user_id uuid,
  out session_id uuid
)
language plpgsql
volatile
security definer
set search_path = pg_catalog
as $$
begin
  if p_phone is not null then
    user_id := app_private.sign_in_phone(p_phone);
  else
    perform pg_advisory_xact_lock(hashtextextended('idp_subject:' || p_subject, 0));
    select s.user_id into user_id from app_private.idp_subjects s where s.subject = p_subject;
    if user_id is null then
      insert into app.users default values returning id into user_id;
      insert into app_private.idp_subjects (subject, user_id) values (p_subject, user_id);
    end if;
  end if;
  session_id := app_private.start_session(user_id, p_refresh_hash);
end
$$;

comment on function app.idp_session(text, text, bytea) is
  'POST /auth/idp/token: a session for an identity-provider subject the API verified: a phone token signs in the phone (as OTP does), an anonymous one maps its subject to one anonymous user.';

grant execute on function app.idp_session(text, text, bytea) to app_anonymous;

-- The session payload's user block, for the viewer the API just signed in.
create or replace function app.session_user (
  out id uuid,
  out is_anonymous boolean,
  out phone_verified boolean,
  out access_level int
)
language sql
stable
security definer
set search_path = pg_catalog
as $$
  select
    u.id,
    p.user_id is null,
    p.user_id is not null,
    app.user_access_level(u.id)
  from
    app.users u
  left join app.phone_identities p on p.user_id = u.id
where
  u.id = app.viewer_id()
$$;

comment on function app.session_user() is
  'The user block of the session payload (id, anonymous, phone verified, access level) for the viewer just signed in: the answers of the sign-in endpoints (server/auth/session.ts).';

grant execute on function app.session_user() to app_anonymous;

-- Counts one hit for the viewer in a fixed-window bucket, and answers what the RateLimit headers
-- say (server/http/rate-limit-headers.ts): wait 0 when allowed, else the seconds until the window
-- ends (the Retry-After of a 429 RATE_LIMITED); the hits left in the window after this one, and
-- the seconds until it ends.
create or replace function app.take_rate_limit(
  p_bucket text,
  p_limit int,
  p_window_seconds int,
  out wait int,
  out rate_limit text,
  out quota int,
  out window_seconds int,
  out remaining int,
  out reset_seconds int
)
  returns record
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_row app_private.rate_limits;
  v_window interval := make_interval(secs => p_window_seconds);
begin
  insert into app_private.rate_limits as r (key, window_started_at, hits)
    values (p_bucket || ':' || app.viewer_id(), now(), 1)
    on conflict (key) do update
      set hits = case when r.window_started_at <= now() - v_window then 1 else r.hits + 1 end,
          window_started_at = case when r.window_started_at <= now() - v_window then now() else r.window_started_at end
    returning r.* into v_row;
  rate_limit := p_bucket;
  quota := p_limit;
  window_seconds := p_window_seconds;
  remaining := greatest(0, p_limit - v_row.hits);
  reset_seconds := greatest(1, ceil(extract(epoch from v_row.window_started_at + v_window - now())))::int;
  wait := case when v_row.hits <= p_limit then 0 else reset_seconds end;
end
$$;

comment on function app.take_rate_limit(text, integer, integer) is
  'Counts one hit of the viewer in a fixed-window bucket: wait 0 when allowed, else the seconds to wait (429 RATE_LIMITED with Retry-After), and the hits left and seconds until the window ends (the RateLimit headers). Used by POST /users/handles/availability (server/users/routes.ts).';

grant execute on function app.take_rate_limit(text, integer, integer) to app_user;

-- The wait alone (the release before the RateLimit headers calls this).
create or replace function app.consume_rate_limit(
  p_bucket text,
  p_limit int,
  p_window_seconds int
)
  returns int
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    wait
  from
    app.take_rate_limit(p_bucket, p_limit, p_window_seconds)
$$;

comment on function app.consume_rate_limit(text, integer, integer) is
  'Counts one hit of the viewer in a fixed-window bucket; 0 when allowed, else the seconds to wait: app.take_rate_limit''s wait (kept for the previous release).';

grant execute on function app.consume_rate_limit(text, integer, integer) to app_user;

-- Raises the 403 code of the first missing access level (contract section 2).
create or replace function app.require_level(
  p_level int
)
  returns void
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_level int := coalesce(app.user_access_level(app.viewer_id()), 0);
begin
  perform app.session_gate(v_level, p_level);
end
$$;

comment on function app.require_level(integer) is
  'Raises the 403 code of the first access level the viewer lacks below p_level (contract section 2), through app.session_gate (the viewer''s level, 0 without a user). Called first by the write functions of every domain and by internal GraphQL''s mutations.';

grant execute on function app.require_level(integer) to app_anonymous;

-- Housekeeping: expired codes, refresh tokens of sessions over for a day, finished rate-limit
-- windows, and limit keys with no hit in the last 24 hours (the longest window).
create or replace function app_private.purge_expired_auth()
  returns void
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  delete from app_private.otp_codes
  where expires_at < now() - interval '1 hour';
    delete from app_private.refresh_tokens t using app.sessions s
where t.session_id = s.id
  and(s.revoked_at < now() - interval '1 day'
  or s.expires_at < now() - interval '1 day');
  delete from app_private.rate_limits
  where window_started_at < now() - interval '1 hour';
    delete from app_private.sliding_limits
    where coalesce(hits[cardinality(hits)], '-infinity') < now() - interval '24 hours';
$$;

comment on function app_private.purge_expired_auth() is
  'Housekeeping (worker cron purge_expired_auth, hourly): expired OTP codes, refresh tokens of sessions over for a day, finished rate-limit windows and limit keys idle for a day.';

grant execute on function app_private.purge_expired_auth() to app_worker;

-- The sessions among p_sessions that are no longer live (revoked, expired or gone). A process
-- calls it after its listening connection comes back, for the revocations it may have missed.
create or replace function app_private.ended_sessions(
  p_sessions uuid[]
)
  returns setof uuid
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    wanted.id
  from
    unnest(p_sessions) as wanted(id)
where
  not exists(
    select
    from
      app.sessions s
    where
      s.id = wanted.id
      and app.session_access_level(s.id, s.user_id) is not null)
$$;

comment on function app_private.ended_sessions(uuid[]) is
  'The sessions among p_sessions that are no longer live: the notification stream''s process asks after its listening connection comes back, for revocations it missed (server/sse/reader.ts).';

grant execute on function app_private.ended_sessions(uuid[]) to authenticator;

-- Logging out closes that session's open streams in every process (contract section 3): when a
-- session becomes revoked (app.logout, refresh-token reuse detection, user merge, or anything
-- else), a notify on 'session_revoked' carries the session id only, after the revocation commits.
create or replace function app_private.announce_session_revoked()
  returns trigger
  language plpgsql
  set search_path = pg_catalog
  as $$
begin
  perform pg_notify('session_revoked', new.id::text);
  return null;
end
$$;

comment on function app_private.announce_session_revoked() is
  'Trigger function: notifies ''session_revoked'' with the session id when a session becomes revoked, after commit, so every process closes that session''s streams (GET /notifications/stream). Trigger _800_announce_revoked on app.sessions.';

-- Counts one hit for a key when fewer than p_limit of its hits fall in the window ending now.
-- wait: 0 when allowed, otherwise the seconds until the oldest hit that keeps it full leaves the
-- window (the Retry-After of a 429 RATE_LIMITED). remaining: the hits left in the window after this
-- one; reset_seconds: the seconds until the window frees one (its oldest hit leaves it). The row
-- lock serialises the hits of one key across processes.
create or replace function app_private.take_sliding_limit(
  p_key text,
  p_limit int,
  p_window interval,
  out wait int,
  out remaining int,
  out reset_seconds int
)
  returns record
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_hits timestamptz[];
begin
  insert into app_private.sliding_limits as l (key, hits) values (p_key, '{}')
    on conflict (key) do update set key = excluded.key
    returning l.hits into v_hits;
  v_hits := array(select h from unnest(v_hits) h where h > now() - p_window order by h);
  if cardinality(v_hits) >= p_limit then
    update app_private.sliding_limits l set hits = v_hits where l.key = p_key;
    wait := greatest(1, ceil(extract(epoch from v_hits[cardinality(v_hits) - p_limit + 1] + p_window - now())))::int;
    remaining := 0;
    reset_seconds := wait;
    return;
  end if;
  v_hits := v_hits || now();
  update app_private.sliding_limits l set hits = v_hits where l.key = p_key;
  wait := 0;
  remaining := p_limit - cardinality(v_hits);
  reset_seconds := greatest(1, ceil(extract(epoch from v_hits[1] + p_window - now())))::int;
end
$$;

comment on function app_private.take_sliding_limit(text, integer, interval) is
  'The sliding-window limit itself: counts a hit for a key when fewer than p_limit fall in the window, else answers the seconds to wait; and the hits left and the seconds until the window frees one (the RateLimit headers). Used by app.take_address_limit, app.request_otp and app.take_write_limit.';

-- The wait alone (what the functions of the release before the RateLimit headers call).
create or replace function app_private.consume_sliding_limit(
  p_key text,
  p_limit int,
  p_window interval
)
  returns int
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    wait
  from
    app_private.take_sliding_limit(p_key, p_limit, p_window)
$$;

comment on function app_private.consume_sliding_limit(text, integer, interval) is
  'app_private.take_sliding_limit''s wait alone: 0 when the hit is counted, else the seconds to wait. Used by app.request_otp.';

-- One request of a client address to a limited sign-in endpoint: at most 30 in any 5 minutes per
-- address (keyed by app_private.client_address_key), the bucket's name being the limit's. wait: 0
-- when allowed, else the seconds to wait (429); and what the RateLimit headers say.
create or replace function app.take_address_limit(
  p_bucket text,
  p_address text,
  out wait int,
  out rate_limit text,
  out quota int,
  out window_seconds int,
  out remaining int,
  out reset_seconds int
)
  returns record
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if p_bucket not in ('otp_request', 'anonymous_session') then
    raise exception 'unknown address limit %', p_bucket;
  end if;
  rate_limit := p_bucket;
  quota := 30;
  window_seconds := 300;
  select l.wait, l.remaining, l.reset_seconds into wait, remaining, reset_seconds
  from app_private.take_sliding_limit(
    'address:' || p_bucket || ':' || app_private.client_address_key(p_address), quota, make_interval(secs => window_seconds)) l;
end
$$;

comment on function app.take_address_limit(text, text) is
  'Counts one request of a client address to a limited sign-in endpoint (POST /auth/otp/request, POST /auth/anonymous/session: 30 in any 5 minutes); wait 0 when allowed, else the seconds to wait (429), with the limit, the requests left and the seconds until one frees (the RateLimit headers).';

grant execute on function app.take_address_limit(text, text) to app_anonymous;

-- The wait alone (the release before the RateLimit headers calls this).
create or replace function app.consume_address_limit(
  p_bucket text,
  p_address text
)
  returns int
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    wait
  from
    app.take_address_limit(p_bucket, p_address)
$$;

comment on function app.consume_address_limit(text, text) is
  'Counts one request of a client address to a limited sign-in endpoint; 0 when allowed, else the seconds to wait: app.take_address_limit''s wait (kept for the previous release).';

grant execute on function app.consume_address_limit(text, text) to app_anonymous;

-- The level rule itself, over the columns it reads: plain SQL, inlined wherever it is used, so
-- app.user_access_level and app.onboarding_status share one rule without calling each other.
create or replace function app.access_level_of(
  p_full_name text,
  p_username text,
  p_terms_accepted_at timestamptz,
  p_has_phone boolean,
  p_media_completed_at timestamptz,
  p_contacts_synced_at timestamptz
)
  returns int
  language sql
  immutable
  as $$
  select
    case when p_full_name is null
      or p_username is null
      or p_terms_accepted_at is null then
      1
    when not p_has_phone
      or p_media_completed_at is null then
      2
    when p_contacts_synced_at is null then
      3
    else
      4
    end
$$;

comment on function app.access_level_of(text, text, timestamp with time zone, boolean, timestamp with time zone, timestamp with time zone)
  is 'The access-level ladder over the columns it reads (1 to 4): the one SQL form of it, inlined by app_private.user_level and app.onboarding_status (GET /users/me/onboarding). server/http/access-levels.ts is its TypeScript form; test/sql/auth/access-levels.test.ts holds them equal.';

-- The access levels by name, the one SQL home of the numbers a function requires (contract section
-- 2): 'anonymous' 1, 'profile' 2 (profile basics), 'phone' 3, 'hub_ready' 4; any other name raises
-- (CASE_NOT_FOUND), so a misspelt requirement fails instead of letting everyone through. Immutable:
-- a call with a constant name is folded to its number when the calling statement is planned.
-- server/http/access-levels.ts `levels` is its TypeScript form; test/sql/auth/access-levels.test.ts holds
-- them equal.
create or replace function app.access_level(
  p_name text
)
  returns int
  language plpgsql
  immutable
  as $$
begin
  case p_name
    when 'anonymous' then return 1;
    when 'profile' then return 2;
    when 'phone' then return 3;
    when 'hub_ready' then return 4;
  end case;
end
$$;

comment on function app.access_level(text) is
  'An access level by name (anonymous 1, profile 2, phone 3, hub_ready 4; any other name raises): what the SQL functions require (app.require_level, app.viewer_has_level, app.viewer_session_gate, app_private.active_member). Its TypeScript form is server/http/access-levels.ts levels; test/sql/auth/access-levels.test.ts holds them equal.';

grant execute on function app.access_level(text) to app_anonymous, app_worker;

-- The session check of the transaction's own viewer (app.viewer_session_id, app.viewer_id) at a
-- required level: the one form every caller uses. The request's deferred check sends it after the
-- viewer's settings, with the request's first statement (db/viewer.ts sessionGate,
-- db/request-transaction.ts), and app.cast_vote runs it first. Plain SQL, so it is inlined into the
-- caller's expression: no call of its own.
create or replace function app.viewer_session_gate(
  p_required int
)
  returns int
  language sql
  volatile
  as $$
  select
    app.session_gate(app.session_access_level(app.viewer_session_id(), app.viewer_id()), p_required)
$$;

comment on function app.viewer_session_gate(integer) is
  'The session check of the transaction''s own viewer at a required level: UNAUTHORIZED when the session is not live, else the 403 code of the first missing level; answers the level. Sent with the first statement of a signed-in request (db/viewer.ts sessionGate, db/request-transaction.ts) and run first by app.cast_vote (POST /posts/{postId}/vote).';

grant execute on function app.viewer_session_gate(int) to app_user;

-- The session check of a request whose first statement travels with it (one round trip
-- for role, identity, session and work). `begin; set role...; select app.viewer_session_gate(required)`
-- (this over app.session_access_level) goes out in the same pipeline as the request's statement and
-- its commit: when the session is not live (level null) it raises
-- UNAUTHORIZED, and when the level is below the endpoint's it raises the 403 code of the first
-- missing level (the same codes as the HTTP gate, server/http/auth.ts requireLevel). The
-- transaction is then aborted, so the statements behind it fail and change nothing. Plain PL/pgSQL
-- without security definer: it reads nothing, and its caller's role may call app.fail.
create or replace function app.session_gate(
  p_level int,
  p_required int
)
  returns int
  language plpgsql
  as $$
begin
  if p_level is null then
    perform app.fail('UNAUTHORIZED');
  end if;
  if p_level < p_required then
    -- The first level missing (2 at least: every session has level 1).
    perform app.fail(case greatest(p_level + 1, 2)
      when 2 then 'PROFILE_BASICS_REQUIRED'
      when 3 then 'PHONE_VERIFICATION_REQUIRED'
      else 'HUB_READINESS_REQUIRED' end);
  end if;
  return p_level;
end
$$;

comment on function app.session_gate(integer, integer) is
  'The gate over a level: UNAUTHORIZED for a null level, else the 403 code of the first missing level below p_required (the codes server/http/access-levels.ts gives; test/sql/auth/access-levels.test.ts holds them equal). Used by app.viewer_session_gate and app.require_level.';

grant execute on function app.session_gate(integer, integer) to app_anonymous;

-- A user's access level (contract section 2) over the columns it reads: the level rule is
-- app.access_level_of; this is how its inputs are read. No row: no such user.
create or replace function app_private.user_level(
  p_user_id uuid
)
  returns table(
      level int
)
  language sql
  stable
  as $$
  select
    app.access_level_of(u.full_name, u.username, u.terms_accepted_at, p.user_id is not null, u.media_completed_at, u.contacts_synced_at)
  from
    app.users u
  left join app.phone_identities p on p.user_id = u.id
where
  u.id = p_user_id
$$;

comment on function app_private.user_level(uuid) is
  'A user''s access level, read from their row and phone identities through app.access_level_of. Inlined by app.user_access_level and app_private.session_level.';

-- A live session: the session is this user's, not revoked and not expired. No row: the session may
-- not act (401). The liveness rule itself, inlined by its readers.
create or replace function app_private.live_session(
  p_session_id uuid,
  p_user_id uuid
)
  returns table(
      user_id uuid
)
  language sql
  stable
  as $$
  select
    s.user_id
  from
    app.sessions s
  where
    s.id = p_session_id
    and s.user_id = p_user_id
    and s.revoked_at is null
    and s.expires_at > now()
$$;

comment on function app_private.live_session(uuid, uuid) is
  'The session''s user when the session is live (the user''s, not revoked, not expired); no row when it may not act. The one liveness rule: inlined by app_private.session_level and app.onboarding_status_gated.';

-- The level of a live session (app_private.live_session). No row: the session may not act (401).
create or replace function app_private.session_level(
  p_session_id uuid,
  p_user_id uuid
)
  returns table(
      level int
)
  language sql
  stable
  as $$
  select
    l.level
  from
    app_private.live_session(p_session_id, p_user_id) s
  cross join lateral app_private.user_level(s.user_id) l
$$;

comment on function app_private.session_level(uuid, uuid) is
  'The level of a live session: the session is the user''s, not revoked and not expired; no row when it may not act. The rule behind app.session_access_level, the live notification batch and the push planner.';

-- The sessions with a stream open in the calling process, for its reader connection only: a
-- temporary table (private to the connection, gone with it), owned by this function's owner, so
-- the login role can change it only through this function.
create or replace function app_private.live_sessions_sync(
  p_add uuid[],
  p_remove uuid[]
)
  returns void
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  if to_regclass('pg_temp.live_open_sessions') is null then
    create temporary table live_open_sessions (id uuid primary key);
  end if;
  delete from pg_temp.live_open_sessions o where o.id = any (p_remove);
  insert into pg_temp.live_open_sessions (id) select unnest(p_add) on conflict do nothing;
end
$$;

comment on function app_private.live_sessions_sync(uuid[], uuid[]) is
  'Keeps the list of sessions with an open stream in the calling process (a temporary table of its reader connection), which the live notification batch joins. server/sse/reader.ts (GET /notifications/stream).';

grant execute on function app_private.live_sessions_sync(uuid[], uuid[]) to authenticator;

-- Counts one write of the viewer under limit p_name: at most p_max in any p_window_seconds, for
-- the viewer alone, or for the viewer in each hub of p_hub_ids when given. Raises RATE_LIMITED
-- when any is full, with the seconds to wait in DETAIL (the API answers 429 with Retry-After) and
-- the limit in HINT (`{"rateLimit", "quota", "windowSeconds"}`, for the RateLimit headers).
-- Otherwise answers the limit, the writes left and the seconds until the window frees one; with
-- hubs, those of the hub with the fewest left.
create or replace function app.take_write_limit(
  p_name text,
  p_max int,
  p_window_seconds int,
  p_hub_ids uuid[] default null,
  out rate_limit text,
  out quota int,
  out window_seconds int,
  out remaining int,
  out reset_seconds int
)
  returns record
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_window interval := make_interval(secs => p_window_seconds);
  v_wait int := 0;
  v_hub uuid;
  v_count record;
begin
  if v_viewer is null or p_name !~ '^[a-z_]+$' or p_max < 1 or p_window_seconds < 1 then
    raise exception 'invalid write limit %', p_name;
  end if;
  rate_limit := p_name;
  quota := p_max;
  window_seconds := p_window_seconds;
  remaining := p_max;
  reset_seconds := 0;
  if p_hub_ids is null then
    select l.wait, l.remaining, l.reset_seconds into v_wait, remaining, reset_seconds
    from app_private.take_sliding_limit('write:' || p_name || ':' || v_viewer, p_max, v_window) l;
  else
    -- In hub order, so that two writes naming the same hubs lock their rows in the same order.
    for v_hub in select distinct h from unnest(p_hub_ids) h order by h loop
      select * into v_count from app_private.take_sliding_limit('write:' || p_name || ':' || v_viewer || ':' || v_hub, p_max, v_window);
      v_wait := greatest(v_wait, v_count.wait);
      if v_count.remaining < remaining or (v_count.remaining = remaining and v_count.reset_seconds > reset_seconds) then
        remaining := v_count.remaining;
        reset_seconds := v_count.reset_seconds;
      end if;
    end loop;
  end if;
  if v_wait > 0 then
    raise exception using errcode = 'P0001', message = 'RATE_LIMITED', detail = v_wait::text,
      hint = json_build_object('rateLimit', p_name, 'quota', p_max, 'windowSeconds', p_window_seconds)::text;
  end if;
end
$$;

comment on function app.take_write_limit(text, integer, integer, uuid[]) is
  'Counts one write of the viewer under a named limit, alone or in each hub given; raises RATE_LIMITED with the seconds in DETAIL and the limit in HINT when full (429), else answers the writes left and the seconds until one frees (the RateLimit headers). Sent before the writes of limited endpoints (server/http/write-limits.ts).';

grant execute on function app.take_write_limit(text, integer, integer, uuid[]) to app_user;

-- The same count, answering nothing (the release before the RateLimit headers sends this).
create or replace function app.consume_write_limit(
  p_name text,
  p_max int,
  p_window_seconds int,
  p_hub_ids uuid[] default null
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.take_write_limit(p_name, p_max, p_window_seconds, p_hub_ids);
end
$$;

comment on function app.consume_write_limit(text, integer, integer, uuid[]) is
  'Counts one write of the viewer under a named limit (app.take_write_limit, answering nothing); raises RATE_LIMITED when full. Kept for the previous release.';

grant execute on function app.consume_write_limit(text, integer, integer, uuid[]) to app_user;

-- A user sees their own sessions (device list), never anyone else's.
create policy sessions_select_self on app.sessions
  for select to app_user
    using (user_id =(
      select
        app.viewer_id()));

comment on policy sessions_select_self on app.sessions is 'A user reads only their own sessions, never anyone else''s.';

grant select (id, user_id, created_at, expires_at, revoked_at) on app.sessions to app_user;

create trigger _800_announce_revoked
  after update of revoked_at on app.sessions for each row
  when(old.revoked_at is null and new.revoked_at is not null)
  execute function app_private.announce_session_revoked();

comment on trigger _800_announce_revoked on app.sessions is
  'Announces a revoked session to every process (app_private.announce_session_revoked).';

-- Reads from streaming replicas (DATABASE_REPLICA_URLS, db/replicas.ts). Each session has a floor in
-- app_private.session_read_floors (unlogged, primary only): the WAL position a replica must have
-- replayed before it serves that session, so a session sees its own writes and never reads its past.
-- After the primary served a request of the session (its writes and its reads), the floor becomes
-- the primary's WAL insert position: past the request's commit record and past every commit its
-- reads saw. Called as its own statement after the request's transaction ended. Writes only an
-- unlogged row, so it neither writes WAL nor waits for a flush.
create or replace function app_private.note_session_read_floor(
  p_session_id uuid
)
  returns void
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  insert into app_private.session_read_floors as f(session_id, floor)
    values(p_session_id, pg_current_wal_insert_lsn())
  on conflict(session_id)
    do update set
      floor = greatest(f.floor, excluded.floor), noted_at = now()
$$;

comment on function app_private.note_session_read_floor(uuid) is
  'Raises a session''s read floor to the primary''s WAL insert position, after the primary served one of its requests (db/replicas.ts noteServed).';

grant execute on function app_private.note_session_read_floor(uuid) to authenticator;

-- The session check of a read that may go to a replica, on the primary (a revoked session stops at
-- once): the session's access level (null when it may not act) and its floor. A session without a
-- floor (new, or the primary restarted after a crash, which empties the unlogged table) gets the
-- primary's position now, which is past everything it may have written or read before. Planned
-- without sequential scans: the floors are swept, and a plan cached on an API connection while the
-- table was empty (a sequential scan) would read every floor on each request until the table's
-- next analyze.
create or replace function app_private.session_read_floor(
  p_session_id uuid,
  p_user_id uuid
)
  returns table(
      level int,
      floor pg_lsn
)
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  set enable_seqscan = off
  as $$
begin
  level := app.session_access_level(p_session_id, p_user_id);
  if level is not null then
    select f.floor into floor from app_private.session_read_floors f where f.session_id = p_session_id;
    if not found then
      perform app_private.note_session_read_floor(p_session_id);
      select f.floor into floor from app_private.session_read_floors f where f.session_id = p_session_id;
    end if;
  end if;
  return next;
end
$$;

comment on function app_private.session_read_floor(uuid, uuid) is
  'The session check of a read that may be served by a replica (db/replicas.ts sessionFloor), on the primary: the session''s access level (null: not live) and its read floor.';

grant execute on function app_private.session_read_floor(uuid, uuid) to authenticator;

-- Floors untouched for an hour go (worker cron sweep_session_read_floors): a session without one gets
-- the primary's position at its next read (app_private.session_read_floor), which is past its old
-- floor, so sweeping one never shows a session its past. Batches of at most p_batch rows; a
-- sequential scan of this small unlogged table, which has no index on noted_at so that raising a
-- floor stays a HOT update.
create or replace function app_private.sweep_session_read_floors(
  p_batch int
)
  returns int
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  with gone as(
    delete from app_private.session_read_floors f
    where f.session_id in(
        select
          o.session_id
        from
          app_private.session_read_floors o
        where
          o.noted_at < now() - interval '1 hour'
        limit p_batch)
    returning
      1
)
select
  count(*)::int
from
  gone
$$;

comment on function app_private.sweep_session_read_floors(integer) is
  'Housekeeping (worker cron sweep_session_read_floors, every 15 minutes): deletes up to p_batch read floors untouched for an hour; returns how many, so the task repeats while batches are full.';

grant execute on function app_private.sweep_session_read_floors(integer) to app_worker;

-- On a replica, in the first round trip of a read: refuses (SQLSTATE RB001, which the API answers by
-- reading from the primary) unless this standby has replayed the WAL up to p_floor. On a server that
-- is not a standby pg_last_wal_replay_lsn() is null: refused too.
create or replace function app.replica_reached(
  p_floor pg_lsn
)
  returns void
  language plpgsql
  volatile
  as $$
begin
  if coalesce(pg_last_wal_replay_lsn() < p_floor, true) then
    raise exception using errcode = 'RB001', message = 'replica behind the session';
  end if;
end
$$;

comment on function app.replica_reached(pg_lsn) is
  'Sent first in a read served by a replica (server/http/replica-reads.ts): raises RB001 unless the standby has replayed up to the session''s read floor; the API then reads from the primary.';

grant execute on function app.replica_reached(pg_lsn) to app_anonymous;

grant execute on function app.replica_reached(pg_lsn) to app_admin;

-- The same check, waiting up to p_wait_ms for the standby to get there: a read that follows its
-- session's write by a few milliseconds would find a replica with no lag a few milliseconds short,
-- and cost the primary two transactions (the read and its floor) instead of waiting that long.
create or replace function app.replica_caught_up(
  p_floor pg_lsn,
  p_wait_ms int
)
  returns void
  language plpgsql
  volatile
  as $$
declare
  v_until timestamptz := clock_timestamp() + make_interval(secs => least(greatest(p_wait_ms, 0), 1000) / 1000.0);
begin
  while coalesce(pg_last_wal_replay_lsn() < p_floor, true) loop
    if pg_last_wal_replay_lsn() is null or clock_timestamp() >= v_until then
      raise exception using errcode = 'RB001', message = 'replica behind the session';
    end if;
    perform pg_sleep(0.002);
  end loop;
end
$$;

comment on function app.replica_caught_up(pg_lsn, integer) is
  'Sent first in a read served by a replica (server/http/replica-reads.ts): waits up to p_wait_ms (at most a second) for the standby to replay up to the session''s read floor, else raises RB001; the API then reads from the primary.';

grant execute on function app.replica_caught_up(pg_lsn, integer) to app_anonymous;

grant execute on function app.replica_caught_up(pg_lsn, integer) to app_admin;

-- Idempotency keys (contract part 15; server/http/idempotency.ts). A request with a key claims it
-- first, in its own transaction: a transaction-scoped advisory lock on the key (never a session
-- lock: the API may run behind PgBouncer in transaction mode) makes a concurrent request with the
-- same key answer 409 at once instead of waiting; then the kept answer is read in a statement of its
-- own, after the lock, so it sees an answer committed by the request that held the lock before. The
-- request's answer is kept (app.keep_idempotent_answer) in the same transaction as its effect, so
-- a crash leaves both or neither. Digest, fingerprint and body come from the API already derived
-- from and encrypted under the client's key: the database never holds the key or an answer in the clear.
create or replace function app.claim_idempotency_key(
  p_key_digest bytea,
  p_fingerprint bytea
)
  returns table(
      outcome text,
      status int,
      headers jsonb,
      body bytea
)
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_kept app_private.idempotent_answers;
begin
  if v_viewer is null or length(p_key_digest) <> 32 or length(p_fingerprint) <> 32 then
    raise exception 'invalid idempotency key claim';
  end if;
  -- The digest is derived from the user and the key: its first 64 bits name the lock.
  if not pg_try_advisory_xact_lock(('x' || encode(substring(p_key_digest from 1 for 8), 'hex'))::bit(64)::bigint) then
    return query select 'in_use', null::int, null::jsonb, null::bytea;
    return;
  end if;
  select * into v_kept from app_private.idempotent_answers a
    where a.user_id = v_viewer and a.key_digest = p_key_digest and a.expires_at > now();
  if not found then
    return query select 'new', null::int, null::jsonb, null::bytea;
  elsif v_kept.fingerprint <> p_fingerprint then
    return query select 'reused', null::int, null::jsonb, null::bytea;
  else
    return query select 'kept', v_kept.status::int, v_kept.headers, v_kept.body;
  end if;
end
$$;

comment on function app.claim_idempotency_key(bytea, bytea) is
  'First statement of a request with an Idempotency-Key (server/http/idempotency.ts): takes the key''s transaction-scoped advisory lock (''in_use'' when another transaction holds it: 409 IDEMPOTENCY_KEY_IN_USE), then reads the viewer''s live kept answer: ''new'' (none: the request runs), ''reused'' (another fingerprint: 422 IDEMPOTENCY_KEY_REUSED) or ''kept'' with the answer to replay.';

grant execute on function app.claim_idempotency_key(bytea, bytea) to app_user;

-- The claim as a statement that travels ahead of the request's first statement, in the same round
-- trip (server/http/idempotency.ts claimWithFirstStatement): it answers nothing when the request is
-- to run, and otherwise raises, so the transaction is aborted and nothing behind it runs:
-- IDEMPOTENCY_KEY_IN_USE, IDEMPOTENCY_KEY_REUSED, or SQLSTATE IK001 when an answer is kept (the API
-- then reads it with app.claim_idempotency_key in a transaction of its own and replays it).
create or replace function app.claim_idempotency_key_first(
  p_key_digest bytea,
  p_fingerprint bytea
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_outcome text;
begin
  select c.outcome into v_outcome from app.claim_idempotency_key(p_key_digest, p_fingerprint) c;
  if v_outcome = 'in_use' then
    raise exception using errcode = 'P0001', message = 'IDEMPOTENCY_KEY_IN_USE';
  elsif v_outcome = 'reused' then
    raise exception using errcode = 'P0001', message = 'IDEMPOTENCY_KEY_REUSED';
  elsif v_outcome = 'kept' then
    raise exception using errcode = 'IK001', message = 'idempotent answer kept';
  end if;
end
$$;

comment on function app.claim_idempotency_key_first(bytea, bytea) is
  'The claim of an Idempotency-Key sent ahead of the request''s first statement, in its round trip (server/http/idempotency.ts): returns when the request runs (the key''s lock held), else raises IDEMPOTENCY_KEY_IN_USE, IDEMPOTENCY_KEY_REUSED, or IK001 when an answer is kept (replayed from app.claim_idempotency_key).';

grant execute on function app.claim_idempotency_key_first(bytea, bytea) to app_user;

create or replace function app.keep_idempotent_answer(
  p_key_digest bytea,
  p_fingerprint bytea,
  p_status int,
  p_headers jsonb,
  p_body bytea
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
begin
  -- 401, 429 and 5xx answers are never kept (a retry runs again).
  if v_viewer is null or p_status not between 200 and 499 or p_status in (401, 429) then
    raise exception 'invalid kept answer';
  end if;
  -- A row here is an expired answer not yet swept (the claim, under the key's lock, found no live one).
  insert into app_private.idempotent_answers as a (user_id, key_digest, fingerprint, status, headers, body, expires_at)
  values (v_viewer, p_key_digest, p_fingerprint, p_status, p_headers, p_body, now() + interval '24 hours')
  on conflict (user_id, key_digest) do update
    set fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers, body = excluded.body,
        created_at = now(), expires_at = excluded.expires_at;
end
$$;

comment on function app.keep_idempotent_answer(bytea, bytea, integer, jsonb, bytea) is
  'Keeps the answer of a request with an Idempotency-Key for 24 hours, in the request''s own transaction (server/http/idempotency.ts; the key''s lock is held since app.claim_idempotency_key). Never a 401, 429 or 5xx.';

grant execute on function app.keep_idempotent_answer(bytea, bytea, integer, jsonb, bytea) to app_user;

create or replace function app_private.purge_idempotent_answers(
  p_batch int
)
  returns int
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  with gone as(
    delete from app_private.idempotent_answers a using(
      select
        user_id,
        key_digest
      from
        app_private.idempotent_answers
      where
        expires_at <= now()
      order by
        expires_at
      limit p_batch) expired
  where
    a.user_id = expired.user_id
    and a.key_digest = expired.key_digest
  returning
    1
)
select
  count(*)::int
from
  gone
$$;

comment on function app_private.purge_idempotent_answers(integer) is
  'Housekeeping (worker cron purge_idempotent_answers, hourly): deletes up to p_batch kept answers past their 24 hours, oldest first (the expiry index); returns how many, so the task repeats while batches are full.';

grant execute on function app_private.purge_idempotent_answers(integer) to app_worker;
