-- Up Migration
-- Live notifications that lose nothing (contract section 9: Last-Event-ID resume, retried batches)
-- and one set-based read per batch for every recipient (issue 12). Replaces the per-recipient
-- re-read of 0020 (app_private.notification_batch, then app.notification_rows in one transaction
-- per recipient) with app_private.live_notifications; the dispatcher of 0020 is unchanged.
--
-- Order: live delivery sends the rows of each announced range [from, to) in (tx_id, id) order, and
-- ranges follow each other, so a stream receives rows in increasing (tx_id, id). Resuming after
-- the row L therefore means "every row after (L.tx_id, L.id)", which is what
-- app.notification_replay returns (server/sse/hub.ts bounds it by the first range the new stream
-- gets live, so replay and live never overlap).

-- The users blocked by p_user_id or blocking them, in either direction: the block rule of the users
-- policy (app.viewer_block_list(), 0021), for any user; the live reader applies it to each
-- recipient. PL/pgSQL so that its plan is kept per connection (see 0105).
create function app.user_block_list(p_user_id uuid)
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (
    select coalesce(array_agg(other), '{}') from (
      select b.blocked_id as other from app.blocks b where b.blocker_id = p_user_id
      union
      select b.blocker_id from app.blocks b where b.blocked_id = p_user_id) pairs);
end
$$;

-- Replay and live delivery read a recipient's rows by writing transaction.
create index notifications_recipient_tx on app.notifications (recipient_id, tx_id, id);

-- The rows of one announced range [p_from, p_to) for the streams open in one API process (given by
-- their session ids), in one statement for all recipients:
--   * a row is returned for a session when its user is the recipient and
--     app.notification_visible_to(row, user) holds now: the function the list's policy applies
--     (0019, widened by 0033 and 0056), so a row is streamed exactly when the list shows it;
--   * live is whether the session may still read (app.session_access_level: not revoked, not
--     expired); rows of a session that is not are not sent, its streams close;
--   * the actor is shown when the users policy would show that user to the recipient (a public
--     profile or the recipient themself, and no block either way: app.user_block_list), its photo
--     with it (an asset in visible use: the profile photo of a visible user, 0016): the columns of
--     app.notification_rows (0020), which the list reads as the viewer.
-- Ordered by session, then (tx_id, id). The range is found through the tx_id index and each
-- recipient's sessions through sessions_user_id (lateral: never a scan of every session), so the
-- cost follows the batch, not the number of open streams.
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

-- Resume (Last-Event-ID): where the viewer's row p_after stands (its writing transaction: place),
-- and the ids of the viewer's rows after it in (tx_id, id) order, written by transactions below
-- p_before (all finished: the server passes the start of the first range the stream receives
-- live), that app.notification_visible_to allows the viewer now, oldest first, at most p_limit.
-- One row; both null when p_after is not a row of the viewer (unknown, or someone else's: nothing
-- tells which). A row of the viewer that is hidden now still marks the place. The caller reads the
-- rows through app.notification_rows as the viewer, under the list's policy, and drops live rows
-- at or before the place.
create function app.notification_replay(p_after uuid, p_before xid8, p_limit int)
  returns table (place xid8, ids uuid[])
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select last.tx_id, case when last.tx_id is null then null else array(
    select n.id from app.notifications n
    where n.recipient_id = last.viewer
      and (n.tx_id, n.id) > (last.tx_id, p_after) and n.tx_id < p_before
      and app.notification_visible_to(n, last.viewer)
    order by n.tx_id, n.id
    limit p_limit) end
  from (select v.viewer, (select n.tx_id from app.notifications n where n.id = p_after and n.recipient_id = v.viewer) as tx_id
        from (select app.viewer_id() as viewer) v) last
$$;

grant execute on function app.notification_replay(uuid, xid8, int) to app_user;

-- The dispatcher's watermark, for a listening connection that was down: announcements sent
-- meanwhile were missed, and every range below it has been announced.
create function app_private.notification_dispatched_to()
  returns xid8
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select d.dispatched_to from app_private.notification_dispatch d $$;

drop function app_private.notification_batch(xid8, xid8, uuid[]);

grant execute on function app_private.live_notifications(xid8, xid8, uuid[]), app_private.notification_dispatched_to() to authenticator;

-- Down Migration
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
grant execute on function app_private.notification_batch(xid8, xid8, uuid[]) to authenticator;
drop function app_private.notification_dispatched_to();
drop function app.notification_replay(uuid, xid8, int);
drop function app_private.live_notifications(xid8, xid8, uuid[]);
drop index app.notifications_recipient_tx;
drop function app.user_block_list(uuid);
