-- Up Migration

-- Readiness (GET /readyz, contract 11): the API process compares the migrations it ships with the
-- ones applied to its database. The runner's table (public.pgmigrations) belongs to the owner and no
-- API role may read it; this function returns only the applied names, to the API login role alone
-- (not to the roles a request switches to, so neither REST handlers nor GraphQL can reach it).
create function app_private.applied_migrations()
  returns setof text
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select m.name::text from public.pgmigrations m
$$;

revoke all on function app_private.applied_migrations() from public;
grant execute on function app_private.applied_migrations() to authenticator;

-- Down Migration
drop function app_private.applied_migrations();
