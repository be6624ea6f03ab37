-- Up Migration
-- Triggers are named _NNN_<what>: PostgreSQL fires the triggers of one event on a table in name
-- order, so the number declares the order (db/sql). On a database db/sql was applied to, each
-- trigger is renamed in place and keeps firing; db/sql, applied next, replaces a definition that
-- changed in one transaction per table. A fresh database has no triggers while migrations run
-- (db/sql creates them under these names), so its rows are skipped. Tables are locked in name
-- order, under the runner's lock_timeout (retried whole).
do $$
declare
  v record;
begin
  for v in
    select r.tbl, r.old_name, r.new_name
    from (values
      ('app.blocks', 'blocks_remove_follows', '_300_remove_follows'),
      ('app.comments', 'comments_counted_delete', '_500_count_delete'),
      ('app.comments', 'comments_counted_insert', '_500_count_insert'),
      ('app.comments', 'comments_counted_update', '_500_count_update'),
      ('app.follows', 'follows_counted_delete', '_500_count_delete'),
      ('app.follows', 'follows_counted_insert', '_500_count_insert'),
      ('app.follows', 'follows_counted_update', '_500_count_update'),
      ('app.hub_activity', 'hub_activity_list_inserts', '_300_hub_lists_insert'),
      ('app.hub_activity', 'hub_activity_list_updates', '_300_hub_lists_update'),
      ('app.hub_discussion_messages', 'hub_discussion_messages_count', '_400_count_message'),
      ('app.hub_invitations', 'hub_invitations_list_entry', '_300_list_entry'),
      ('app.hub_join_requests', 'hub_join_requests_list_entry', '_300_list_entry'),
      ('app.hub_memberships', 'hub_memberships_counted_delete', '_500_count_delete'),
      ('app.hub_memberships', 'hub_memberships_counted_insert', '_500_count_insert'),
      ('app.hub_memberships', 'hub_memberships_counted_update', '_500_count_update'),
      ('app.hub_memberships', 'hub_memberships_list_entry', '_300_list_entry'),
      ('app.hub_profiles', 'hub_profiles_check_profile_asset', '_100_check_profile_asset'),
      ('app.hub_profiles', 'hub_profiles_queue_replaced_photo', '_800_queue_replaced_photo'),
      ('app.hubs', 'hubs_name_words_insert', '_300_name_words_insert'),
      ('app.hubs', 'hubs_name_words_update', '_300_name_words_update'),
      ('app.moderation_log', 'moderation_log_append_only', '_100_append_only'),
      ('app.moderation_log', 'moderation_log_no_truncate', '_100_no_truncate'),
      ('app.notifications', 'notifications_count_unread_changes', '_500_count_unread_update'),
      ('app.notifications', 'notifications_count_unread_deletes', '_500_count_unread_delete'),
      ('app.notifications', 'notifications_count_unread_inserts', '_500_count_unread_insert'),
      ('app.notifications', 'notifications_record_badge_changes', '_800_record_badge_changes'),
      ('app.phone_identities', 'phone_identities_attach_invitations', '_300_attach_invitations'),
      ('app.post_hubs', 'post_hubs_seed_vote_counters', '_300_seed_vote_counters'),
      ('app.posts', 'posts_counted_delete', '_500_count_delete'),
      ('app.posts', 'posts_counted_insert', '_500_count_insert'),
      ('app.posts', 'posts_counted_update', '_500_count_update'),
      ('app.posts', 'posts_move_repost_unread', '_400_move_repost_unread'),
      ('app.posts', 'posts_move_repost_unread_on_delete', '_400_move_repost_unread_delete'),
      ('app.posts', 'posts_seed_vote_counters', '_300_seed_vote_counters'),
      ('app.posts', 'posts_votes_received_delete', '_510_move_votes_received_delete'),
      ('app.posts', 'posts_votes_received_update', '_510_move_votes_received_update'),
      ('app.reports', 'reports_snapshot', '_200_snapshot'),
      ('app.sessions', 'sessions_announce_revoked', '_800_announce_revoked'),
      ('app.sessions', 'sessions_forget_push_devices', '_300_forget_push_devices'),
      ('app.users', 'users_check_profile_asset', '_100_check_profile_asset'),
      ('app.users', 'users_name_words_insert', '_300_name_words_insert'),
      ('app.users', 'users_name_words_update', '_300_name_words_update'),
      ('app.users', 'users_queue_replaced_photo', '_800_queue_replaced_photo'),
      ('app.users', 'users_reserved_handle', '_110_reject_reserved_handle'),
      ('app.vote_receipts', 'vote_receipts_counted_delete', '_500_count_delete'),
      ('app.vote_receipts', 'vote_receipts_counted_insert', '_500_count_insert'),
      ('app.vote_receipts', 'vote_receipts_counted_update', '_500_count_update')
    ) r (tbl, old_name, new_name)
    where exists (select from pg_catalog.pg_trigger t where t.tgrelid = pg_catalog.to_regclass(r.tbl) and t.tgname = r.old_name)
    order by r.tbl, r.old_name
  loop
    execute pg_catalog.format('alter trigger %I on %s rename to %I', v.old_name, v.tbl, v.new_name);
  end loop;
end
$$;
