-- Up Migration
-- The push planner (0206) claims what it plans, and reads without writing when there is nothing.
--
-- * Idle: the planner runs every 50 ms in every worker process. It locked the cursor row (SELECT
--   ... FOR UPDATE) and moved the cursor on every call, so even with nothing to push each call was
--   a writing transaction (a transaction id, a dirtied page, a WAL flush at commit), 20 times a
--   second per worker. It now first looks, without a lock, for notification rows and badge changes
--   of finished transactions past the cursor, and only when there are some takes the cursor's lock.
--   Not moving the cursor over an empty range loses nothing: a transaction below pg_snapshot_xmin
--   has ended, so no row with its id can appear later.
-- * Busy: every delivery was written three times: inserted pending by the planner, updated when a
--   claim took it (the lease), updated again with its outcome. The planner now inserts the first
--   p_limit deliveries of the range already claimed (one try, leased for p_lease_seconds), after the
--   checks claim_pushes makes at send time (the device's session is live, the recipient may see the
--   row now and it is unread; the settings were checked when choosing the deliveries): those that
--   fail are inserted as skipped. It answers them as claim_pushes does, and the worker sends them
--   at once. The rest of a large range (a hub fan-out) is inserted pending for claim_pushes, which
--   still checks everything again when it takes them, as do the retries. The key per effect is
--   unchanged: one delivery per (notification, device) and per (badge change, device).
drop function app_private.plan_pushes();

create function app_private.plan_pushes(p_limit int, p_lease_seconds int)
  returns table (delivery_id bigint, device_id uuid, attempt int, token text, platform text, notification_id uuid, type app.notification_type,
                 post_id uuid, hub_id uuid, badge bigint, written_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_to xid8 := pg_snapshot_xmin(pg_current_snapshot());
  v_from xid8;
begin
  select c.pushed_to into v_from from app_private.push_cursor c;
  if v_to <= v_from
     or not (exists (select from app.notifications n where n.tx_id >= v_from and n.tx_id < v_to)
             or exists (select from app_private.badge_changes b where b.tx_id >= v_from and b.tx_id < v_to)) then
    return;
  end if;
  select c.pushed_to into v_from from app_private.push_cursor c for update skip locked;
  if not found or v_to <= v_from then
    return;
  end if;
  update app_private.push_cursor set pushed_to = v_to;
  return query
  with candidates as (
    select n.id as notification_id, null::bigint as badge_change_id, d.id as device_id, d.session_id, d.user_id, d.token, d.platform,
           n.type, n.post_id, n.hub_id, n.created_at as written_at, n.tx_id, n as row
    from app.notifications n
    join app.push_devices d on d.user_id = n.recipient_id
    left join app_private.notification_settings s on s.user_id = n.recipient_id
    where n.tx_id >= v_from and n.tx_id < v_to
      and n.created_at > now() - app_private.push_max_age()
      and app_private.push_allowed(s, n.type)
    union all
    select null, b.id, d.id, d.session_id, d.user_id, d.token, d.platform, null, null, null, b.created_at, b.tx_id, null::app.notifications
    from app_private.badge_changes b
    join app.push_devices d on d.user_id = b.user_id
    left join app_private.notification_settings s on s.user_id = b.user_id
    where b.tx_id >= v_from and b.tx_id < v_to and app_private.push_allowed(s, null)
  ), ranked as (
    select c.*, row_number() over (order by c.tx_id, c.notification_id, c.badge_change_id, c.device_id) <= p_limit as first
    from candidates c
  ), checked as (
    select r.*,
           case when r.first then exists (select from app_private.session_level(r.session_id, r.user_id))
                                and (r.badge_change_id is not null or (app_private.notification_visible(r.row, r.user_id) and (r.row).read_at is null))
           end as sendable
    from ranked r
  ), inserted as (
    insert into app_private.push_deliveries as dl (notification_id, badge_change_id, device_id, state, attempts, next_attempt_at, finished_at)
    select c.notification_id, c.badge_change_id, c.device_id,
           case when c.sendable is false then 'skipped' else 'pending' end::app_private.push_state,
           coalesce(c.sendable, false)::int,
           case when c.sendable then now() + make_interval(secs => p_lease_seconds) else now() end,
           case when c.sendable is false then now() end
    from checked c
    order by c.tx_id, c.notification_id, c.badge_change_id, c.device_id
    on conflict do nothing
    returning dl.id, dl.notification_id, dl.badge_change_id, dl.device_id, dl.attempts
  ), badges as (
    select u.user_id, (select coalesce(sum(x.unread), 0) from app_private.unread_counts(u.user_id) x)::bigint as badge
    from (select distinct c.user_id from checked c where c.sendable) u
  )
  select i.id, i.device_id, 1, c.token, c.platform, c.notification_id, c.type, c.post_id, c.hub_id, bg.badge, c.written_at
  from inserted i
  join checked c on c.device_id = i.device_id and c.notification_id is not distinct from i.notification_id
                and c.badge_change_id is not distinct from i.badge_change_id
  join badges bg on bg.user_id = c.user_id
  where i.attempts = 1
  order by i.id;
end
$$;

grant execute on function app_private.plan_pushes(int, int) to app_worker;

-- Down Migration
drop function app_private.plan_pushes(int, int);

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

grant execute on function app_private.plan_pushes() to app_worker;
