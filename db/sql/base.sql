-- Shared by every domain: the schema grants, the error raiser (app.fail) and small helpers.
-- app.search_text (text as searches compare it: unaccented, lower case) is defined by the baseline
-- migration, not here: the search indexes are built from it, so changing it is a migration that
-- also rebuilds them.
comment on function app.search_text(text) is
  'Text as searches compare it: unaccented, lower case. The trigram indexes on user and hub names are built from it, so it lives in the baseline and changes only with a migration that rebuilds them. Used by app.name_words_match, app_private.name_words (the search words of users and hubs) and the searches GET /search/users and GET /search/hubs.';

grant execute on function app.search_text(text) to app_anonymous;

grant execute on function app.search_text(text) to app_admin;

grant execute on function public.unaccent(regdictionary, text) to app_anonymous;

grant execute on function public.unaccent(regdictionary, text) to app_admin;

-- A failed check raises P0001 with the catalog code as the message; the HTTP layer maps it 1:1.
create or replace function app.fail(
  code text
)
  returns void
  language plpgsql
  as $$ begin raise exception using errcode = 'P0001', message = code; end $$;

comment on function app.fail(text) is
  'Raises an API error by its catalog code (SQLSTATE P0001, message the code; server/http/catalog.ts maps it to the HTTP answer). Every function of every domain fails through it; catalog-lints.test.ts holds the codes to the catalog.';

grant execute on function app.fail(text) to app_anonymous;

grant execute on function app.fail(text) to app_admin;

-- Readiness (GET /readyz, contract 11): the API process compares the migrations it ships with the
-- ones applied to its database. The runner's table (public.pgmigrations) belongs to the owner and no
-- API role may read it; this function returns only the applied names, to the API login role alone
-- (not to the roles a request switches to, so neither REST handlers nor GraphQL can reach it).
create or replace function app_private.applied_migrations()
  returns setof text
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    m.name::text
  from
    public.pgmigrations m
$$;

comment on function app_private.applied_migrations() is
  'The names of the applied versioned migrations, for GET /readyz (server/health.ts): the API''s login role may call it, no request role may.';

grant execute on function app_private.applied_migrations() to authenticator;

-- The db/sql files as last applied (public.sql_files, the runner's table). Releases before the db/sql
-- level (app_private.applied_sql_level, below) read it in GET /readyz; kept while such a release may run.
create or replace function app_private.applied_sql_files()
  returns table(
      file text,
      sha256 text
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    f.file,
    f.sha256
  from
    public.sql_files f
$$;

comment on function app_private.applied_sql_files() is
  'The db/sql files and their hashes as last applied, read by GET /readyz of releases before app_private.applied_sql_level: the API''s login role may call it, no request role may.';

grant execute on function app_private.applied_sql_files() to authenticator;

-- The level of db/sql applied to this database (public.sql_levels, the runner's table; 0 before the
-- first runner that records it): GET /readyz answers ready when it is at least the build's level, so
-- a release keeps answering ready while a newer one migrates.
create or replace function app_private.applied_sql_level()
  returns int
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    coalesce((
      select
        max(l.level)
      from public.sql_levels l), 0)
$$;

comment on function app_private.applied_sql_level() is
  'The highest db/sql level applied, for GET /readyz (server/health.ts): the API''s login role may call it, no request role may.';

grant execute on function app_private.applied_sql_level() to authenticator;

-- Per-address sign-in limits could be dodged (contract section 3, amended): an IPv4 address at its
-- limit passed again written as the IPv4-mapped IPv6 address `::ffff:203.0.113.78`, and one client
-- holds a whole IPv6 /64 (35 addresses of one /64 got 35 sessions against a limit of 30). The key of
-- a client address is now its IPv4 address for an IPv4-mapped one, and its /64 network for any
-- other IPv6 address. A value that is not an address (no socket address at all) keys as given.
create or replace function app_private.client_address_key(
  p_address text
)
  returns text
  language plpgsql
  immutable
  set search_path = pg_catalog
  as $$
declare
  v_address inet;
begin
  begin
    -- A zone index (fe80::1%eth0) names a link, not a client.
    v_address := split_part(p_address, '%', 1)::inet;
  exception when invalid_text_representation then
    return p_address;
  end;
  if family(v_address) = 4 then
    return host(v_address);
  elsif v_address << inet '::ffff:0.0.0.0/96' then
    return host(inet '0.0.0.0' + (v_address - inet '::ffff:0.0.0.0'));
  end if;
  return network(set_masklen(v_address, 64))::text;
end
$$;

comment on function app_private.client_address_key(text) is
  'The key an address-based limit counts a client address under: an IPv4-mapped address as its IPv4 address, any other IPv6 address as its /64. Used by app.take_address_limit (POST /auth/otp/request, POST /auth/anonymous/session).';

-- Timestamps in the archive as the API writes them (ISO-8601 UTC with milliseconds).
create or replace function app_private.iso(
  p_at timestamptz
)
  returns text
  language sql
  immutable
  as $$ select to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

comment on function app_private.iso(timestamp with time zone) is
  'A timestamp as ISO 8601 text in UTC, the form the API answers. Used where SQL writes JSON the API hands out as is (the data export of POST /users/me/exports, built by the worker task export_account).';

grant usage on schema app to app_anonymous;

grant usage on schema app to app_admin;

grant usage on schema app to app_worker;

grant usage on schema app_private to app_worker;

grant usage on schema app_private to authenticator;
