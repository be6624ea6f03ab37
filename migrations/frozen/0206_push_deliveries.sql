-- Up Migration
-- Push delivery (contract 12 "What is pushed", "Failures"; design.md "what reaches a closed app"):
-- the worker turns committed notification rows and badge changes into one FCM message per device,
-- exactly once per (notification, device).
--
-- No outbox is written on the write path: notification rows and badge changes already record their
-- writing transaction (0019, 0205), so the push worker reads them by finished transaction ranges,
-- like the live dispatcher (0020), from a cursor of its own (app_private.push_cursor). A write pays
-- nothing for push (a job per writing transaction would cost a commit-serialising NOTIFY each).
--   * planning (app_private.plan_pushes): one worker at a time (the cursor row, locked with SKIP
--     LOCKED) reads the rows of [cursor, oldest running transaction), and in one transaction writes
--     one delivery per (row, device) for the types that are pushed (never the publication alerts
--     hub_post_created and post_shared_to_hub) when the recipient's settings allow it, and moves the
--     cursor. The delivery's key, (notification, device) or (badge change, device), makes a second
--     planning of the same row a no-op;
--   * sending (app_private.claim_pushes): any worker claims due deliveries (SKIP LOCKED) for a lease,
--     re-checking at that moment what may have changed: the device's session is live, the recipient
--     may see the row now (app_private.notification_visible: the list's rule), it is still unread,
--     the settings still allow it. Those that fail are closed as skipped; the others are sent with
--     the recipient's badge now (app_private.unread_counts);
--   * results (app_private.record_pushes): sent, retried later (429, 5xx: the worker's backoff),
--     given up (out of tries), failed (refused for a reason other than the token), released (401:
--     the attempt does not count), or the device deleted (UNREGISTERED, an INVALID_ARGUMENT naming
--     the token, SENDER_ID_MISMATCH; its deliveries go with it).
-- A worker that dies holding a claim leaves it to another after the lease.

create type app_private.push_state as enum ('pending', 'sent', 'given_up', 'failed', 'skipped');

-- Every notification row and badge change written by a transaction below pushed_to has been planned.
create table app_private.push_cursor (
  singleton boolean primary key default true check (singleton),
  pushed_to xid8 not null
);
insert into app_private.push_cursor (pushed_to) values (pg_snapshot_xmin(pg_current_snapshot()));

create table app_private.push_deliveries (
  id bigint generated always as identity primary key,
  device_id uuid not null references app.push_devices (id) on delete cascade,
  notification_id uuid references app.notifications (id) on delete cascade,
  badge_change_id bigint references app_private.badge_changes (id) on delete cascade,
  state app_private.push_state not null default 'pending',
  -- Claims so far (a claim is a try; a 401 gives its try back).
  attempts smallint not null default 0,
  -- Due from then when pending; while claimed, the end of the claim's lease.
  next_attempt_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  check (num_nonnulls(notification_id, badge_change_id) = 1)
);
-- The key per effect: one delivery per (notification, device) and per (badge change, device).
create unique index push_deliveries_notification on app_private.push_deliveries (notification_id, device_id) where notification_id is not null;
create unique index push_deliveries_badge on app_private.push_deliveries (badge_change_id, device_id) where badge_change_id is not null;
create index push_deliveries_due on app_private.push_deliveries (next_attempt_at) where state = 'pending';
create index push_deliveries_device on app_private.push_deliveries (device_id);
create index push_deliveries_finished on app_private.push_deliveries (finished_at) where state <> 'pending';

-- Publication alerts are rows and stream events only (spec part 6): never pushed.
create function app_private.pushed_type(p_type app.notification_type)
  returns boolean
  language sql immutable
  as $$ select p_type not in ('hub_post_created', 'post_shared_to_hub') $$;

-- Whether a user's settings (0204) let a push of this type through (p_type null: a badge push,
-- which follows the master switch only).
create function app_private.push_allowed(p_settings app_private.notification_settings, p_type app.notification_type)
  returns boolean
  language sql stable
  as $$
  select coalesce(p_settings.push_enabled, true)
     and (p_type is null or (app_private.pushed_type(p_type) and not coalesce(p_type = any (p_settings.push_disabled_types), false)))
$$;

-- Rows older than this when planned are not pushed (a worker that was down for a day does not send
-- yesterday's alerts); pending deliveries older than this are given up by the purge.
create function app_private.push_max_age() returns interval language sql immutable as $$ select interval '1 day' $$;

-- One planning step (see above). Answers how many deliveries it wrote (0 when another worker is
-- planning, or nothing finished since the last step).
create function app_private.plan_pushes()
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_to xid8 := pg_snapshot_xmin(pg_current_snapshot());
  v_from xid8;
  v_rows int;
  v_badges int;
begin
  select c.pushed_to into v_from from app_private.push_cursor c for update skip locked;
  if not found or v_to <= v_from then
    return 0;
  end if;
  insert into app_private.push_deliveries (notification_id, device_id)
  select n.id, d.id
  from app.notifications n
  join app.push_devices d on d.user_id = n.recipient_id
  left join app_private.notification_settings s on s.user_id = n.recipient_id
  where n.tx_id >= v_from and n.tx_id < v_to
    and n.created_at > now() - app_private.push_max_age()
    and app_private.push_allowed(s, n.type)
  order by n.tx_id, n.id
  on conflict (notification_id, device_id) where notification_id is not null do nothing;
  get diagnostics v_rows = row_count;
  insert into app_private.push_deliveries (badge_change_id, device_id)
  select b.id, d.id
  from app_private.badge_changes b
  join app.push_devices d on d.user_id = b.user_id
  left join app_private.notification_settings s on s.user_id = b.user_id
  where b.tx_id >= v_from and b.tx_id < v_to and app_private.push_allowed(s, null)
  on conflict (badge_change_id, device_id) where badge_change_id is not null do nothing;
  get diagnostics v_badges = row_count;
  update app_private.push_cursor set pushed_to = v_to;
  return v_rows + v_badges;
end
$$;

-- Claims up to p_limit due deliveries for p_lease_seconds and answers those to send now, with what
-- the message needs. Deliveries that may no longer be sent (see above) are closed as skipped.
create function app_private.claim_pushes(p_limit int, p_lease_seconds int)
  returns table (delivery_id bigint, device_id uuid, attempt int, token text, platform text, notification_id uuid, type app.notification_type,
                 post_id uuid, hub_id uuid, badge bigint, written_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  return query
  with due as (
    select dl.id from app_private.push_deliveries dl
    where dl.state = 'pending' and dl.next_attempt_at <= now()
    order by dl.next_attempt_at, dl.id
    limit p_limit
    for update skip locked
  ), checked as (
    select dl.id, dl.device_id, dl.attempts, d.token, d.platform, d.user_id, n.id as notification_id, n.type, n.post_id, n.hub_id,
           coalesce(n.created_at, b.created_at) as written_at,
           exists (select from app_private.session_level(d.session_id, d.user_id))
             and app_private.push_allowed(s, n.type)
             and (dl.badge_change_id is not null or (app_private.notification_visible(n, d.user_id) and n.read_at is null)) as sendable
    from due
    join app_private.push_deliveries dl on dl.id = due.id
    join app.push_devices d on d.id = dl.device_id
    left join app.notifications n on n.id = dl.notification_id
    left join app_private.badge_changes b on b.id = dl.badge_change_id
    left join app_private.notification_settings s on s.user_id = d.user_id
  ), claimed as (
    update app_private.push_deliveries dl
      set attempts = dl.attempts + c.sendable::int,
          state = case when c.sendable then 'pending' else 'skipped' end::app_private.push_state,
          next_attempt_at = case when c.sendable then now() + make_interval(secs => p_lease_seconds) else dl.next_attempt_at end,
          finished_at = case when c.sendable then null else now() end
      from checked c
      where dl.id = c.id
      returning dl.id
  ), badges as (
    select u.user_id, (select coalesce(sum(x.unread), 0) from app_private.unread_counts(u.user_id) x)::bigint as badge
    from (select distinct c.user_id from checked c where c.sendable) u
  )
  select c.id, c.device_id, c.attempts + 1, c.token, c.platform, c.notification_id, c.type, c.post_id, c.hub_id, bg.badge, c.written_at
  from checked c
  join claimed on claimed.id = c.id
  join badges bg on bg.user_id = c.user_id
  where c.sendable
  order by c.id;
end
$$;

-- The outcomes of sent messages (see above). p_retry_ms holds the wait before the next try of each
-- p_retry delivery, in the same order; p_release_ms the pause after a 401.
create function app_private.record_pushes(p_sent bigint[], p_retry bigint[], p_retry_ms int[], p_given_up bigint[],
  p_failed bigint[], p_released bigint[], p_release_ms int, p_dead_devices uuid[])
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  update app_private.push_deliveries dl set state = 'sent', finished_at = now() where dl.id = any (p_sent);
  update app_private.push_deliveries dl set next_attempt_at = now() + make_interval(secs => r.wait_ms / 1000.0)
    from unnest(p_retry, p_retry_ms) as r(id, wait_ms) where dl.id = r.id;
  update app_private.push_deliveries dl set state = 'given_up', finished_at = now() where dl.id = any (p_given_up);
  update app_private.push_deliveries dl set state = 'failed', finished_at = now() where dl.id = any (p_failed);
  update app_private.push_deliveries dl
    set attempts = dl.attempts - 1, next_attempt_at = now() + make_interval(secs => p_release_ms / 1000.0)
    where dl.id = any (p_released);
  delete from app.push_devices d where d.id = any (p_dead_devices);
end
$$;

-- Hourly (worker/tasks/purge-push.ts): deliveries finished more than a day ago, pending ones older
-- than push_max_age (given up), badge changes older than a day, and the devices of sessions that
-- ended (expired; revoked ones are gone already).
create function app_private.purge_push()
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  update app_private.push_deliveries dl set state = 'given_up', finished_at = now()
    where dl.state = 'pending' and dl.created_at < now() - app_private.push_max_age();
  delete from app_private.push_deliveries dl where dl.state <> 'pending' and dl.finished_at < now() - interval '1 day';
  delete from app_private.badge_changes b where b.created_at < now() - interval '1 day';
  delete from app.push_devices d using app.sessions s
    where s.id = d.session_id and (s.expires_at <= now() or s.revoked_at is not null);
$$;

revoke all on function app_private.pushed_type(app.notification_type), app_private.push_allowed(app_private.notification_settings, app.notification_type),
  app_private.push_max_age() from public;
grant execute on function app_private.plan_pushes(), app_private.claim_pushes(int, int),
  app_private.record_pushes(bigint[], bigint[], int[], bigint[], bigint[], bigint[], int, uuid[]),
  app_private.purge_push() to app_worker;

-- Down Migration
drop function app_private.purge_push();
drop function app_private.record_pushes(bigint[], bigint[], int[], bigint[], bigint[], bigint[], int, uuid[]);
drop function app_private.claim_pushes(int, int);
drop function app_private.plan_pushes();
drop function app_private.push_max_age();
drop function app_private.push_allowed(app_private.notification_settings, app.notification_type);
drop function app_private.pushed_type(app.notification_type);
drop table app_private.push_deliveries;
drop table app_private.push_cursor;
drop type app_private.push_state;
