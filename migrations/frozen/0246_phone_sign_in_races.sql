-- Up Migration
-- Signing in one new phone twice at once (two identity-provider phone tokens, or a phoneless user
-- verifying two phones at once) read "no identity" twice and the second insert broke
-- phone_identities' keys (500). One transaction at a time signs in a given phone, and one at a
-- time attaches a phone to a given caller: transaction advisory locks, the caller's first, then the
-- phone's (never the other way round, so no two sign-ins wait on each other in a cycle). The next
-- statement sees what the previous holder committed, so the second answers as a second sign-in
-- does.
create or replace function app_private.sign_in_phone(p_phone text)
  returns uuid
  language plpgsql volatile
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

-- Down Migration
create or replace function app_private.sign_in_phone(p_phone text) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
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
