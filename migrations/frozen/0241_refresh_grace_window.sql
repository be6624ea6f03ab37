-- Up Migration
-- Refresh grace window (contract section 3, amended). A mobile app that refreshes from two requests
-- at once must stay signed in: within 10 seconds of a rotation, presenting the rotated token again
-- answers the same new pair; after that, reuse still revokes the whole family, and one token never
-- yields two live ones.
--
-- Tokens stay stored as SHA-256 hashes only. The API derives a token's successor from the token
-- itself with a server-side key (HMAC, server/auth/tokens.ts), so the same presented token always
-- names the same successor: p_new_refresh_hash is the hash of that successor. Inside the window the
-- function answers the rotation again when that successor is the session's live token (not itself
-- rotated, session live), and `issued_at` is the rotation's time, from which the API signs the very
-- same access token. Nothing that could answer the pair is kept in the clear.
drop function app.refresh_session(bytea, bytea);

create function app.refresh_session(p_refresh_hash bytea, p_new_refresh_hash bytea,
  out user_id uuid, out session_id uuid, out outcome text, out issued_at timestamptz)
  language plpgsql volatile security definer
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

grant execute on function app.refresh_session(bytea, bytea) to app_anonymous;

-- Down Migration
drop function app.refresh_session(bytea, bytea);

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

grant execute on function app.refresh_session(bytea, bytea) to app_anonymous;
