-- Up Migration
-- Database roles (design.md "Roles"). Roles are cluster-wide, so every statement is idempotent:
-- several databases of one cluster (development, test clones) share them.
--
--   authenticator  logs in for the API pools; NOINHERIT, so it holds no privilege of its own and
--                  switches per transaction with `set local role`.
--   app_anonymous  requests without a token: public reads only.
--   app_user       requests with a valid access token; inherits app_anonymous's public grants.
--   app_admin      internal tooling with the admin token; broader policies, never vote positions.
--   app_worker     logs in for graphile-worker; runs security definer task functions.
-- Passwords are not set here: the bootstrap sets them from the owner's credentials (db/roles.ts).
do $$
begin
  if not exists (select from pg_roles where rolname = 'app_anonymous') then
    create role app_anonymous nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'app_user') then
    create role app_user nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'app_admin') then
    create role app_admin nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'authenticator') then
    create role authenticator login noinherit;
  end if;
  if not exists (select from pg_roles where rolname = 'app_worker') then
    create role app_worker login;
  end if;
end
$$;

grant app_anonymous to app_user;
grant app_anonymous, app_user, app_admin to authenticator;

-- Down Migration
-- Roles are shared by every database of the cluster; they are left in place.
