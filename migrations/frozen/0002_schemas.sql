-- Up Migration
-- app          tables and functions the API roles may use (under row-level security).
-- app_private  secrets and bookkeeping (OTP codes, refresh tokens, rate limits): no API role has any
--              privilege here; only security definer functions owned by the migration role touch it.
create schema app;
create schema app_private;

revoke all on schema app_private from public;
grant usage on schema app to app_anonymous, app_admin, app_worker;

-- Functions are executable by PUBLIC by default; every grant in this project is explicit instead.
alter default privileges revoke execute on functions from public;
alter default privileges in schema app revoke execute on functions from public;
alter default privileges in schema app_private revoke execute on functions from public;

-- Down Migration
drop schema app_private cascade;
drop schema app cascade;
