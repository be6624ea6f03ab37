-- Up Migration
-- A live batch at the cost of its rows (issue 12: live delivery under load). Replaces 0100's
-- app_private.live_notifications(p_from, p_to, p_sessions): the same rows in the same order, read
-- for the same streams, at a fraction of the cost. Measured on PostgreSQL 15 with 3,000 streams
-- open, a range of 100 rows for 100 recipients cost about 10 ms (100 µs per row, 0.3 of a core at
-- 3,000 rows a second), and the service spent another millisecond per batch sending the list:
--   * every batch carried the ids of every open session (3,000 uuids, 117 kB: 1 ms to serialise in
--     the service, 3 ms to send and parse), and the planner matched them with `= any (p_sessions)`
--     by fetching all 3,000 sessions through sessions_pkey (4 ms), whatever the range held;
--   * app.session_access_level and app.notification_visible_to were called for every row, each a
--     security-definer call with a statement of its own (60-190 µs a call);
--   * as a SQL function with a SET clause it was planned again on every call (PostgreSQL < 18).
--
-- Now:
--   * the reader connection keeps the sessions with a stream open in its process in a temporary
--     table of its own (app_private.live_sessions_sync adds and removes ids when streams open and
--     close; the table lives and dies with that connection, and a new connection starts it again
--     from the full list), so a batch sends two transaction ids and nothing else;
--   * the range's recipients are read through notifications_tx_id and each recipient's sessions
--     through sessions_user_id (a lateral read per recipient; OFFSET 0 keeps the planner from
--     turning it into a scan of every session), kept when the reader's table holds them: one probe
--     of its primary key per session, written as a scalar sub-select so that no plan can turn it
--     into a join that hashes the whole table again for every recipient;
--   * the rules are the inlined ones of 0180: app_private.session_level once per session (live),
--     app_private.notification_visible per row (the function behind app.notification_visible_to,
--     which the list's policy applies: one rule), app_private.block_list only for rows that show an
--     actor;
--   * PL/pgSQL with plan_cache_mode = force_generic_plan: the statement is planned once per reader
--     connection (again when the tables' statistics change). With custom plans PostgreSQL 15
--     planned it afresh for every batch (1.5 ms, as long as running it); the generic plan reads
--     the same indexes.
-- The batch of 100 rows above: 5.4 ms -> 1.8 ms in PostgreSQL 15.20, no list sent.

-- The sessions with a stream open in the calling process, for its reader connection only: a
-- temporary table (private to the connection, gone with it), owned by this function's owner, so
-- the login role can change it only through this function.
create function app_private.live_sessions_sync(p_add uuid[], p_remove uuid[])
  returns void
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if to_regclass('pg_temp.live_open_sessions') is null then
    create temporary table live_open_sessions (id uuid primary key);
  end if;
  delete from pg_temp.live_open_sessions o where o.id = any (p_remove);
  insert into pg_temp.live_open_sessions (id) select unnest(p_add) on conflict do nothing;
end
$$;

-- The rows of one announced range [p_from, p_to) for the streams open in the calling process
-- (those of its pg_temp.live_open_sessions), in one statement for all recipients:
--   * a row is returned for a session when its user is the recipient and the row is visible to that
--     user now (app_private.notification_visible: the list's rule);
--   * live is whether the session may still read (app_private.session_level: not revoked, not
--     expired); rows of a session that is not are not sent, its streams close;
--   * the actor is shown when the users policy would show that user to the recipient (a public
--     profile or the recipient themself, and no block either way), its photo with it: the columns
--     of app.notification_rows (0020), which the list reads as the viewer.
-- Ordered by session, then (tx_id, id).
create function app_private.live_notifications(p_from xid8, p_to xid8)
  returns table (session_id uuid, live boolean, tx_id xid8, notification_id uuid, type app.notification_type,
                 created_at timestamptz, is_read boolean, post_id uuid, comment_id uuid, hub_id uuid, invitation_id uuid,
                 join_request_id uuid, actor_id uuid, actor_username text, actor_full_name text, actor_photo_key text)
  language plpgsql stable security definer
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
  left join app.users u on u.id = n.actor_id and (u.username is not null or u.id = st.user_id)
                        and not exists (select from app_private.block_list(st.user_id) b where u.id = any (b.ids))
  left join app.assets a on a.id = u.profile_asset_id
  where app_private.notification_visible(n, st.user_id)
  order by st.session_id, n.tx_id, n.id;
end
$$;

drop function app_private.live_notifications(xid8, xid8, uuid[]);
grant execute on function app_private.live_sessions_sync(uuid[], uuid[]), app_private.live_notifications(xid8, xid8) to authenticator;

-- Down Migration
drop function app_private.live_notifications(xid8, xid8);
drop function app_private.live_sessions_sync(uuid[], uuid[]);
create function app_private.live_notifications(p_from xid8, p_to xid8, p_sessions uuid[])
  returns table (session_id uuid, live boolean, tx_id xid8, notification_id uuid, type app.notification_type,
                 created_at timestamptz, is_read boolean, post_id uuid, comment_id uuid, hub_id uuid, invitation_id uuid,
                 join_request_id uuid, actor_id uuid, actor_username text, actor_full_name text, actor_photo_key text)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select r.session_id, r.live, n.tx_id, n.id, n.type, n.created_at, n.read_at is not null, n.post_id, n.comment_id, n.hub_id,
         n.invitation_id, n.join_request_id, u.id, u.username, u.full_name, a.object_key
  from (
    select s.id as session_id, s.user_id, app.session_access_level(s.id, s.user_id) is not null as live
    from (select distinct n.recipient_id from app.notifications n where n.tx_id >= p_from and n.tx_id < p_to) recipients
    cross join lateral (
      select s.id, s.user_id from app.sessions s where s.user_id = recipients.recipient_id and s.id = any (p_sessions)) s
  ) r
  join app.notifications n on n.recipient_id = r.user_id and n.tx_id >= p_from and n.tx_id < p_to
  left join app.users u on u.id = n.actor_id and (u.username is not null or u.id = r.user_id)
                        and not (u.id = any (app.user_block_list(r.user_id)))
  left join app.assets a on a.id = u.profile_asset_id
  where app.notification_visible_to(n, r.user_id)
  order by r.session_id, n.tx_id, n.id
$$;
grant execute on function app_private.live_notifications(xid8, xid8, uuid[]) to authenticator;
