-- Up Migration
-- Taking back a dead worker's jobs within seconds (for every task). graphile-worker locks a job with
-- the id of the worker pool that runs it (`locked_by`) and only unlocks jobs locked for 4 hours, so
-- a worker process killed mid-job held its jobs for 4 hours. Every worker process now records its
-- pool id here before it takes a job and beats every few seconds (worker/liveness.ts); any worker
-- that beats also takes back the jobs of workers silent for longer than the dead-after time, with
-- graphile-worker's own graphile_worker.force_unlock_workers, in the same transaction that forgets
-- them. A job is then run again by a live worker: every task must be idempotent per effect (a key
-- per effect, `on conflict`). A worker that never recorded itself (an older version, a one-off
-- runOnce) is never declared dead here: graphile-worker's 4-hour reset still covers it.
create table app_private.worker_heartbeats (
  worker_id text primary key,
  started_at timestamptz not null default now(),
  seen_at timestamptz not null default now()
);

create index worker_heartbeats_seen_at on app_private.worker_heartbeats (seen_at);

-- One beat of a live worker, and the jobs of the dead taken back. Returns the ids of the workers
-- declared dead by this call (each by exactly one caller: the delete decides).
create function app_private.worker_heartbeat(p_worker_id text, p_dead_after interval)
  returns text[]
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_dead text[];
begin
  insert into app_private.worker_heartbeats as w (worker_id) values (p_worker_id)
    on conflict (worker_id) do update set seen_at = now();
  with gone as (
    delete from app_private.worker_heartbeats w
    where w.seen_at < now() - p_dead_after and w.worker_id <> p_worker_id
    returning w.worker_id
  )
  select array_agg(g.worker_id order by g.worker_id) into v_dead from gone g;
  if v_dead is not null then
    perform graphile_worker.force_unlock_workers(v_dead);
  end if;
  return coalesce(v_dead, '{}');
end
$$;

-- A worker that stops cleanly forgets itself (its jobs are finished or released by then).
create function app_private.worker_stopped(p_worker_id text)
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  delete from app_private.worker_heartbeats where worker_id = p_worker_id;
$$;

grant execute on function app_private.worker_heartbeat(text, interval) to app_worker;
grant execute on function app_private.worker_stopped(text) to app_worker;

-- Down Migration
drop function app_private.worker_stopped(text);
drop function app_private.worker_heartbeat(text, interval);
drop table app_private.worker_heartbeats;
