-- Up Migration
-- Sign-in: phone OTP, anonymous devices and identity-provider subjects, each ending in a new session.

-- OTP codes, one live code per phone, stored as an HMAC computed by the API (never the code itself).
create table app_private.otp_codes (
  phone_e164 text primary key,
  code_hash bytea not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  failed_attempts int not null default 0
);

-- Issues a code for a phone. Returns 0 when the code was stored, or the seconds to wait when the
-- previous code is younger than 60 s. A new code replaces the previous one and resets the attempts.
create function app.request_otp(p_phone text, p_code_hash bytea)
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

-- The user of a verified phone. When the caller (the request's viewer) has no phone: a new phone
-- makes the caller that identity (same user id); a phone that already has a user merges the
-- caller's public activity into that user. Otherwise the phone's user, created when new.
create function app_private.sign_in_phone(p_phone text)
  returns uuid
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_caller uuid := app.viewer_id();
  v_target uuid;
  v_caller_is_phoneless boolean;
begin
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

-- Verifies a code. outcome: 'ok' (session started), 'invalid' (wrong, expired, replaced or unknown:
-- one answer for all), or 'locked' (5 wrong attempts burned the code; retry_after says when a new
-- one may be requested). Wrong attempts are counted and committed: this returns, it does not raise.
create function app.verify_otp(p_phone text, p_code_hash bytea, p_refresh_hash bytea,
  out outcome text, out retry_after int, out user_id uuid, out session_id uuid)
  language plpgsql volatile security definer
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

-- Creates or restores an anonymous user for an app-install device id. The same device restores the
-- same user while that user is still anonymous (no phone, not merged); otherwise a new user.
create function app.anonymous_session(p_device_id text, p_refresh_hash bytea,
  out user_id uuid, out session_id uuid)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('anonymous_device:' || p_device_id, 0));
  select d.user_id into user_id
  from app_private.anonymous_devices d
  join app.users u on u.id = d.user_id
  where d.device_id = p_device_id and u.merged_into is null
    and not exists (select from app.phone_identities p where p.user_id = d.user_id);
  if user_id is null then
    insert into app.users default values returning id into user_id;
    insert into app_private.anonymous_devices (device_id, user_id) values (p_device_id, user_id)
      on conflict (device_id) do update set user_id = excluded.user_id;
  end if;
  session_id := app_private.start_session(user_id, p_refresh_hash);
end
$$;

-- Identity-provider sign-in after the API verified the ID token. A phone-provider token signs in
-- the phone identity (with the same upgrade/merge rule as OTP); an anonymous-provider token maps
-- its subject to one anonymous user.
create function app.idp_session(p_subject text, p_phone text, p_refresh_hash bytea,
  out user_id uuid, out session_id uuid)
  language plpgsql volatile security definer
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

-- The session payload's user block, for the viewer the API just signed in.
create function app.session_user(
  out id uuid, out is_anonymous boolean, out phone_verified boolean, out access_level int)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select u.id, p.user_id is null, p.user_id is not null, app.user_access_level(u.id)
  from app.users u left join app.phone_identities p on p.user_id = u.id
  where u.id = app.viewer_id()
$$;

grant execute on function app.request_otp(text, bytea), app.verify_otp(text, bytea, bytea),
  app.anonymous_session(text, bytea), app.idp_session(text, text, bytea),
  app.session_user() to app_anonymous;

-- Down Migration
drop function app.session_user();
drop function app.idp_session(text, text, bytea);
drop function app.anonymous_session(text, bytea);
drop function app.verify_otp(text, bytea, bytea);
drop function app_private.sign_in_phone(text);
drop function app.request_otp(text, bytea);
drop table app_private.otp_codes;
