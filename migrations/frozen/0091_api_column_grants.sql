-- Up Migration
-- Column grants of the API roles (contract section 10): app_anonymous and app_user may select only
-- the columns REST shows the viewers their policies let see a row, so internal GraphQL, which shows
-- a user token whatever app_user may select, shows no more than REST. Every table-wide select of
-- these roles becomes a column list (a table-wide grant would also expose every column added
-- later). Revoking a table's privilege revokes its column privileges too, so each table starts
-- clean. app_user inherits app_anonymous's grants. app_admin's grants are unchanged.
--
-- Taken away (REST shows them to nobody who may read the row, or needs them only through a
-- function of 0090):
--   users.created_at; assets' upload, owner, purpose, type, size, checksum and time (REST shows an
--   asset only as its URL); articles.created_by/created_at; comments.deleted_at and
--   posts.deleted_at (policies hide deleted rows); follows.created_at (lists page by seq);
--   hubs.created_by/created_at; hub_profiles.updated_at; blocks.created_at;
--   hub_discussions.created_at; hub_invite_links.token/created_by/created_at (the token is a
--   capability REST gives only its creator, once); hub_invitations.invitee_id (it maps invited
--   phones to accounts) and responded_at; hub_join_requests' links and decision columns;
--   hub_memberships.joined_at and content_muted (invited and pending viewers may see the rows);
--   phone_identities.verified_at; post_hubs.added_by; reports' content (REST answers only its id).
-- Kept though REST shows no list of them: the viewer's own sessions, upload intents and vote
-- receipts (rows of the viewer only; the SQL policy tests read them).

revoke select on app.users, app.assets, app.articles, app.comments, app.follows, app.posts, app.reserved_handles,
  app.hubs, app.hub_profiles, app.blocks, app.hub_discussions, app.hub_invite_links, app.hub_invitations,
  app.hub_join_requests, app.hub_memberships, app.notifications, app.phone_identities, app.post_hubs, app.reports,
  app.saved_posts, app.sessions, app.upload_intents, app.vote_receipts, app.vote_scope_receipts
  from app_anonymous, app_user;

-- Public reads (rows: policies; app_user inherits these).
grant select (id, username, full_name, bio, profile_asset_id) on app.users to app_anonymous;
grant select (id, object_key) on app.assets to app_anonymous;
grant select (id, kind, url, title, body, asset_ids) on app.articles to app_anonymous;
grant select (id, post_id, author_id, parent_id, text, created_at, reply_count) on app.comments to app_anonymous;
grant select (follower_id, followee_id, seq) on app.follows to app_anonymous;
grant select (id, author_id, article_id, thought_text, slider_text, slider_left_label, slider_right_label, visibility,
  source_post_id, created_at, repost_count, comment_count) on app.posts to app_anonymous;
grant select (handle) on app.reserved_handles to app_anonymous;
grant select (id, name, description, profile_asset_id, custom_link, is_recommended, member_count, last_activity_at)
  on app.hubs to app_anonymous;
grant select (user_id, display_name, profile_asset_id) on app.hub_profiles to app_anonymous;

-- Signed-in reads (rows: policies).
grant select (blocker_id, blocked_id) on app.blocks to app_user;
grant select (id, hub_id, post_id, last_activity_at) on app.hub_discussions to app_user;
grant select (id, hub_id, expires_at) on app.hub_invite_links to app_user;
grant select (id, hub_id, invited_by, masked_phone, requires_admin_approval, status, created_at, expires_at)
  on app.hub_invitations to app_user;
grant select (id, hub_id, user_id, source, status, created_at) on app.hub_join_requests to app_user;
grant select (hub_id, user_id, role) on app.hub_memberships to app_user;
grant select (id, recipient_id, type, actor_id, post_id, comment_id, hub_id, invitation_id, join_request_id, created_at, read_at)
  on app.notifications to app_user;
grant select (user_id, phone_e164) on app.phone_identities to app_user;
grant select (post_id, hub_id, kind, created_at) on app.post_hubs to app_user;
-- INSERT ... RETURNING id in app.report_* (security invoker).
grant select (id) on app.reports to app_user;
grant select (user_id, post_id, saved_at) on app.saved_posts to app_user;
grant select (id, user_id, created_at, expires_at, revoked_at) on app.sessions to app_user;
grant select (id, owner_id, purpose, content_type, content_length, object_key, created_at, expires_at, completed_at)
  on app.upload_intents to app_user;
grant select (post_id, user_id, voted_at) on app.vote_receipts to app_user;
grant select (post_id, user_id, hub_id) on app.vote_scope_receipts to app_user;

-- Down Migration
revoke select on app.users, app.assets, app.articles, app.comments, app.follows, app.posts, app.reserved_handles,
  app.hubs, app.hub_profiles, app.blocks, app.hub_discussions, app.hub_invite_links, app.hub_invitations,
  app.hub_join_requests, app.hub_memberships, app.notifications, app.phone_identities, app.post_hubs, app.reports,
  app.saved_posts, app.sessions, app.upload_intents, app.vote_receipts, app.vote_scope_receipts
  from app_anonymous, app_user;
grant select on app.articles, app.assets, app.comments, app.follows, app.hub_profiles, app.hubs, app.posts, app.reserved_handles
  to app_anonymous;
grant select on app.blocks, app.hub_discussions, app.hub_invite_links, app.hub_join_requests, app.hub_memberships, app.hub_profiles,
  app.hubs, app.phone_identities, app.post_hubs, app.reports, app.saved_posts, app.upload_intents, app.vote_receipts,
  app.vote_scope_receipts to app_user;
grant select (id, username, full_name, bio, profile_asset_id, created_at) on app.users to app_anonymous;
grant select (id, hub_id, invited_by, invitee_id, masked_phone, requires_admin_approval, status, created_at, expires_at, responded_at)
  on app.hub_invitations to app_user;
grant select (id, recipient_id, type, actor_id, post_id, comment_id, hub_id, invitation_id, join_request_id, created_at, read_at)
  on app.notifications to app_user;
grant select (id, user_id, created_at, expires_at, revoked_at) on app.sessions to app_user;
