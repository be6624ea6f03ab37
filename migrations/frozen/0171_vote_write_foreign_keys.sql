-- Up Migration
-- No key-share locks on hot rows from a vote's writes (issue 12), as 0109 did for scope receipts.
-- A foreign key check locks the referenced row (FOR KEY SHARE); when concurrent transactions lock
-- the same row, PostgreSQL makes a multixact for them and rewrites the row's lock word: every vote
-- on one author's posts locked the author's users row (the post_voted notification's recipient),
-- every vote on a hub post locked the hub's row (hub_activity), and every voter of one post locked
-- the post's row (the receipt). These keys guard nothing that can happen.
-- Users, posts and hubs are never deleted (accounts and hubs have no delete; deleting a post sets
-- deleted_at), so a referenced row never goes away, and these rows are written only by
-- security-definer functions from ids they have just read:
-- - vote_receipts: by app.cast_vote, the post it read and the viewer whose live session it checked;
-- - hub_activity: by app.cast_vote and app_private.touch_hub_activity, the acting viewer and a hub
--   read from the post's placements, or one whose membership, invitation or message the same
--   action wrote (those rows keep their keys);
-- - notifications: recipients are authors, members, followees and invitees read from their rows;
--   two hub admin actions (app.change_hub_role, app.remove_hub_member) notify the user id they are
--   given, where an id of no user failed on this key and now leaves a row that no one can read.
-- The activity_events keys stay (the feeds read that table; it is not changed here).
alter table app.vote_receipts drop constraint vote_receipts_post_id_fkey;
alter table app.vote_receipts drop constraint vote_receipts_user_id_fkey;
alter table app.notifications drop constraint notifications_recipient_id_fkey;
alter table app.hub_activity drop constraint hub_activity_hub_id_fkey;
alter table app.hub_activity drop constraint hub_activity_user_id_fkey;
-- Internal GraphQL (PostGraphile) keeps the relations these keys gave it, as smart tags: the same
-- fields, same policies, no constraint in the database.
comment on table app.vote_receipts is E'@foreignKey (post_id) references app.posts (id)\n@foreignKey (user_id) references app.users (id)';
comment on table app.notifications is E'@foreignKey (recipient_id) references app.users (id)';
comment on table app.hub_activity is E'@foreignKey (hub_id) references app.hubs (id)\n@foreignKey (user_id) references app.users (id)';

-- Down Migration
comment on table app.hub_activity is null;
comment on table app.notifications is null;
comment on table app.vote_receipts is null;
alter table app.hub_activity add constraint hub_activity_user_id_fkey foreign key (user_id) references app.users (id);
alter table app.hub_activity add constraint hub_activity_hub_id_fkey foreign key (hub_id) references app.hubs (id);
alter table app.notifications add constraint notifications_recipient_id_fkey foreign key (recipient_id) references app.users (id);
alter table app.vote_receipts add constraint vote_receipts_user_id_fkey foreign key (user_id) references app.users (id);
alter table app.vote_receipts add constraint vote_receipts_post_id_fkey foreign key (post_id) references app.posts (id);
