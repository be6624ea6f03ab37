-- Up Migration
-- Reading and delivering notifications (spec 4.7, 6.3; contract sections 3 and 9): marking rows
-- read, the live-delivery watermark with its dispatcher, the per-batch re-check of visibility for
-- the SSE stream, and the announcement of revoked sessions. Every visibility decision goes through
-- app.notification_visible_to (0019, widened by the hubs and posts migrations), the one rule shared
-- by the list policy, mark-read and the stream.
--
-- Live delivery (server/sse/hub.ts) in short:
--   * every notification row records its writing transaction (app.notifications.tx_id, 0019);
--   * one dispatcher in the whole deployment (the holder of an advisory lock) wakes every ~50 ms,
--     reads the oldest transaction still running (the snapshot's xmin) and, when rows were written
--     by transactions between the previous xmin and this one, sends ONE notify on the channel
--     'notifications' whose payload is the two transaction-id bounds, nothing else. Every
--     transaction below xmin has finished, so a committed row is never skipped, even when commits
--     land out of order; a write costs no notify of its own, however hot the path (votes);
--   * every API process listens, and re-reads the rows of that range for the users with a stream
--     open in that process, through app_private.notification_batch and then app.notification_rows
--     as each recipient (the list's own read, under row-level security), so a row is shown live
--     exactly when, and exactly as, the list would show it.
-- The API processes' dedicated connection logs in as `authenticator` (db/roles.ts): as itself it
-- may call the four app_private functions granted below and nothing else; for the re-read it sets
-- the role and identity of each recipient in turn, exactly like a request's transaction.

-- The notification row of contract section 9, for the list (GET /notifications) and the live
-- stream alike, for the given ids, as the calling viewer sees it. Security invoker on purpose: the
-- policies decide, the notifications policy which rows exist (app.notification_visible_to), the
-- users and assets policies whether the actor is shown (a user hidden from the viewer, e.g. across
-- a block, comes back as a null actor). Callers order the rows.
create function app.notification_rows(p_ids uuid[])
  returns table (notification_id uuid, type app.notification_type, created_at timestamptz, is_read boolean,
                 post_id uuid, comment_id uuid, hub_id uuid, invitation_id uuid, join_request_id uuid,
                 actor_id uuid, actor_username text, actor_full_name text, actor_photo_key text)
  language sql stable
  set search_path = pg_catalog
  as $$
  select n.id, n.type, n.created_at, n.read_at is not null, n.post_id, n.comment_id, n.hub_id, n.invitation_id,
         n.join_request_id, u.id, u.username, u.full_name, a.object_key
  from app.notifications n
  left join app.users u on u.id = n.actor_id
  left join app.assets a on a.id = u.profile_asset_id
  where n.id = any (p_ids)
$$;

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
create function app.mark_notifications_read(p_ids uuid[], p_all boolean)
  returns int
  language plpgsql volatile security definer
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

grant execute on function app.mark_notifications_read(uuid[], boolean) to app_user;

-- The dispatcher's watermark: every row written by a transaction below dispatched_to has been
-- announced. One row. Kept in the database so that leadership can pass from one process to another
-- without losing the rows written in between.
create table app_private.notification_dispatch (
  singleton boolean primary key default true check (singleton),
  dispatched_to xid8 not null
);
insert into app_private.notification_dispatch (dispatched_to) values (pg_snapshot_xmin(pg_current_snapshot()));

-- Leadership of the dispatcher: a session-level advisory lock keyed by the watermark table's oid
-- (unique within the database). At most one connection holds it; it is released when that
-- connection ends, and another process takes it over on its next try (every second).
create function app_private.take_notification_dispatch()
  returns boolean
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ select pg_try_advisory_lock('app_private.notification_dispatch'::regclass::oid::bigint) $$;

-- One dispatcher tick. When rows exist from transactions in [watermark, xmin), moves the watermark
-- to xmin and sends one notify with both bounds as text: {"from": "<xid8>", "to": "<xid8>"}.
-- Reads only (no transaction id is used) when there is nothing new. Called by the lock holder only;
-- were two to run at once, the ranges would overlap and listeners ignore what they already read.
create function app_private.dispatch_notifications()
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_to xid8 := pg_snapshot_xmin(pg_current_snapshot());
  v_from xid8;
begin
  select d.dispatched_to into v_from from app_private.notification_dispatch d;
  if v_to > v_from and exists (select from app.notifications n where n.tx_id >= v_from and n.tx_id < v_to) then
    update app_private.notification_dispatch set dispatched_to = v_to;
    perform pg_notify('notifications', json_build_object('from', v_from::text, 'to', v_to::text)::text);
  end if;
end
$$;

-- The rows of one announced range [p_from, p_to) for the streams open in one API process, given
-- by their session ids. For each session whose user has rows in the range that are visible to
-- that user now (app.notification_visible_to: no cached membership), one row: the session, its
-- user, whether the session is still live (app.session_access_level: not revoked, not expired;
-- a stream of a dead session is closed instead of written to), and the notification ids, oldest
-- first. Sessions without such rows are not returned. The range is read first through the tx_id
-- index, so the cost follows the size of the batch, not the number of open streams.
create function app_private.notification_batch(p_from xid8, p_to xid8, p_sessions uuid[])
  returns table (session_id uuid, user_id uuid, live boolean, notification_ids uuid[])
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  with streams as (
    select s.id, s.user_id from app.sessions s where s.id = any (p_sessions)
  ), fresh as (
    select n.recipient_id, array_agg(n.id order by n.created_at, n.id) as ids
    from app.notifications n
    where n.tx_id >= p_from and n.tx_id < p_to
      and n.recipient_id in (select st.user_id from streams st)
      and app.notification_visible_to(n, n.recipient_id)
    group by n.recipient_id
  )
  select st.id, st.user_id, app.session_access_level(st.id, st.user_id) is not null, f.ids
  from streams st
  join fresh f on f.recipient_id = st.user_id
$$;

-- The sessions among p_sessions that are no longer live (revoked, expired or gone). A process
-- calls it after its listening connection comes back, for the revocations it may have missed.
create function app_private.ended_sessions(p_sessions uuid[])
  returns setof uuid
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select wanted.id from unnest(p_sessions) as wanted(id)
  where not exists (
    select from app.sessions s where s.id = wanted.id and app.session_access_level(s.id, s.user_id) is not null)
$$;

-- Logging out closes that session's open streams in every process (contract section 3): when a
-- session becomes revoked (app.logout, refresh-token reuse detection, user merge, or anything
-- else), a notify on 'session_revoked' carries the session id only, after the revocation commits.
create function app_private.announce_session_revoked()
  returns trigger
  language plpgsql
  set search_path = pg_catalog
  as $$
begin
  perform pg_notify('session_revoked', new.id::text);
  return null;
end
$$;

create trigger sessions_announce_revoked
  after update of revoked_at on app.sessions
  for each row when (old.revoked_at is null and new.revoked_at is not null)
  execute function app_private.announce_session_revoked();

-- The API processes' listening connection (authenticator, without switching role) may call the
-- dispatcher and batch functions above and nothing else in app_private: no table privilege.
grant usage on schema app_private to authenticator;
grant execute on function app_private.take_notification_dispatch(), app_private.dispatch_notifications(),
  app_private.notification_batch(xid8, xid8, uuid[]), app_private.ended_sessions(uuid[]) to authenticator;

-- Down Migration
revoke usage on schema app_private from authenticator;
drop trigger sessions_announce_revoked on app.sessions;
drop function app_private.announce_session_revoked();
drop function app_private.ended_sessions(uuid[]);
drop function app_private.notification_batch(xid8, xid8, uuid[]);
drop function app_private.dispatch_notifications();
drop function app_private.take_notification_dispatch();
drop table app_private.notification_dispatch;
drop function app.mark_notifications_read(uuid[], boolean);
drop function app.notification_rows(uuid[]);
