-- Push delivery: devices, the planner that claims pushes, and their cleanup.
-- At most this many devices per user: registering one more forgets the one seen longest ago (each
-- device is one more message per notification).
create or replace function app_private.push_devices_per_user()
  returns int
  language sql
  immutable
  as $$
  select
    10
$$;

comment on function app_private.push_devices_per_user() is
  'The most devices one user may register (10): each device is one more message per notification. Read by app.register_push_device, which forgets the device seen longest ago beyond it.';

-- POST /users/me/push-devices: registers the token for the viewer's session. Answers the record and
-- whether it is new:
--   * a token the viewer already registered (from any of their sessions): the same record, moved to
--     this session, with platform and locale updated and last_seen_at refreshed (created false);
--   * a token registered by another user: that record is deleted (its pending pushes with it: they
--     were that user's) and a new one made for the viewer (created true);
--   * otherwise a new record (created true).
-- Race-safe: a concurrent registration of the same token is waited for (the unique hash) and the
-- loop takes the branch its outcome leaves, so two registrations of one token never fail.
create or replace function app.register_push_device(
  p_provider text,
  p_platform text,
  p_token text,
  p_locale text
)
  returns table(
      id uuid,
      provider text,
      platform text,
      token_suffix text,
      created_at timestamptz,
      last_seen_at timestamptz,
      created boolean
)
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
#variable_conflict use_column
declare
  v_viewer uuid := app.viewer_id();
  v_session uuid := app.viewer_session_id();
  v_hash bytea := sha256(convert_to(p_token, 'UTF8'));
  v_device app.push_devices;
  v_created boolean;
begin
  loop
    update app.push_devices d
      set session_id = v_session, platform = p_platform, locale = p_locale, last_seen_at = now()
      where d.token_hash = v_hash and d.user_id = v_viewer
      returning * into v_device;
    if found then
      v_created := false;
      exit;
    end if;
    delete from app.push_devices d where d.token_hash = v_hash;
    insert into app.push_devices (user_id, session_id, provider, platform, token, token_hash, locale)
      values (v_viewer, v_session, p_provider, p_platform, p_token, v_hash, p_locale)
      on conflict (token_hash) do nothing
      returning * into v_device;
    if found then
      v_created := true;
      exit;
    end if;
  end loop;
  delete from app.push_devices d
    where d.user_id = v_viewer and d.id in (
      select o.id from app.push_devices o where o.user_id = v_viewer
      order by o.last_seen_at desc, o.id offset app_private.push_devices_per_user());
  return query select v_device.id, v_device.provider, v_device.platform, v_device.token_suffix, v_device.created_at,
                      v_device.last_seen_at, v_created;
end
$$;

comment on function app.register_push_device(text, text, text, text) is
  'POST /users/me/push-devices (server/push/devices.ts): registers a push token for the viewer''s session; a token belongs to one user at a time (another user''s record of it is deleted with its pending pushes) and a user keeps at most app_private.push_devices_per_user devices. Race-safe: two registrations of one token never fail.';

grant execute on function app.register_push_device(text, text, text, text) to app_user;

-- DELETE /users/me/push-devices/{id}: true when the viewer had that device.
create or replace function app.delete_push_device(
  p_device_id uuid
)
  returns boolean
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  with gone as(
    delete from app.push_devices d
    where d.id = p_device_id
      and d.user_id = app.viewer_id()
    returning
      1
)
  select
    exists(
      select
      from
        gone)
$$;

comment on function app.delete_push_device(uuid) is
  'DELETE /users/me/push-devices/{deviceId} (server/push/devices.ts): deletes one of the viewer''s own devices; true when the viewer had it, false for an unknown device or another user''s.';

grant execute on function app.delete_push_device(uuid) to app_user;

-- A revoked session takes its devices with it, whichever path revoked it.
create or replace function app_private.forget_revoked_session_devices()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  delete from app.push_devices d where d.session_id = new.id;
  return null;
end
$$;

comment on function app_private.forget_revoked_session_devices() is
  'A revoked session takes its push devices with it, whichever path revoked it (POST /auth/logout, a reused refresh token, account hiding, merge or purge): the function of the trigger _300_forget_push_devices on app.sessions.';

-- Publication alerts (app_private.is_publication) are rows and stream events only (spec part 6): never pushed.
create or replace function app_private.pushed_type(
  p_type app.notification_type
)
  returns boolean
  language sql
  immutable
  as $$
  select
    not app_private.is_publication(p_type)
$$;

comment on function app_private.pushed_type(app.notification_type) is
  'Whether a notification type is ever pushed: publication alerts (hub_post_created, post_shared_to_hub) are rows and stream events only (spec part 6). Used by app_private.push_allowed.';

-- Whether a user's settings (app_private.notification_settings) let a push of this type through (p_type null: a badge push,
-- which follows the master switch only).
create or replace function app_private.push_allowed(
  p_settings app_private.notification_settings,
  p_type app.notification_type
)
  returns boolean
  language sql
  stable
  as $$
  select
    coalesce(p_settings.push_enabled, true)
    and(p_type is null
      or(app_private.pushed_type(p_type)
        and not coalesce(p_type = any(p_settings.push_disabled_types), false)))
$$;

comment on function app_private.push_allowed(app_private.notification_settings, app.notification_type) is
  'Whether a user''s push settings (PATCH /users/me/notification-settings) let a push of this type through; a null type is a badge push, which follows the master switch only. Used by the push planner and claimer (app_private.plan_pushes, app_private.claim_pushes).';

