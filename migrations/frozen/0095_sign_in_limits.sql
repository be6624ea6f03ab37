-- Up Migration
-- Sign-in limits (contract section 3), shared by every API process: a phone gets at most 10 codes
-- in any 24 hours (with 5 attempts per code, at most 50 guesses a day at a 4-digit code); one client
-- address makes at most 30 OTP requests and 30 anonymous-session requests in any 5 minutes.

-- Sliding windows: each key keeps the times of its allowed hits still inside its window (never more
-- than its limit), so "at most N in any window" holds exactly, not per fixed window.
create table app_private.sliding_limits (
  key text primary key,
  hits timestamptz[] not null
);

-- Counts one hit for a key when fewer than p_limit of its hits fall in the window ending now.
-- Returns 0 when allowed, otherwise the seconds until the oldest hit leaves the window (the
-- Retry-After of a 429 RATE_LIMITED). The row lock serialises the hits of one key across processes.
create function app_private.consume_sliding_limit(p_key text, p_limit int, p_window interval)
  returns int
  language plpgsql volatile
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
    return greatest(1, ceil(extract(epoch from v_hits[cardinality(v_hits) - p_limit + 1] + p_window - now())))::int;
  end if;
  update app_private.sliding_limits l set hits = v_hits || now() where l.key = p_key;
  return 0;
end
$$;

-- One request of a client address to a limited sign-in endpoint ('otp_request' or
-- 'anonymous_session'): at most 30 in any 5 minutes. The address is the API's (the socket's, or
-- the X-Forwarded-For entry of a trusted proxy). Returns 0 or the seconds to wait.
create function app.consume_address_limit(p_bucket text, p_address text)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_bucket not in ('otp_request', 'anonymous_session') then
    raise exception 'unknown address limit %', p_bucket;
  end if;
  return app_private.consume_sliding_limit('address:' || p_bucket || ':' || p_address, 30, interval '5 minutes');
end
$$;

grant execute on function app.consume_address_limit(text, text) to app_anonymous;

-- Issues a code for a phone (replaces 0010's version). Returns 0 when the code was stored, or the
-- seconds to wait: while the previous code is younger than 60 s, or when the phone already got 10
-- codes in the last 24 hours (until the oldest of them leaves the window). A request refused by the
-- 60 s rule issues no code and does not count. The advisory lock serialises requests for one phone.
create or replace function app.request_otp(p_phone text, p_code_hash bytea)
  returns int
  language plpgsql volatile security definer
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

-- Housekeeping (replaces 0015's version): also forgets limit keys with no hit in the last 24 hours
-- (the longest window).
create or replace function app_private.purge_expired_auth()
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  delete from app_private.otp_codes where expires_at < now() - interval '1 hour';
  delete from app_private.refresh_tokens t using app.sessions s
    where t.session_id = s.id and (s.revoked_at < now() - interval '1 day' or s.expires_at < now() - interval '1 day');
  delete from app_private.rate_limits where window_started_at < now() - interval '1 hour';
  delete from app_private.sliding_limits where coalesce(hits[cardinality(hits)], '-infinity') < now() - interval '24 hours';
$$;

-- Down Migration
create or replace function app_private.purge_expired_auth()
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  delete from app_private.otp_codes where expires_at < now() - interval '1 hour';
  delete from app_private.refresh_tokens t using app.sessions s
    where t.session_id = s.id and (s.revoked_at < now() - interval '1 day' or s.expires_at < now() - interval '1 day');
  delete from app_private.rate_limits where window_started_at < now() - interval '1 hour';
$$;

create or replace function app.request_otp(p_phone text, p_code_hash bytea)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_created timestamptz;
begin
  insert into app_private.otp_codes as o (phone_e164, code_hash, expires_at)
    values (p_phone, p_code_hash, now() + interval '300 seconds')
    on conflict (phone_e164) do update
      set code_hash = excluded.code_hash, created_at = now(), expires_at = excluded.expires_at,
          failed_attempts = 0
      where o.created_at <= now() - interval '60 seconds'
    returning o.created_at into v_created;
  if found then
    return 0;
  end if;
  select o.created_at into v_created from app_private.otp_codes o where o.phone_e164 = p_phone;
  return greatest(1, ceil(60 - extract(epoch from now() - v_created)))::int;
end
$$;

drop function app.consume_address_limit(text, text);
drop function app_private.consume_sliding_limit(text, int, interval);
drop table app_private.sliding_limits;
