-- Notifications: who may see which, the pages and the live delivery batch, unread counters and badges,
-- settings, the fan-out of hub notifications.
-- Used by the notifications policy for every row it filters: a PL/pgSQL simple expression (no
-- statement of its own per call) instead of a SQL function planned and started per call.
create or replace function app.notification_visible_to(
  p_notification app.notifications,
  p_user_id uuid
)
  returns boolean
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return app_private.notification_visible(p_notification, p_user_id); end $$;

comment on function app.notification_visible_to(app.notifications, uuid) is
  'Whether a notification is visible to a user now (the list''s rule, app_private.notification_visible, behind a PL/pgSQL door). The policy notifications_select_visible and the stream''s resume (app.notification_replay) filter by it: GET /notifications, GET /notifications/stream.';

grant execute on function app.notification_visible_to(app.notifications, uuid) to app_user;

-- The notification list's rows (app.notification_rows: a page of ids, read as the viewer) joined
-- each row's actor and the actor's photo freely. For a user with 1,000,000 notifications the
-- statistics led the planner to a plan kept for any page (a generic plan, after a few calls) that
-- scanned app.assets once per notification row, testing the assets policy
-- (app.asset_in_visible_use: four probes) on every scanned asset, actor or not: rows without an
-- actor (post_voted, most of such a list) paid for it too, and the list's p95 was 1.7 times that of
-- a user with 1,000. The actor and the photo are now lateral subqueries with a limit, read only for
-- a row that has them; the columns are the same.
create or replace function app.notification_rows(
  p_ids uuid[]
)
  returns table(
      notification_id uuid,
      type app.notification_type,
      created_at timestamptz,
      is_read boolean,
      post_id uuid,
      comment_id uuid,
      hub_id uuid,
      invitation_id uuid,
      join_request_id uuid,
      actor_id uuid,
      actor_username text,
      actor_full_name text,
      actor_photo_key text
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    n.id,
    n.type,
    n.created_at,
    n.read_at is not null,
    n.post_id,
    n.comment_id,
    n.hub_id,
    n.invitation_id,
    n.join_request_id,
    u.id,
    u.username,
    u.full_name,
    a.object_key
  from
    app.notifications n
    -- `... is not null` first: a test of the outer row alone, made once per row before the scan (a
    -- one-time filter), so a row without an actor or photo reads neither table nor runs a policy.
  left join lateral(
    select
      u.id,
      u.username,
      u.full_name,
      u.profile_asset_id
    from
      app.users u
    where
      n.actor_id is not null
      and u.id = n.actor_id
    limit 1) u on true
  left join lateral(
    select
      a.object_key
    from
      app.assets a
    where
      u.profile_asset_id is not null
      and a.id = u.profile_asset_id
    limit 1) a on true
where
  n.id = any(p_ids)
$$;

comment on function app.notification_rows(uuid[]) is
  'The rows of a page of notification ids with each row''s actor and the actor''s photo, read as the viewer under the list''s policy: GET /notifications and the stream''s resumed and live rows (GET /notifications/stream).';

grant execute on function app.notification_rows(uuid[]) to app_user;

-- Mark-read (PATCH /notifications/read, spec 4.7). With p_all, every unread row visible to the
-- viewer now; otherwise the listed ids. Rules:
--   * an id that does not exist or belongs to someone else fails the whole call with
--     NOTIFICATION_NOT_FOUND, and nothing changes (the check runs before the update);
--   * a row of the viewer that is hidden now (a hub row while not an active member) is kept
--     unread and not counted, exactly as if it were already read;
--   * the answer is the number of rows that went from unread to read.
-- Security definer because the API roles have no UPDATE on notifications: read_at is the only
-- column that ever changes, and only here.
create or replace function app.mark_notifications_read(
  p_ids uuid[],
  p_all boolean
)
  returns int
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_updated int;
begin
  if not p_all and exists (
    select from unnest(p_ids) as wanted(id)
    where not exists (select from app.notifications n where n.id = wanted.id and n.recipient_id = v_viewer)) then
    perform app.fail('NOTIFICATION_NOT_FOUND');
  end if;
  update app.notifications n set read_at = now()
  where n.recipient_id = v_viewer
    and n.read_at is null
    and (p_all or n.id = any (p_ids))
    and app.notification_visible_to(n, v_viewer);
  get diagnostics v_updated = row_count;
  return v_updated;
end
$$;

comment on function app.mark_notifications_read(uuid[], boolean) is
  'PATCH /notifications/read: marks the listed rows (or every unread visible row) read; an unknown or foreign id fails the whole call (NOTIFICATION_NOT_FOUND); answers how many went from unread to read. The only writer of read_at.';

grant execute on function app.mark_notifications_read(uuid[], boolean) to app_user;

-- Leadership of the dispatcher: a session-level advisory lock keyed by the watermark table's oid
-- (unique within the database). At most one connection holds it; it is released when that
-- connection ends, and another process takes it over on its next try (every second).
create or replace function app_private.take_notification_dispatch()
  returns boolean
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    pg_try_advisory_lock('app_private.notification_dispatch'::regclass::oid::bigint)
$$;

comment on function app_private.take_notification_dispatch() is
  'Leadership of the notification dispatcher: a session advisory lock one connection of one API process holds (server/sse/dispatcher.ts, every second).';

grant execute on function app_private.take_notification_dispatch() to authenticator;

-- The dispatcher, announcing ranges that hold new rows or badge changes; the payload says which
-- ({"from", "to"}, plus "badges": true when the range holds badge changes).
create or replace function app_private.dispatch_notifications()
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_to xid8 := pg_snapshot_xmin(pg_current_snapshot());
  v_from xid8;
  v_rows boolean;
  v_badges boolean;
begin
  select d.dispatched_to into v_from from app_private.notification_dispatch d;
  if v_to <= v_from then
    return;
  end if;
  v_rows := exists (select from app.notifications n where n.tx_id >= v_from and n.tx_id < v_to);
  v_badges := exists (select from app_private.badge_changes b where b.tx_id >= v_from and b.tx_id < v_to);
  if v_rows or v_badges then
    update app_private.notification_dispatch set dispatched_to = v_to;
    perform pg_notify('notifications', case when v_badges
      then json_build_object('from', v_from::text, 'to', v_to::text, 'badges', true)
      else json_build_object('from', v_from::text, 'to', v_to::text) end::text);
  end if;
end
$$;

comment on function app_private.dispatch_notifications() is
  'The dispatcher''s step: announces the transaction ranges that hold new notification rows or badge changes (notify on the channel notifications), and moves the watermark (server/sse/dispatcher.ts). What the streams of GET /notifications/stream wait for.';

grant execute on function app_private.dispatch_notifications() to authenticator;

create or replace function app_private.queue_hub_fanout(
  p_hub_id uuid,
  p_type app.notification_type,
  p_audience text,
  p_except uuid[],
  p_join_request_id uuid default null,
  p_post_id uuid default null,
  p_actor_id uuid default null
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    graphile_worker.add_job('hub_notification_fanout', json_build_object('hubId', p_hub_id, 'type', p_type, 'audience', p_audience,
      'actorId', coalesce(p_actor_id, app.viewer_id()), 'except', p_except, 'joinRequestId', p_join_request_id,
      'postId', p_post_id, 'key', gen_random_uuid()));
$$;

comment on function app_private.queue_hub_fanout(uuid, app.notification_type, text, uuid[], uuid, uuid, uuid) is
  'Queues the worker task hub_notification_fanout for a hub notification to its members (an audience, the recipients to skip, the actor, the post): called by the hub actions that notify members (posting into a hub, joining, invitations, join requests).';

-- Publication alerts (spec part 6): a post reached a hub (hub_post_created, post_shared_to_hub).
-- They are never pushed (app_private.pushed_type) and a hub's content mute silences them
-- (app_private.content_mute_silences). server/shapes/notification.ts publicationTypes is the
-- TypeScript list; test/sql/notifications/notification-policies.test.ts holds them equal. Plain immutable SQL,
-- inlined where it is used.
create or replace function app_private.is_publication(
  p_type app.notification_type
)
  returns boolean
  language sql
  immutable
  as $$
  select
    p_type in('hub_post_created', 'post_shared_to_hub')
$$;

comment on function app_private.is_publication(app.notification_type) is
  'Whether a notification type is a publication alert (hub_post_created, post_shared_to_hub; spec part 6): never pushed, silenced by a hub''s content mute. Used by app_private.pushed_type and app_private.content_mute_silences.';

-- The content mute, written once: a member who muted a hub's content (hub_memberships.content_muted,
-- PATCH /hubs/{hubId}/notification-settings) gets no publication alert from that hub and no
-- hub-scoped post_reposted row for it; every other notification still comes.
create or replace function app_private.content_mute_silences(
  p_muted boolean,
  p_type app.notification_type
)
  returns boolean
  language sql
  immutable
  as $$
  select
    p_muted
    and(app_private.is_publication(p_type)
      or p_type = 'post_reposted')
$$;

comment on function app_private.content_mute_silences(boolean, app.notification_type) is
  'The content mute: whether a membership''s content_muted silences a hub notification of this type (publication alerts and hub-scoped post_reposted). Used by app_private.fan_out_hub_notification (worker task hub_notification_fanout) and app.create_repost.';

-- The fan-out (worker/tasks/notifications/hub-notification-fanout.ts): one set-based insert over the hub's
-- current members, skipping every recipient this fan-out's key already reached. A payload without
-- a key (queued by an older version) inserts as before.
create or replace function app_private.fan_out_hub_notification(
  p_payload jsonb
)
  returns int
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_type app.notification_type := (p_payload ->> 'type')::app.notification_type;
  v_count int;
begin
  insert into app.notifications (recipient_id, type, actor_id, hub_id, join_request_id, post_id, fanout_key)
  select m.user_id, v_type, (p_payload ->> 'actorId')::uuid, m.hub_id,
         (p_payload ->> 'joinRequestId')::uuid, (p_payload ->> 'postId')::uuid, (p_payload ->> 'key')::uuid
  from app.hub_memberships m
  where m.hub_id = (p_payload ->> 'hubId')::uuid
    and not m.user_id = any (coalesce(array(select jsonb_array_elements_text(p_payload -> 'except'))::uuid[], '{}'))
    and (p_payload ->> 'audience' = 'members' or m.role in ('admin', 'super_admin'))
    and not app_private.content_mute_silences(m.content_muted, v_type)
  on conflict (fanout_key, recipient_id) where fanout_key is not null do nothing;
  get diagnostics v_count = row_count;
  return v_count;
end
$$;

comment on function app_private.fan_out_hub_notification(jsonb) is
  'The worker task hub_notification_fanout: one set-based insert of the notification for the hub''s current members, skipping recipients this fan-out already reached (its key), so a retried job writes each row once.';

grant execute on function app_private.fan_out_hub_notification(jsonb) to app_worker;

-- The rows of one announced range [p_from, p_to) for the streams open in the calling process
-- (those of its pg_temp.live_open_sessions), in one statement for all recipients:
--   * a row is returned for a session when its user is the recipient and the row is visible to that
--     user now (app_private.notification_visible: the list's rule);
--   * live is whether the session may still read (app_private.session_level: not revoked, not
--     expired); rows of a session that is not are not sent, its streams close;
--   * the actor is shown when the users policy would show that user to the recipient (a public
--     profile or the recipient themself, and no block either way), its photo with it: the columns
--     of app.notification_rows, which the list reads as the viewer.
-- Ordered by session, then (tx_id, id).
create or replace function app_private.live_notifications(
  p_from xid8,
  p_to xid8
)
  returns table(
      session_id uuid,
      live boolean,
      tx_id xid8,
      notification_id uuid,
      type app.notification_type,
      created_at timestamptz,
      is_read boolean,
      post_id uuid,
      comment_id uuid,
      hub_id uuid,
      invitation_id uuid,
      join_request_id uuid,
      actor_id uuid,
      actor_username text,
      actor_full_name text,
      actor_photo_key text
)
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  set plan_cache_mode = force_generic_plan
  as $$
begin
  return query
  select st.session_id, st.live, n.tx_id, n.id, n.type, n.created_at, n.read_at is not null, n.post_id, n.comment_id, n.hub_id,
         n.invitation_id, n.join_request_id, u.id, u.username, u.full_name, a.object_key
  from (select distinct r.recipient_id from app.notifications r where r.tx_id >= p_from and r.tx_id < p_to) recipients
  cross join lateral (
    select s.id as session_id, s.user_id, exists (select from app_private.session_level(s.id, s.user_id)) as live
    from app.sessions s
    where s.user_id = recipients.recipient_id
      and (select true from pg_temp.live_open_sessions o where o.id = s.id) is not null
    offset 0) st
  join app.notifications n on n.recipient_id = st.user_id and n.tx_id >= p_from and n.tx_id < p_to
  left join app.users u on u.id = n.actor_id
                        and app.user_visible(u.id, u.username, st.user_id, (select b.ids from app_private.block_list(st.user_id) b))
  left join app.assets a on a.id = u.profile_asset_id
  where app_private.notification_visible(n, st.user_id)
  order by st.session_id, n.tx_id, n.id;
end
$$;

comment on function app_private.live_notifications(xid8, xid8) is
  'The live batch of GET /notifications/stream: the rows of one announced range for the streams open in the calling process, for all their recipients in one statement, each row only when visible to its recipient (app_private.notification_visible), its actor only when visible to the recipient (app.user_visible), with whether each session may still read (server/sse/reader.ts).';

grant execute on function app_private.live_notifications(xid8, xid8) to authenticator;

-- Resume (Last-Event-ID): where the viewer's row p_after stands (its writing transaction: place),
-- and the ids of the viewer's rows after it in (tx_id, id) order, written by transactions below
-- p_before (all finished: the server passes the start of the first range the stream receives
-- live), that app.notification_visible_to allows the viewer now, oldest first, at most p_limit.
-- One row; both null when p_after is not a row of the viewer (unknown, or someone else's: nothing
-- tells which). A row of the viewer that is hidden now still marks the place. The caller reads the
-- rows through app.notification_rows as the viewer, under the list's policy, and drops live rows
-- at or before the place.
create or replace function app.notification_replay(
  p_after uuid,
  p_before xid8,
  p_limit int
)
  returns table(
      place xid8,
      ids uuid[]
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    last.tx_id,
    case when last.tx_id is null then
      null
    else
      array(
        select
          n.id
        from
          app.notifications n
        where
          n.recipient_id = last.viewer
          and(n.tx_id,
            n.id) >(last.tx_id,
            p_after)
          and n.tx_id < p_before
          and app.notification_visible_to(n, last.viewer)
        order by
          n.tx_id,
          n.id
        limit p_limit)
    end
  from(
    select
      v.viewer,
(
        select
          n.tx_id
        from
          app.notifications n
        where
          n.id = p_after
          and n.recipient_id = v.viewer) as tx_id
      from(
        select
          app.viewer_id() as viewer) v)
  last
$$;

comment on function app.notification_replay(uuid, xid8, integer) is
  'Resume of GET /notifications/stream (Last-Event-ID): where the viewer''s row p_after stands and the ids of the visible rows after it, before the live ranges (server/sse/reader.ts).';

grant execute on function app.notification_replay(uuid, xid8, integer) to app_user;

-- The dispatcher's watermark, for a listening connection that was down: announcements sent
-- meanwhile were missed, and every range below it has been announced.
create or replace function app_private.notification_dispatched_to()
  returns xid8
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    d.dispatched_to
  from
    app_private.notification_dispatch d
$$;

comment on function app_private.notification_dispatched_to() is
  'The dispatcher''s watermark: every range below it has been announced. Read by a stream process whose listening connection was down (server/sse/hub.ts).';

grant execute on function app_private.notification_dispatched_to() to authenticator;

-- The notification rule, written through the scope: the recipient's own row whose scope is visible.
create or replace function app_private.notification_visible(
  p_notification app.notifications,
  p_user_id uuid
)
  returns boolean
  language sql
  stable
  as $$
  select
    p_notification.recipient_id = p_user_id
    and app_private.scope_visible(app_private.notification_scope_kind(p_notification.type, p_notification.hub_id),
      coalesce(p_notification.hub_id, p_notification.post_id), p_user_id)
$$;

comment on function app_private.notification_visible(app.notifications, uuid) is
  'The notification rule: the recipient''s own row whose scope is visible to them now (a hub row while an active member; a post row while the post is visible). Inlined by app.notification_visible_to, the live batch and the pages.';

-- The scope kind of a row: 'h' hub row, 'r' global post_reposted row, 'g' any other global row.
create or replace function app_private.notification_scope_kind(
  p_type app.notification_type,
  p_hub_id uuid
)
  returns "char"
  language sql
  immutable
  as $$
  select case when p_hub_id is not null then 'h' when p_type = 'post_reposted' then 'r' else 'g' end::"char"
$$;

comment on function app_private.notification_scope_kind(app.notification_type, uuid) is
  'The scope kind of a row for counting: ''h'' a hub row, ''r'' a global post_reposted row, ''g'' any other global row. Used by app_private.unread_bucket and app_private.notification_visible.';

-- The counting bucket of a row now: its scope (app_private.notification_scope_kind), with global post_reposted rows of a repost
-- visible to everyone counted in 'g'. An 'r' row without a post_id (it fails closed) is counted
-- under the nil uuid, which names no post.
create or replace function app_private.unread_bucket(
  p_type app.notification_type,
  p_hub_id uuid,
  p_post_id uuid
)
  returns table(
      kind "char",
      scope_id uuid
)
  language sql
  stable
  as $$
  select case when k.kind = 'r' and app_private.repost_row_visible(p_post_id, null) then 'g'::"char" else k.kind end,
         case when k.kind = 'h' then p_hub_id
              when k.kind = 'r' and not app_private.repost_row_visible(p_post_id, null)
                then coalesce(p_post_id, '00000000-0000-0000-0000-000000000000') end
  from (select app_private.notification_scope_kind(p_type, p_hub_id) as kind) k
$$;

comment on function app_private.unread_bucket(app.notification_type, uuid, uuid) is
  'The unread-counter bucket of a row now (its scope; a repost''s rows by the repost while it is not visible to everyone). Used by the counting triggers (app_private.count_unread, move_repost_unread).';

-- The one writer of app_private.unread_counters (as app_private.add_counts is of the counters):
-- adds each (user, bucket) change, summed first, to one of the bucket's 32 slot rows (one no other
-- open transaction is writing for a statement of at most 32 changes, app_private.free_slot; else a
-- random one), in (user, kind, scope) order, so writers never deadlock. The changes come as four
-- arrays of one length (user, kind, scope, delta).
create or replace function app_private.add_unread(
  p_user_ids uuid[],
  p_kinds "char"[],
  p_scope_ids uuid[],
  p_deltas bigint[]
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_few boolean := cardinality(p_user_ids) <= 32;
begin
  insert into app_private.unread_counters as u (user_id, kind, scope_id, slot, unread)
  select d.user_id, d.kind, d.scope_id,
         case when v_few
              then app_private.free_slot('unread:' || d.user_id::text || ':' || d.kind::text || ':' || coalesce(d.scope_id::text, ''), 32)
              else floor(random() * 32)::smallint end,
         d.delta
  from (select x.user_id, x.kind, x.scope_id, sum(x.delta) as delta
        from unnest(p_user_ids, p_kinds, p_scope_ids, p_deltas) x(user_id, kind, scope_id, delta)
        group by x.user_id, x.kind, x.scope_id) d
  where d.delta <> 0
  order by d.user_id, d.kind, d.scope_id
  on conflict (user_id, kind, scope_id, slot) do update set unread = u.unread + excluded.unread;
end
$$;

comment on function app_private.add_unread(uuid[], "char"[], uuid[], bigint[]) is
  'The one writer of app_private.unread_counters: adds (user, kind, scope, delta) changes to a slot row of each bucket (a free one for a statement of a few changes, else a random one). Called by the counting triggers app_private.count_unread and app_private.move_repost_unread.';

-- When a repost stops being visible to everyone (deleted, or its visibility changed) its unread
-- global post_reposted rows move from each recipient's 'g' bucket to the repost's 'r' bucket, and
-- back when it becomes visible to everyone again. The rows are locked first, so a mark-read of one
-- of them either finished before (and is not counted here) or waits and then counts it in the
-- bucket it is in now.
create or replace function app_private.move_repost_unread()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_post uuid := coalesce(new.id, old.id);
  v_was boolean := app_private.repost_visible(old, null);
  v_now boolean := tg_op = 'UPDATE' and app_private.repost_visible(new, null);
begin
  if v_was = v_now then
    return null;
  end if;
  perform from app.notifications n
    where n.post_id = v_post and n.type = 'post_reposted' and n.hub_id is null and n.read_at is null
    order by n.id for update;
  perform app_private.add_unread(array_agg(n.recipient_id), array_agg(x.kind), array_agg(x.scope_id), array_agg(x.delta))
  from app.notifications n
  cross join lateral (values ('g'::"char", null::uuid, case when v_now then 1 else -1 end::bigint),
                             ('r'::"char", v_post, case when v_now then -1 else 1 end::bigint)) x(kind, scope_id, delta)
  where n.post_id = v_post and n.type = 'post_reposted' and n.hub_id is null and n.read_at is null
  having count(*) > 0;
  return null;
end
$$;

comment on function app_private.move_repost_unread() is
  'Trigger function: when a repost stops (or starts again) being visible to everyone, its unread global post_reposted rows move between each recipient''s buckets. Triggers _400_move_repost_unread and _400_move_repost_unread_delete on app.posts.';

-- The visible unread rows of p_user_id, per hub (hub_id null: rows without a hub): the buckets'
-- sums, each bucket kept when its scope is visible to the user now. One index range of the
-- user's counter rows: at most 32 per bucket.
create or replace function app_private.unread_counts(
  p_user_id uuid
)
  returns table(
      hub_id uuid,
      unread bigint
)
  language sql
  stable
  as $$
  select
    case when b.kind = 'h' then
      b.scope_id
    end,
    sum(b.unread)::bigint
  from(
    select
      c.kind,
      c.scope_id,
      sum(c.unread) as unread
    from
      app_private.unread_counters c
    where
      c.user_id = p_user_id
    group by
      c.kind,
      c.scope_id
    having
      sum(c.unread) <> 0
      and app_private.scope_visible(c.kind, c.scope_id, p_user_id)) b
group by
  1
$$;

comment on function app_private.unread_counts(uuid) is
  'A user''s visible unread counts per hub from their counter rows (one index range). Used by app.unread_counts, the stream''s badges and the push message''s badge.';

-- GET /notifications/unread-count and the list's unreadCount: the viewer's counts per hub (a row
-- with a null hub_id for rows without a hub; hubs without unread rows are absent).
create or replace function app.unread_counts()
  returns table(
      hub_id uuid,
      unread bigint
)
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return query select u.hub_id, u.unread from app_private.unread_counts(app.viewer_id()) u; end $$;

comment on function app.unread_counts() is
  'GET /notifications/unread-count and the list''s unreadCount: the viewer''s unread counts per hub (null hub: rows without a hub).';

grant execute on function app.unread_counts() to app_user;

-- The counters against a recount of the rows: the (user, bucket) pairs whose counter differs from
-- the number of unread rows in that bucket now. Empty when the counters are right (tests, and an
-- operator's check: `select * from app_private.unread_counter_drift()`).
create or replace function app_private.unread_counter_drift()
  returns table(
      user_id uuid,
      kind "char",
      scope_id uuid,
      counted bigint,
      actual bigint
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    coalesce(c.user_id, a.user_id),
    coalesce(c.kind, a.kind),
    coalesce(c.scope_id, a.scope_id),
    coalesce(c.unread, 0),
    coalesce(a.unread, 0)
  from(
    select
      u.user_id,
      u.kind,
      u.scope_id,
      sum(u.unread)::bigint as unread
    from
      app_private.unread_counters u
    group by
      1,
      2,
      3) c
  full join(
    select
      n.recipient_id as user_id,
      b.kind,
      b.scope_id,
      count(*) as unread
    from
      app.notifications n
      cross join lateral app_private.unread_bucket(n.type, n.hub_id, n.post_id) b
    where
      n.read_at is null
    group by
      1,
      2,
      3) a on a.user_id = c.user_id
  and a.kind = c.kind
  and a.scope_id is not distinct from c.scope_id
where
  coalesce(c.unread, 0) <> coalesce(a.unread, 0)
$$;

comment on function app_private.unread_counter_drift() is
  'The counters against a recount: (user, bucket) pairs whose counter differs from the unread rows now. Empty when right; tests and an operator''s check.';

-- Sets every unread counter from the rows (the repair behind unread_counter_drift, and how data
-- loaded without triggers, such as the scale benchmark's worlds, gets its counters): one slot per
-- user and bucket. The counters are locked first, so a notification written or read meanwhile waits
-- and then adds its change to the rebuilt counts (its row was not committed when they were counted).
create or replace function app_private.rebuild_unread_counters()
  returns void
  language plpgsql
  set search_path = pg_catalog
  as $$
begin
  lock table app_private.unread_counters in exclusive mode;
  delete from app_private.unread_counters;
  insert into app_private.unread_counters (user_id, kind, scope_id, slot, unread)
    select n.recipient_id, b.kind, b.scope_id, 0, count(*)
    from app.notifications n cross join lateral app_private.unread_bucket(n.type, n.hub_id, n.post_id) b
    where n.read_at is null
    group by 1, 2, 3;
end
$$;

comment on function app_private.rebuild_unread_counters() is
  'Sets every unread counter from the notification rows: the repair for a drift app_private.unread_counter_drift() lists, and the counters of data loaded without triggers (the scale benchmark calls every app_private.rebuild_* function). No API role may call it.';

-- The rows of one page, for app.notification_page below: SQL, inlined where it is called, so a
-- constant p_unread_only leaves the plan either the unread index or the other. Keyset bound as a row
-- comparison (an index condition: a deep page starts where the cursor points).
create or replace function app_private.notification_page_rows(
  p_viewer uuid,
  p_before_at timestamptz,
  p_before_id uuid,
  p_unread_only boolean,
  p_limit int
)
  returns table(
      id uuid,
      created_at timestamptz
)
  language sql
  stable
  as $$
  select
    page.id,
    page.created_at
  from((
      select
        n.id,
        n.created_at
      from
        app.notifications n
      where
        n.recipient_id = p_viewer
        and coalesce(n.hub_id, '00000000-0000-0000-0000-000000000000') = '00000000-0000-0000-0000-000000000000'
        and(n.created_at,
          n.id) <(p_before_at,
          p_before_id)
        and(not p_unread_only
          or n.read_at is null)
        and app_private.notification_visible(n, p_viewer)
      order by
        n.created_at desc,
        n.id desc
      limit p_limit)
  union all(
    select
      h.id,
      h.created_at
    from
      app.hub_memberships m
    cross join lateral(
      select
        n.id,
        n.created_at
      from
        app.notifications n
      where
        n.recipient_id = p_viewer
        and coalesce(n.hub_id, '00000000-0000-0000-0000-000000000000') = m.hub_id
        and(n.created_at,
          n.id) <(p_before_at,
          p_before_id)
        and(not p_unread_only
          or n.read_at is null)
      order by
        n.created_at desc,
        n.id desc
      limit p_limit) h
  where
    m.user_id = p_viewer
    and app_private.scope_visible('h', m.hub_id, p_viewer))) page
order by
  page.created_at desc,
  page.id desc
limit p_limit
$$;

comment on function app_private.notification_page_rows(uuid, timestamp with time zone, uuid, boolean, integer) is
  'The rows of one page of a viewer''s notifications (keyset before a cursor, unread only or all), inlined into app.notification_page so each flag keeps its index.';

-- The ids of the viewer's page, newest first: rows before (p_before_at, p_before_id) (null: the
-- first page), unread only when p_unread_only, at most p_limit, visible to the viewer now. Callers
-- read the rows through app.notification_rows as the viewer (the list's policy applies again).
create or replace function app.notification_page(
  p_before_at timestamptz,
  p_before_id uuid,
  p_unread_only boolean,
  p_limit int
)
  returns table(
      id uuid,
      created_at timestamptz
)
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
begin
  if p_unread_only then
    return query select r.id, r.created_at from app_private.notification_page_rows(v_viewer, v_at, v_id, true, p_limit) r;
  else
    return query select r.id, r.created_at from app_private.notification_page_rows(v_viewer, v_at, v_id, false, p_limit) r;
  end if;
end
$$;

-- The page's ids (app.notification_page) are planned once and the plan kept (a generic plan). On
-- its own, PostgreSQL kept planning its statement again on every call for a user of the scale
-- benchmark's large world: with the statistics of a table where one user has 1,000,000 rows and
-- another 100,000 hub memberships, the plan for any user is estimated costlier than one planned for
-- the user at hand, though both are the same index ranges. Planning (about 0.3 ms) then made the
-- list of a user with 1,000,000 notifications dearer than the list of a user with 1,000, whose
-- plan is kept. The kept plan reads the same ranges: one per scope, each stopping at the page.
alter function app.notification_page(timestamptz, uuid, boolean, int) set plan_cache_mode = force_generic_plan;

comment on function app.notification_page(timestamp with time zone, uuid, boolean, integer) is
  'GET /notifications: the ids of the viewer''s page, newest first, visible to the viewer now; the caller reads the rows through app.notification_rows.';

grant execute on function app.notification_page(timestamp with time zone, uuid, boolean, integer) to app_user;

-- The viewer's settings: one row per notification type of the enum (in enum order), with the
-- master switch repeated on each.
create or replace function app.notification_settings()
  returns table(
      push_enabled boolean,
      type app.notification_type,
      type_enabled boolean
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    coalesce(s.push_enabled, true),
    t.type,
    not coalesce(t.type = any(s.push_disabled_types), false)
  from
    unnest(enum_range(null::app.notification_type)) as t(type)
  left join app_private.notification_settings s on s.user_id = app.viewer_id()
$$;

comment on function app.notification_settings() is
  'GET /users/me/notification-settings: the viewer''s push settings, one row per notification type with the master switch.';

grant execute on function app.notification_settings() to app_user;

-- PATCH: p_enabled (null: unchanged), the types to turn on and off (each at most once). One
-- statement, so concurrent changes of one user never fail (the later one wins per field).
create or replace function app.update_notification_settings(
  p_enabled boolean,
  p_enable app.notification_type[],
  p_disable app.notification_type[]
)
  returns table(
      push_enabled boolean,
      type app.notification_type,
      type_enabled boolean
)
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  insert into app_private.notification_settings as s (user_id, push_enabled, push_disabled_types)
    values (app.viewer_id(), coalesce(p_enabled, true), coalesce(p_disable, '{}'))
    on conflict (user_id) do update
      set push_enabled = coalesce(p_enabled, s.push_enabled),
          push_disabled_types = array(
            select distinct t from unnest(s.push_disabled_types || coalesce(p_disable, '{}')) t
            where not t = any (coalesce(p_enable, '{}')) order by t),
          updated_at = now();
  return query select * from app.notification_settings();
end
$$;

comment on function app.update_notification_settings(boolean, app.notification_type[], app.notification_type[]) is
  'PATCH /users/me/notification-settings: changes the master switch and per-type switches in one statement (concurrent changes never fail; the later wins per field).';

grant execute on function app.update_notification_settings(boolean, app.notification_type[], app.notification_type[]) to app_user;

-- Rows of a user that went from unread to read in one statement: one badge change for that user.
create or replace function app_private.record_badge_changes()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  insert into app_private.badge_changes (user_id)
  select distinct n.recipient_id
  from new_rows n join old_rows o on o.id = n.id
  where o.read_at is null and n.read_at is not null;
  return null;
end
$$;

comment on function app_private.record_badge_changes() is
  'Trigger function: rows of a user that went from unread to read in one statement make one badge change for that user, which the stream delivers (GET /notifications/stream). Trigger _800_record_badge_changes on app.notifications.';

-- For the reader connection of an API process (server/sse): the badges of the users with a badge change
-- in [p_from, p_to) and a live session with a stream open in this process (pg_temp.live_open_sessions),
-- per session: the app-icon and hub footer badges (app_private.unread_counts).
create or replace function app_private.live_badges(
  p_from xid8,
  p_to xid8
)
  returns table(
      session_id uuid,
      unread bigint,
      hub_unread bigint
)
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return query
  select s.id, coalesce(t.unread, 0)::bigint, coalesce(t.hub_unread, 0)::bigint
  from (select distinct b.user_id from app_private.badge_changes b where b.tx_id >= p_from and b.tx_id < p_to) changed
  join app.sessions s on s.user_id = changed.user_id
  cross join lateral (select sum(u.unread) as unread, sum(u.unread) filter (where u.hub_id is not null) as hub_unread
                      from app_private.unread_counts(changed.user_id) u) t
  where (select true from pg_temp.live_open_sessions o where o.id = s.id) is not null
    and exists (select from app_private.session_level(s.id, s.user_id));
end
$$;

comment on function app_private.live_badges(xid8, xid8) is
  'The badge batch of GET /notifications/stream: the badges of the users with a badge change in a range and a stream open in the calling process (server/sse/reader.ts).';

grant execute on function app_private.live_badges(xid8, xid8) to authenticator;

create or replace function app_private.count_unread()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_changes app_private.unread_change[];
  v_reposts uuid[];
begin
  -- Transition tables exist only for the events that have them: each branch reads its own.
  if tg_op = 'INSERT' then
    v_changes := array(select row(n.recipient_id, n.type, n.hub_id, n.post_id, 1)::app_private.unread_change from new_rows n where n.read_at is null);
  elsif tg_op = 'DELETE' then
    v_changes := array(select row(o.recipient_id, o.type, o.hub_id, o.post_id, -1)::app_private.unread_change from old_rows o where o.read_at is null);
  else
    v_changes := array(select row(n.recipient_id, n.type, n.hub_id, n.post_id, 1)::app_private.unread_change from new_rows n where n.read_at is null
                       union all
                       select row(o.recipient_id, o.type, o.hub_id, o.post_id, -1)::app_private.unread_change from old_rows o where o.read_at is null);
  end if;
  if cardinality(v_changes) = 0 then
    return null;
  end if;
  -- The reposts first: their visibility cannot change until this transaction ends. (Called only
  -- when there are some: its statement, with an empty array, was planned anew on every call.)
  v_reposts := array(select distinct c.post_id from unnest(v_changes) c where c.type = 'post_reposted' and c.hub_id is null);
  if cardinality(v_reposts) > 0 then
    perform app_private.lock_reposts(v_reposts);
  end if;
  perform app_private.add_unread(array_agg(c.user_id), array_agg(b.kind), array_agg(b.scope_id), array_agg(c.delta::bigint))
  from unnest(v_changes) c
  cross join lateral app_private.unread_bucket(c.type, c.hub_id, c.post_id) b;
  return null;
end
$$;

comment on function app_private.count_unread() is
  'Trigger function: keeps the unread counters (app_private.unread_counters, through app_private.add_unread) of inserted, read and deleted rows per bucket. Triggers _500_count_unread_insert, _update and _delete on app.notifications.';

-- A user reads the notifications visible to them, and nothing else.
create policy notifications_select_visible on app.notifications
  for select to app_user
    using (recipient_id =(
      select
        app.viewer_id())
        and app.notification_visible_to(notifications,(
          select
            app.viewer_id())));

comment on policy notifications_select_visible on app.notifications is
  'A user reads the notifications visible to them now (app.notification_visible_to), and nothing else: GET /notifications, the stream''s rows.';

grant select (id, recipient_id, type, actor_id, post_id, comment_id, hub_id, invitation_id, join_request_id, created_at, read_at) on
  app.notifications to app_user;

create trigger _500_count_unread_update
  after update on app.notifications referencing old table as old_rows new table as new_rows for each statement
  execute function app_private.count_unread();

comment on trigger _500_count_unread_update on app.notifications is 'Counts rows read or unread again (app_private.count_unread).';

create trigger _500_count_unread_delete
  after delete on app.notifications referencing old table as old_rows for each statement
  execute function app_private.count_unread();

comment on trigger _500_count_unread_delete on app.notifications is 'Uncounts deleted unread rows (app_private.count_unread).';

create trigger _500_count_unread_insert
  after insert on app.notifications referencing new table as new_rows for each statement
  execute function app_private.count_unread();

comment on trigger _500_count_unread_insert on app.notifications is 'Counts new unread rows (app_private.count_unread).';

create trigger _800_record_badge_changes
  after update on app.notifications referencing old table as old_rows new table as new_rows for each statement
  execute function app_private.record_badge_changes();

comment on trigger _800_record_badge_changes on app.notifications is
  'Records a badge change when rows are read (app_private.record_badge_changes).';

create trigger _400_move_repost_unread
  after update of deleted_at,
  visibility on app.posts for each row
  when(old.deleted_at is distinct from new.deleted_at or old.visibility is distinct from new.visibility)
  execute function app_private.move_repost_unread();

comment on trigger _400_move_repost_unread on app.posts is
  'Moves a repost''s unread rows between buckets when its visibility changes (app_private.move_repost_unread).';

create trigger _400_move_repost_unread_delete
  after delete on app.posts for each row
  execute function app_private.move_repost_unread();

comment on trigger _400_move_repost_unread_delete on app.posts is
  'Moves a repost''s unread rows between buckets when it is deleted (app_private.move_repost_unread).';
