-- Up Migration
-- Badge changes after mark-read (contract 12 "Badges"): the user's devices get a data-only badge
-- push and their open streams an `event: badge`. Marking rows read records one row per user and
-- writing statement in app_private.badge_changes, with its writing transaction (as notifications
-- do, 0019): the notification dispatcher (0020) announces ranges that hold badge changes as it
-- announces new rows, flagged `"badges": true`, and each API process reads the counts for the
-- streams it has open (app_private.live_badges); the push worker reads the same ranges (0206). No
-- NOTIFY per mark-read, no job per mark-read: the write is one small insert.

create table app_private.badge_changes (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  tx_id xid8 not null default pg_current_xact_id(),
  created_at timestamptz not null default now()
);
create index badge_changes_tx_id on app_private.badge_changes (tx_id);

-- Rows of a user that went from unread to read in one statement: one badge change for that user.
create function app_private.record_badge_changes() returns trigger
  language plpgsql security definer
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

create trigger notifications_record_badge_changes
  after update on app.notifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.record_badge_changes();

-- The dispatcher of 0020, announcing ranges that hold new rows or badge changes; the payload says
-- which ({"from", "to"} as before, plus "badges": true when the range holds badge changes).
create or replace function app_private.dispatch_notifications()
  returns void
  language plpgsql volatile security definer
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

-- For the reader connection of an API process (0182): the badges of the users with a badge change
-- in [p_from, p_to) and a live session with a stream open in this process (pg_temp.live_open_sessions),
-- per session: the app-icon and hub footer badges (app_private.unread_counts, 0201).
create function app_private.live_badges(p_from xid8, p_to xid8)
  returns table (session_id uuid, unread bigint, hub_unread bigint)
  language plpgsql stable security definer
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

grant execute on function app_private.live_badges(xid8, xid8) to authenticator;

-- Down Migration
drop function app_private.live_badges(xid8, xid8);
create or replace function app_private.dispatch_notifications()
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
drop trigger notifications_record_badge_changes on app.notifications;
drop function app_private.record_badge_changes();
drop table app_private.badge_changes;
