-- graphile-worker: what the worker role may do with the job tables, and the liveness heartbeat.

-- One beat of a live worker, and the jobs of the dead taken back. Returns the ids of the workers
-- declared dead by this call (each by exactly one caller: the delete decides).
create or replace function app_private.worker_heartbeat(p_worker_id text, p_dead_after interval)
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
comment on function app_private.worker_heartbeat(text, interval) is 'Liveness of worker processes: records a beat of this worker and hands the jobs of workers silent for p_dead_after back to the queue (graphile_worker.force_unlock_workers), so a dead worker''s jobs run again within seconds. Called by every worker process every p_dead_after / 5 (worker/liveness.ts).';
grant execute on function app_private.worker_heartbeat(text, interval) to app_worker;

-- A worker that stops cleanly forgets itself (its jobs are finished or released by then).
create or replace function app_private.worker_stopped(p_worker_id text)
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  delete from app_private.worker_heartbeats where worker_id = p_worker_id;
$$;
comment on function app_private.worker_stopped(text) is 'Forgets a worker that stops cleanly, so no other worker declares it dead. Called by worker/liveness.ts when the worker runner stops.';
grant execute on function app_private.worker_stopped(text) to app_worker;

-- The worker role runs graphile-worker: it needs the worker schema (installed before the migrations
-- by db/migrate.ts) and nothing of the application's tables beyond what task functions grant it.
grant usage on schema graphile_worker to app_worker;
grant select, insert, update, delete on all tables in schema graphile_worker to app_worker;
grant usage, select, update on all sequences in schema graphile_worker to app_worker;
grant execute on all functions in schema graphile_worker to app_worker;

alter table graphile_worker._private_job_queues enable row level security;

create policy worker_all on graphile_worker._private_job_queues for all to app_worker using (true) with check (true);
comment on policy worker_all on graphile_worker._private_job_queues is 'graphile-worker keeps its job queues under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';

alter table graphile_worker._private_jobs enable row level security;

-- graphile-worker enables row-level security on its private tables (so that no API role reads
-- them); the worker role is the one role that works them, so it sees and writes every row.
create policy worker_all on graphile_worker._private_jobs for all to app_worker using (true) with check (true);
comment on policy worker_all on graphile_worker._private_jobs is 'graphile-worker keeps its jobs under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';

alter table graphile_worker._private_known_crontabs enable row level security;

create policy worker_all on graphile_worker._private_known_crontabs for all to app_worker using (true) with check (true);
comment on policy worker_all on graphile_worker._private_known_crontabs is 'graphile-worker keeps its known crontabs under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';

alter table graphile_worker._private_tasks enable row level security;

create policy worker_all on graphile_worker._private_tasks for all to app_worker using (true) with check (true);
comment on policy worker_all on graphile_worker._private_tasks is 'graphile-worker keeps its task names under row-level security, out of reach of the API roles; app_worker, the role the worker process (worker/runner.ts) runs every task as, reads and writes every row.';

