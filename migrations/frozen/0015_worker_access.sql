-- Up Migration
-- The worker role runs graphile-worker: it needs the worker schema (installed before these
-- migrations by db/migrate.ts) and nothing of the application's tables beyond what task functions
-- grant it explicitly.
grant usage on schema graphile_worker to app_worker;
grant select, insert, update, delete on all tables in schema graphile_worker to app_worker;
grant usage, select, update on all sequences in schema graphile_worker to app_worker;
grant execute on all functions in schema graphile_worker to app_worker;

-- graphile-worker enables row-level security on its private tables (so that no API role reads
-- them); the worker role is the one role that works them, so it sees and writes every row.
create policy worker_all on graphile_worker._private_jobs for all to app_worker using (true) with check (true);
create policy worker_all on graphile_worker._private_job_queues for all to app_worker using (true) with check (true);
create policy worker_all on graphile_worker._private_tasks for all to app_worker using (true) with check (true);
create policy worker_all on graphile_worker._private_known_crontabs for all to app_worker using (true) with check (true);

-- Housekeeping task (worker/tasks/purge-expired-auth.ts): expired OTP codes, refresh tokens of
-- sessions over for a day, and rate-limit windows that ended an hour ago.
create function app_private.purge_expired_auth()
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  delete from app_private.otp_codes where expires_at < now() - interval '1 hour';
  delete from app_private.refresh_tokens t using app.sessions s
    where t.session_id = s.id and (s.revoked_at < now() - interval '1 day' or s.expires_at < now() - interval '1 day');
  delete from app_private.rate_limits where window_started_at < now() - interval '1 hour';
$$;

grant usage on schema app_private to app_worker;
grant execute on function app_private.purge_expired_auth() to app_worker;

-- Down Migration
drop function app_private.purge_expired_auth();
drop policy worker_all on graphile_worker._private_known_crontabs;
drop policy worker_all on graphile_worker._private_tasks;
drop policy worker_all on graphile_worker._private_job_queues;
drop policy worker_all on graphile_worker._private_jobs;
revoke all on all functions in schema graphile_worker from app_worker;
revoke all on all sequences in schema graphile_worker from app_worker;
revoke all on all tables in schema graphile_worker from app_worker;
revoke usage on schema graphile_worker from app_worker;
