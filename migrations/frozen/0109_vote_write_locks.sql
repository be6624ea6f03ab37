-- Up Migration
-- Fewer locks and index writes per vote (issue 12).
-- 1. Scope receipts are written only by app.cast_vote, right after the vote receipt they belong to
--    and after reading the hub placements; hubs and receipts are never deleted. Their foreign keys
--    guarded nothing, yet each vote paid a key-share lock per scope row: on its own receipt, and on
--    the hub's row, which every voter of a hub's posts locked (a multixact per concurrent voter).
-- 2. Counter rows are rewritten by every vote and no index covers a count column: with room left on
--    their pages the new row version stays on the same page (a HOT update: no index entries).
alter table app.vote_scope_receipts drop constraint vote_scope_receipts_post_id_user_id_fkey;
alter table app.vote_scope_receipts drop constraint vote_scope_receipts_hub_id_fkey;
alter table app.vote_counters set (fillfactor = 50);

-- Down Migration
alter table app.vote_counters reset (fillfactor);
alter table app.vote_scope_receipts add constraint vote_scope_receipts_hub_id_fkey foreign key (hub_id) references app.hubs (id);
alter table app.vote_scope_receipts add constraint vote_scope_receipts_post_id_user_id_fkey
  foreign key (post_id, user_id) references app.vote_receipts (post_id, user_id);
