-- Up Migration
-- The session check of a request whose first statement travels with it (issue 12: one round trip
-- for role, identity, session and work). `begin; set role...; select app.session_gate(
-- app.session_access_level(session, user), required)` goes out in the same pipeline as the
-- request's statement and its commit: when the session is not live (level null) it raises
-- UNAUTHORIZED, and when the level is below the endpoint's it raises the 403 code of the first
-- missing level (the same codes as the HTTP gate, server/http/auth.ts requireLevel). The
-- transaction is then aborted, so the statements behind it fail and change nothing. Plain PL/pgSQL
-- without security definer: it reads nothing, and its caller's role may call app.fail.
create function app.session_gate(p_level int, p_required int)
  returns int
  language plpgsql
  as $$
begin
  if p_level is null then
    perform app.fail('UNAUTHORIZED');
  end if;
  if p_level < p_required then
    perform app.fail(case least(greatest(p_level + 1, 2), p_required)
      when 2 then 'PROFILE_BASICS_REQUIRED'
      when 3 then 'PHONE_VERIFICATION_REQUIRED'
      else 'HUB_READINESS_REQUIRED' end);
  end if;
  return p_level;
end
$$;

grant execute on function app.session_gate(int, int) to app_anonymous;

-- Down Migration
drop function app.session_gate(int, int);
