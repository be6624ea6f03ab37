-- graphile-worker: what the worker role may do with the job tables, and the liveness heartbeat.
-- A worker process holds one connection for as long as it lives, with a session advisory lock on its
-- id: the lock says the process is alive whatever its beats do. A process starved of CPU (or paused)
-- still holds its connection, since the kernel keeps it open and answers TCP keepalives for it; a
-- process that died loses it at once (its sockets close) or, a vanished host, when the server's TCP
-- keepalives on that connection fail (worker/liveness.ts sets them).
create or replace function app_private.worker_presence_key(
  p_worker_id text
)
  returns bigint
  language sql
  immutable
  set search_path = pg_catalog
  as $$
  select
    hashtextextended('worker_presence:' || p_worker_id, 0);
$$;

comment on function app_private.worker_presence_key(text) is
  'The session advisory lock key a live worker process holds (app_private.worker_present) and app_private.worker_heartbeat looks for in pg_locks.';

create or replace function app_private.worker_present(
  p_worker_id text
)
  returns boolean
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    pg_try_advisory_lock(app_private.worker_presence_key(p_worker_id));
$$;

comment on function app_private.worker_present(text) is
  'Takes, on the calling connection, the session advisory lock that tells the other workers this worker process is alive (never waits). Called by worker/liveness.ts once per presence connection, before its first beat.';

grant execute on function app_private.worker_present(text) to app_worker;

-- One beat of a live worker, and the jobs of the dead taken back. A worker is dead when it is silent
-- for p_dead_after (by the database's clock) and no connection holds its presence lock: a live process
-- that could not beat (starved of CPU) keeps its jobs. Returns the ids of the workers declared dead by
-- this call (each by exactly one caller: the delete decides).
create or replace function app_private.worker_heartbeat(
  p_worker_id text,
  p_dead_after interval
)
  returns text[]
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_dead text[];
begin
  insert into app_private.worker_heartbeats as w (worker_id) values (p_worker_id)
    on conflict (worker_id) do update set seen_at = now();
  with held as (
    select (l.classid::bigint << 32) | l.objid::bigint as key
    from pg_locks l
    where l.locktype = 'advisory' and l.objsubid = 1 and l.granted
      and l.database = (select d.oid from pg_database d where d.datname = current_database())
  ), gone as (
    delete from app_private.worker_heartbeats w
    where w.seen_at < now() - p_dead_after and w.worker_id <> p_worker_id
      and not exists (select from held h where h.key = app_private.worker_presence_key(w.worker_id))
    returning w.worker_id
  )
  select array_agg(g.worker_id order by g.worker_id) into v_dead from gone g;
  if v_dead is not null then
    perform graphile_worker.force_unlock_workers(v_dead);
  end if;
  return coalesce(v_dead, '{}');
end
$$;

comment on function app_private.worker_heartbeat(text, interval) is
  'Liveness of worker processes: records a beat of this worker and hands the jobs of workers silent for p_dead_after whose presence lock no connection holds (app_private.worker_present) back to the queue (graphile_worker.force_unlock_workers), so a dead worker''s jobs run again within seconds and a live one starved of CPU keeps them. Called by every worker process every p_dead_after / 5 (worker/liveness.ts).';

grant execute on function app_private.worker_heartbeat(text, interval) to app_worker;

-- A worker that stops cleanly forgets itself (its jobs are finished or released by then).
create or replace function app_private.worker_stopped(
  p_worker_id text
)
  returns void
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  delete from app_private.worker_heartbeats
  where worker_id = p_worker_id;
$$;

comment on function app_private.worker_stopped(text) is
  'Forgets a worker that stops cleanly, so no other worker declares it dead. Called by worker/liveness.ts when the worker runner stops.';

grant execute on function app_private.worker_stopped(text) to app_worker;

-- The worker role runs graphile-worker: it needs the worker schema (installed before the migrations
-- by db/migrate.ts) and nothing of the application's tables beyond what task functions grant it.
grant usage on schema graphile_worker to app_worker;

grant select, insert, update, delete on all tables in schema graphile_worker to app_worker;

grant usage, select, update on all sequences in schema graphile_worker to app_worker;

grant execute on all functions in schema graphile_worker to app_worker;

alter table graphile_worker._private_job_queues enable row level security;

create policy worker_all on graphile_worker._private_job_queues
  for all to app_worker
  using (true)
  with check (true);

comment on policy worker_all on graphile_worker._private_job_queues is
  'graphile-worker keeps its job queues under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';

alter table graphile_worker._private_jobs enable row level security;

-- graphile-worker enables row-level security on its private tables (so that no API role reads
-- them); the worker role is the one role that works them, so it sees and writes every row.
create policy worker_all on graphile_worker._private_jobs
  for all to app_worker
  using (true)
  with check (true);

comment on policy worker_all on graphile_worker._private_jobs is
  'graphile-worker keeps its jobs under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';

alter table graphile_worker._private_known_crontabs enable row level security;

create policy worker_all on graphile_worker._private_known_crontabs
  for all to app_worker
  using (true)
  with check (true);

comment on policy worker_all on graphile_worker._private_known_crontabs is
  'graphile-worker keeps its known crontabs under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';

alter table graphile_worker._private_tasks enable row level security;

create policy worker_all on graphile_worker._private_tasks
  for all to app_worker
  using (true)
  with check (true);

comment on policy worker_all on graphile_worker._private_tasks is
  'graphile-worker keeps its task names under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';
