-- Run once, by db/migrate.ts, on a database that has just finished the frozen chain
-- (migrations/frozen/), before db/sql is applied to it: it takes away the policies, triggers and
-- privileges of the API and worker roles that the chain created, so that db/sql, applied by
-- comparison, re-creates exactly what it defines. Never run on a database a running release serves
-- (it locks every table); such a database came from a release long gone.

-- Row-level security policies on our tables and on graphile-worker's (worker.sql grants its role
-- every row there).
do $$
declare
  v record;
begin
  for v in
    select p.polname, p.polrelid::regclass as tbl from pg_catalog.pg_policy p
    join pg_catalog.pg_class c on c.oid = p.polrelid join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('app', 'app_private', 'graphile_worker')
  loop
    execute format('drop policy %I on %s', v.polname, v.tbl);
  end loop;
  -- Triggers on our tables (not the internal ones that enforce foreign keys).
  for v in
    select t.tgname, t.tgrelid::regclass as tbl from pg_catalog.pg_trigger t
    join pg_catalog.pg_class c on c.oid = t.tgrelid join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('app', 'app_private') and not t.tgisinternal
  loop
    execute format('drop trigger %I on %s', v.tgname, v.tbl);
  end loop;
end
$$;

-- Every privilege of the API and worker roles (and of PUBLIC, in our schemas) on schemas, tables,
-- views, columns, sequences and functions. Revoking a table's privileges revokes its columns' too.
revoke all on schema app, app_private from public, app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on all tables in schema app, app_private from public, app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on all sequences in schema app, app_private from public, app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on all functions in schema app, app_private from public, app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on all functions in schema public from app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on schema graphile_worker from app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on all tables in schema graphile_worker from app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on all sequences in schema graphile_worker from app_anonymous, app_user, app_admin, app_worker, authenticator;
revoke all on all functions in schema graphile_worker from app_anonymous, app_user, app_admin, app_worker, authenticator;
