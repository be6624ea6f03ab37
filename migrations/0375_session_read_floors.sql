-- Up Migration
-- Where each session's reads may be served from a streaming replica (DATABASE_REPLICA_URLS,
-- db/replicas.ts): the WAL position a replica must have replayed before it shows this session
-- anything. Noted on the primary after every request of the session that the primary served (its
-- writes and its reads), read by the session check of a read that may go to a replica.
-- Unlogged: noting a position writes no WAL and waits for no flush (a transaction that wrote only
-- unlogged rows commits without one). A crash of the primary empties the table; a session without a
-- row gets the primary's position at its next read (app_private.session_read_floor), so losing the
-- rows only sends some reads to the primary, never shows a session its past. A standby cannot read
-- unlogged tables: only the primary reads this one.
create unlogged table app_private.session_read_floors (
  session_id uuid primary key,
  floor pg_lsn not null,
  noted_at timestamptz not null default now()
);
comment on table app_private.session_read_floors is
  'Per session, the WAL position a replica must have replayed before serving the session''s reads (db/replicas.ts; primary only, unlogged).';
alter table app_private.session_read_floors enable row level security;
alter table app_private.session_read_floors force row level security;