-- Rows older than this when planned are not pushed (a worker that was down for a day does not send
-- yesterday's alerts); pending deliveries older than this are given up by the purge.
create or replace function app_private.push_max_age()
  returns interval
  language sql
  immutable
  as $$
  select
    interval '1 day'
$$;

comment on function app_private.push_max_age() is
  'How old a notification may be and still be pushed (1 day): a worker that was down does not send yesterday''s alerts, and pending deliveries older than this are given up. Read by app_private.plan_pushes and app_private.purge_push.';

create or replace function app_private.plan_pushes(
  p_limit int,
  p_lease_seconds int
)
  returns table(
      delivery_id bigint,
      device_id uuid,
      attempt int,
      token text,
      platform text,
      notification_id uuid,
      type app.notification_type,
      post_id uuid,
      hub_id uuid,
      badge bigint,
      written_at timestamptz
)
  language plpgsql
  volatile
  security definer
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

comment on function app_private.plan_pushes(integer, integer) is
  'The push planner (contract 12): one caller at a time moves the push cursor over the transactions finished since its last run, writes a delivery per device for each new notification (of a type the user''s settings let through, under a day old) and badge change, closes at once those that may not be sent (session ended, notification no longer visible or already read), and leases and returns the first p_limit to send now with their badge. Called every 50 ms by the push worker (worker/tasks/push/pusher.ts) in the worker process.';

grant execute on function app_private.plan_pushes(integer, integer) to app_worker;

-- Claims up to p_limit due deliveries for p_lease_seconds and answers those to send now, with what
-- the message needs. Deliveries that may no longer be sent (the session ended, the notification is no longer
-- visible or already read) are closed as skipped.
create or replace function app_private.claim_pushes(
  p_limit int,
  p_lease_seconds int
)
  returns table(
      delivery_id bigint,
      device_id uuid,
      attempt int,
      token text,
      platform text,
      notification_id uuid,
      type app.notification_type,
      post_id uuid,
      hub_id uuid,
      badge bigint,
      written_at timestamptz
)
  language plpgsql
  volatile
  security definer
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

comment on function app_private.claim_pushes(integer, integer) is
  'The push claimer: leases up to p_limit due deliveries (retries, and those the planner had no room for, or whose lease ran out with a dead worker) with SKIP LOCKED, closes as skipped those that may no longer be sent, and returns the rest with what the message needs. Called every 200 ms by the push worker (worker/tasks/push/pusher.ts).';

grant execute on function app_private.claim_pushes(integer, integer) to app_worker;

-- The outcomes of sent messages (sent, to retry, given up, failed, released after a 401). p_retry_ms holds the wait before the next try of each
-- p_retry delivery, in the same order; p_release_ms the pause after a 401.
create or replace function app_private.record_pushes(
  p_sent bigint[],
  p_retry bigint[],
  p_retry_ms int[],
  p_given_up bigint[],
  p_failed bigint[],
  p_released bigint[],
  p_release_ms int,
  p_dead_devices uuid[]
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app_private.record_pushes(bigint[], bigint[], integer[], bigint[], bigint[], bigint[], integer, uuid[]) is
  'Records the outcomes of sent push messages in one statement (sent, retry after a wait, given up, failed, released after a 401 without using a try) and deletes the devices whose token FCM refused for good (unregistered, invalid, another sender''s). Called by the push worker (worker/tasks/push/pusher.ts) at most 20 ms after FCM answered.';

grant execute on function app_private.record_pushes(bigint[], bigint[], integer[], bigint[], bigint[], bigint[], integer, uuid[]) to app_worker;

-- Hourly (worker/tasks/push/purge-push.ts): deliveries finished more than a day ago, pending ones older
-- than push_max_age (given up), badge changes older than a day, and the devices of sessions that
-- ended (expired; revoked ones are gone already).
create or replace function app_private.purge_push()
  returns void
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  update
    app_private.push_deliveries dl
  set
    state = 'given_up',
    finished_at = now()
  where
    dl.state = 'pending'
    and dl.created_at < now() - app_private.push_max_age();
    delete from app_private.push_deliveries dl
    where dl.state <> 'pending'
      and dl.finished_at < now() - interval '1 day';
      delete from app_private.badge_changes b
      where b.created_at < now() - interval '1 day';
        delete from app.push_devices d using app.sessions s
where s.id = d.session_id
  and(s.expires_at <= now()
  or s.revoked_at is not null);
$$;

comment on function app_private.purge_push() is
  'Keeps the push tables small: gives up pending deliveries older than app_private.push_max_age, deletes deliveries finished and badge changes older than a day, and the devices of ended sessions. Run hourly by the worker task purge_push (worker/tasks/push/purge-push.ts, schedule in worker/tasks/push/index.ts).';

grant execute on function app_private.purge_push() to app_worker;

-- A user sees the devices of their own live sessions (an expired session's are gone for them).
create policy push_devices_select_own on app.push_devices
  for select to app_user
    using (user_id =(
      select
        app.viewer_id())
        and app.session_access_level(session_id, user_id) is not null);

comment on policy push_devices_select_own on app.push_devices is
  'A user sees only their own devices, and only those of their live sessions: GET /users/me/push-devices (server/push/devices.ts), which reads the table directly. No other role or command is allowed; writes go through app.register_push_device and app.delete_push_device.';

grant select (id, provider, platform, token_suffix, created_at, last_seen_at) on app.push_devices to app_user;

create trigger _300_forget_push_devices
  after update of revoked_at on app.sessions for each row
  when(old.revoked_at is null and new.revoked_at is not null)
  execute function app_private.forget_revoked_session_devices();

comment on trigger _300_forget_push_devices on app.sessions is
  'When a session is revoked, its push devices are deleted (app_private.forget_revoked_session_devices): a signed-out device gets no more pushes.';
