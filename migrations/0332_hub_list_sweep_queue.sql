-- Up Migration
-- The sweep of 0330 and an action could deadlock. A sweep step held its hub's queue row
-- (app_private.hub_list_propagations, locked for the step) while it updated the hub's list rows;
-- an action held its own list row (moved by the activity trigger) and then, when it found the hub
-- not queued, upserted the same queue row. The step waited for the action's list row, the action
-- for the queue row: one of them was cancelled, possibly a vote.
-- Now no transaction waits for a lock while holding one the other side wants:
-- - actions only insert into app_private.hub_list_dirty (one row per hub, `on conflict do
--   nothing`, and only when the hub has no row: a read otherwise), after their list rows;
-- - the sweep claims a dirty hub in a transaction of its own (deletes its row, records the activity
--   time to carry in app_private.hub_list_sweeps, which no action touches), then moves the hub's
--   list rows in steps that skip any row another transaction is writing (that row keeps its key
--   until the hub's next sweep) and never wait.
-- An action that comes after the claim finds no dirty row and queues the hub again.
-- The functions are in db/sql/activity.sql (app_private.hub_activity_moved,
-- app_private.propagate_hub_activity); this migration makes the two tables and moves the queue.

create table app_private.hub_list_dirty (
  hub_id uuid primary key,
  queued_at timestamptz not null default now()
);
comment on table app_private.hub_list_dirty is
  'Hubs with activity not yet carried to app_private.hub_list_entries (0332): inserted by actions, deleted by the sweep''s claim.';
alter table app_private.hub_list_dirty enable row level security;
alter table app_private.hub_list_dirty force row level security;

create table app_private.hub_list_sweeps (
  hub_id uuid primary key,
  -- A sweep in progress: the activity time it carries and the last user id it reached.
  target_at timestamptz,
  after_user uuid,
  -- The earliest next sweep of the hub: 1 ms per list row after the end of the last one.
  not_before timestamptz not null default now()
);
comment on table app_private.hub_list_sweeps is
  'The propagation sweep''s own state per hub (0332): a sweep in progress, and when the hub may be swept again.';
create index hub_list_sweeps_in_progress on app_private.hub_list_sweeps (not_before) where target_at is not null;
alter table app_private.hub_list_sweeps enable row level security;
alter table app_private.hub_list_sweeps force row level security;

insert into app_private.hub_list_dirty (hub_id) select p.hub_id from app_private.hub_list_propagations p where p.queued or p.target_at is not null;
insert into app_private.hub_list_sweeps (hub_id, not_before) select p.hub_id, p.not_before from app_private.hub_list_propagations p;

drop table app_private.hub_list_propagations;
