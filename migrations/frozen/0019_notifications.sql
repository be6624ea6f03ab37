-- Up Migration
-- In-app notifications (spec 2.7, part 6; contract section 9): one table for every type. Rows are
-- written only by security definer functions and worker tasks; the API roles read them through
-- the policy below and mark them read through app.mark_notifications_read.
create type app.notification_type as enum (
  'post_voted', 'post_commented', 'post_reposted', 'post_shared_to_feed', 'user_followed',
  'hub_post_created', 'post_shared_to_hub', 'hub_invite_received', 'hub_join_request_created',
  'hub_join_request_approved', 'hub_join_request_rejected', 'hub_member_joined', 'hub_member_removed',
  'hub_role_changed');

create table app.notifications (
  id uuid primary key default gen_random_uuid(),
  recipient_id uuid not null references app.users (id),
  type app.notification_type not null,
  actor_id uuid references app.users (id),
  -- Context ids. No foreign keys: a notification outlives a deleted post or comment.
  post_id uuid,
  comment_id uuid,
  hub_id uuid,
  invitation_id uuid,
  join_request_id uuid,
  created_at timestamptz not null default now(),
  read_at timestamptz,
  -- The writing transaction: live delivery reads rows by finished transactions (server/sse).
  tx_id xid8 not null default pg_current_xact_id()
);
-- The list, newest first, and the unread count.
create index notifications_recipient_created on app.notifications (recipient_id, created_at desc, id desc);
create index notifications_recipient_unread on app.notifications (recipient_id) where read_at is null;
create index notifications_tx_id on app.notifications (tx_id);

alter table app.notifications enable row level security;
alter table app.notifications force row level security;

-- Whether a notification may be shown to a user now (spec 6.3 rules 3-5). Rows are never deleted
-- for visibility: hidden rows are kept and reappear when the rule allows them again.
--   * only the recipient ever sees a row;
--   * a row with a hub_id needs a Hub-ready recipient who is an active member of that hub: hubs do
--     not exist yet, so such rows fail closed until the hubs migrations replace this function;
--   * the posts migrations add rule 4 (legacy null-hub post_reposted rows of private hub reposts).
-- One function for the list policy, mark-read and the live stream, so they cannot disagree.
create function app.notification_visible_to(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select p_notification.recipient_id = p_user_id and p_notification.hub_id is null $$;

-- A user reads the notifications visible to them, and nothing else.
create policy notifications_select_visible on app.notifications
  for select to app_user
  using (recipient_id = (select app.viewer_id()) and app.notification_visible_to(notifications, (select app.viewer_id())));

grant select (id, recipient_id, type, actor_id, post_id, comment_id, hub_id, invitation_id, join_request_id, created_at, read_at)
  on app.notifications to app_user;
grant execute on function app.notification_visible_to(app.notifications, uuid) to app_user;

-- Down Migration
drop table app.notifications cascade;
drop type app.notification_type;
