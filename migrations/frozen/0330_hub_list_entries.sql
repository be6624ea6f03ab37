-- Up Migration
-- GET /users/me/hubs reads one page of the viewer's hubs, whatever their number. It listed every
-- hub the viewer belongs to, is invited to or asked to join, took each one's latest activity
-- (app.hub_last_activity_at: one index probe per hub) and sorted them all: 2.3 s for a member of
-- 100,000 hubs. The order now has an index of its own: one row per (user, hub) the list shows,
-- with the relation (member and role, pending request, open invitation) and an ordering key, the
-- hub's latest activity as the list knows it. Keeping that key exact would write to every member's
-- row on every action in a hub (what 0106 took away from the hot path), so it is kept thus:
-- - the actor's own row moves in the action's transaction (one row: the actor's list is exact);
-- - the other members' rows follow within about a minute: an action queues its hub (one read of a
--   queue row; one write per hub only when it is not queued already), and a sweep of the worker
--   (worker/tasks/propagate-hub-activity.ts, every minute) sets the rows of each queued hub to the
--   hub's latest activity, 1,000 rows per transaction; a hub is swept again at the earliest
--   1 ms per row after its last sweep (100,000 members: 100 s), so no hub makes the sweep write
--   more than about 1,000 rows a second, whatever its activity.

-- One row per (user, hub) of GET /users/me/hubs. The relation columns are kept by the triggers
-- below from the rows they describe (a membership wins over a pending request, which wins over an
-- open invitation); activity_at is the ordering key (greatest of what the hub's activity was when
-- the row was made, the user's own activity, and the sweeps). expires_at: when an invitation-only
-- row stops being listed (invitations expire by the clock, with no write to follow); infinity
-- for members and pending requests.
create table app_private.hub_list_entries (
  hub_id uuid not null,
  user_id uuid not null,
  activity_at timestamptz not null,
  status text not null check (status in ('member', 'pending_admin_approval', 'invited')),
  role app.hub_role,
  invitation_id uuid,
  expires_at timestamptz not null default 'infinity',
  primary key (hub_id, user_id),
  check ((status = 'member') = (role is not null)),
  check ((status = 'invited') = (invitation_id is not null))
);
comment on table app_private.hub_list_entries is
  'The rows of GET /users/me/hubs with their ordering key (0330): kept by triggers on memberships, join requests and invitations; activity_at moved by the actor''s activity and the propagation sweep.';
-- The page: one user's rows in list order.
create index hub_list_entries_page on app_private.hub_list_entries (user_id, activity_at desc, hub_id desc);
-- No API role reads it: app.my_hub_page below reads the viewer's own rows.
alter table app_private.hub_list_entries enable row level security;
alter table app_private.hub_list_entries force row level security;

-- An open invitation is probed per (invitee, hub) by the triggers below.
create index hub_invitations_invitee_hub on app.hub_invitations (invitee_id, hub_id) where status = 'invited';

-- Every (user, hub) relation the list shows, computed from the rows (the reference the kept rows
-- are checked against, and what a rebuild writes).
create function app_private.hub_list_relations()
  returns table (user_id uuid, hub_id uuid, status text, role app.hub_role, invitation_id uuid, expires_at timestamptz)
  language sql stable
  set search_path = pg_catalog
  as $$
  select distinct on (r.user_id, r.hub_id) r.user_id, r.hub_id, r.status, r.role, r.invitation_id, r.expires_at
  from (
    select m.user_id, m.hub_id, 'member' as status, m.role, null::uuid as invitation_id, 'infinity'::timestamptz as expires_at, 1 as rank
      from app.hub_memberships m
    union all
    select r.user_id, r.hub_id, 'pending_admin_approval', null, null, 'infinity', 2
      from app.hub_join_requests r where r.status = 'pending'
    union all
    select i.invitee_id, i.hub_id, 'invited', null, i.id, i.expires_at, 3
      from app.hub_invitations i where i.status = 'invited' and i.invitee_id is not null and i.expires_at > now()
  ) r
  order by r.user_id, r.hub_id, r.rank, r.expires_at desc, r.invitation_id
$$;

-- The same for one (user, hub): three index probes.
create function app_private.hub_list_relation(p_user_id uuid, p_hub_id uuid)
  returns table (status text, role app.hub_role, invitation_id uuid, expires_at timestamptz)
  language sql stable
  set search_path = pg_catalog
  as $$
  select r.status, r.role, r.invitation_id, r.expires_at
  from (
    select 'member' as status, m.role, null::uuid as invitation_id, 'infinity'::timestamptz as expires_at, 1 as rank
      from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = p_user_id
    union all
    select 'pending_admin_approval', null, null, 'infinity', 2
      from app.hub_join_requests r where r.hub_id = p_hub_id and r.user_id = p_user_id and r.status = 'pending'
    union all
    select 'invited', null, i.id, i.expires_at, 3
      from app.hub_invitations i
      where i.invitee_id = p_user_id and i.hub_id = p_hub_id and i.status = 'invited' and i.expires_at > now()
  ) r
  order by r.rank, r.expires_at desc, r.invitation_id
  limit 1
$$;

-- Makes the row of (user, hub) agree with the relation rows: written, updated or deleted. A new
-- row starts at the hub's latest activity; a kept row keeps its key (or takes the hub's, if newer).
create function app_private.refresh_hub_list_entry(p_user_id uuid, p_hub_id uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v record;
begin
  if p_user_id is null or p_hub_id is null then
    return;
  end if;
  select * into v from app_private.hub_list_relation(p_user_id, p_hub_id);
  if not found then
    delete from app_private.hub_list_entries e where e.hub_id = p_hub_id and e.user_id = p_user_id;
    return;
  end if;
  insert into app_private.hub_list_entries as e (hub_id, user_id, activity_at, status, role, invitation_id, expires_at)
    values (p_hub_id, p_user_id, app.hub_last_activity_at(p_hub_id), v.status, v.role, v.invitation_id, v.expires_at)
    on conflict (hub_id, user_id) do update
      set activity_at = greatest(e.activity_at, excluded.activity_at), status = excluded.status, role = excluded.role,
          invitation_id = excluded.invitation_id, expires_at = excluded.expires_at;
end
$$;

-- Row triggers of the three relation tables: the (user, hub) pairs a change touches, before and
-- after. tg_argv[0] names the user column (user_id, or invitee_id of an invitation).
create function app_private.hub_list_relation_changed()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_old record;
  v_new record;
begin
  if tg_op <> 'INSERT' then
    select (to_jsonb(old) ->> tg_argv[0])::uuid as user_id, old.hub_id into v_old;
    perform app_private.refresh_hub_list_entry(v_old.user_id, v_old.hub_id);
  end if;
  if tg_op = 'INSERT' then
    perform app_private.refresh_hub_list_entry((to_jsonb(new) ->> tg_argv[0])::uuid, new.hub_id);
  elsif tg_op = 'UPDATE' then
    select (to_jsonb(new) ->> tg_argv[0])::uuid as user_id, new.hub_id into v_new;
    -- The same pair was refreshed above.
    if (v_new.user_id, v_new.hub_id) is distinct from (v_old.user_id, v_old.hub_id) then
      perform app_private.refresh_hub_list_entry(v_new.user_id, v_new.hub_id);
    end if;
  end if;
  return null;
end
$$;

create trigger hub_memberships_list_entry after insert or delete or update of role, hub_id, user_id on app.hub_memberships
  for each row execute function app_private.hub_list_relation_changed('user_id');
create trigger hub_join_requests_list_entry after insert or delete or update of status, hub_id, user_id on app.hub_join_requests
  for each row execute function app_private.hub_list_relation_changed('user_id');
create trigger hub_invitations_list_entry after insert or delete or update of status, hub_id, invitee_id, expires_at on app.hub_invitations
  for each row execute function app_private.hub_list_relation_changed('invitee_id');

-- Hubs whose activity the sweep has to carry to their rows. queued: activity happened since the
-- last sweep began; not_before: the earliest next sweep (1 ms per row of the hub after the last).
create table app_private.hub_list_propagations (
  hub_id uuid primary key,
  queued boolean not null,
  not_before timestamptz not null default now(),
  -- A sweep in progress: the activity time it carries and the last user id it reached.
  target_at timestamptz,
  after_user uuid
);
comment on table app_private.hub_list_propagations is
  'Hubs whose latest activity the sweep carries to app_private.hub_list_entries (0330).';
create index hub_list_propagations_due on app_private.hub_list_propagations (not_before) where queued or target_at is not null;
alter table app_private.hub_list_propagations enable row level security;
alter table app_private.hub_list_propagations force row level security;

-- Activity in a hub (any write of app.hub_activity: votes, placements, messages, invitations,
-- joining): the actors' own rows move at once, and each hub is queued for the sweep. The queue
-- row is only read while the hub is queued (no lock, no write): the hot path writes it once per
-- sweep at most.
create function app_private.hub_activity_moved()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_hub uuid;
begin
  update app_private.hub_list_entries e set activity_at = n.last_active_at
    from new_rows n
    where e.hub_id = n.hub_id and e.user_id = n.user_id and e.activity_at < n.last_active_at;
  for v_hub in select distinct n.hub_id from new_rows n order by 1 loop
    if not exists (select from app_private.hub_list_propagations p where p.hub_id = v_hub and p.queued) then
      insert into app_private.hub_list_propagations as p (hub_id, queued) values (v_hub, true)
        on conflict (hub_id) do update set queued = true where not p.queued;
    end if;
  end loop;
  return null;
end
$$;

create trigger hub_activity_list_inserts after insert on app.hub_activity
  referencing new table as new_rows for each statement execute function app_private.hub_activity_moved();
create trigger hub_activity_list_updates after update on app.hub_activity
  referencing new table as new_rows for each statement execute function app_private.hub_activity_moved();

-- One step of the sweep: up to p_batch rows of the hub that has waited longest, in user id order,
-- set to the activity time the sweep carries (taken when the hub's sweep begins; activity after
-- that queues the hub again). Rows of expired invitations are deleted on the way. Answers the rows
-- scanned, null when no hub is due. Hubs being swept by another worker are skipped.
create function app_private.propagate_hub_activity(p_batch int)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v app_private.hub_list_propagations;
  v_scanned int;
  v_last uuid;
begin
  select * into v from app_private.hub_list_propagations p
    where (p.queued or p.target_at is not null) and p.not_before <= now()
    order by p.not_before, p.hub_id
    limit 1
    for update skip locked;
  if not found then
    return null;
  end if;
  if v.target_at is null then
    v.target_at := app.hub_last_activity_at(v.hub_id);
    v.after_user := '00000000-0000-0000-0000-000000000000';
    v.queued := false;
  end if;
  with scanned as (
    select e.user_id from app_private.hub_list_entries e
    where e.hub_id = v.hub_id and e.user_id > v.after_user
    order by e.user_id
    limit p_batch
  ), moved as (
    update app_private.hub_list_entries e set activity_at = v.target_at
    from scanned s
    where e.hub_id = v.hub_id and e.user_id = s.user_id and e.activity_at < v.target_at and e.expires_at > now()
  ), expired as (
    delete from app_private.hub_list_entries e using scanned s
    where e.hub_id = v.hub_id and e.user_id = s.user_id and e.expires_at <= now()
  )
  select count(*), (array_agg(s.user_id order by s.user_id desc))[1] into v_scanned, v_last from scanned s;
  if v_scanned < p_batch then
    update app_private.hub_list_propagations p
      set queued = v.queued, target_at = null, after_user = null,
          not_before = now() + greatest(app.hub_member_count(v.hub_id), 0) * interval '1 millisecond'
      where p.hub_id = v.hub_id;
  else
    update app_private.hub_list_propagations p
      set queued = v.queued, target_at = v.target_at, after_user = v_last
      where p.hub_id = v.hub_id;
  end if;
  return v_scanned;
end
$$;

revoke all on function app_private.propagate_hub_activity(int) from public;
grant execute on function app_private.propagate_hub_activity(int) to app_worker;

-- The viewer's page of the list, in (activity_at, hub_id) descending order, after the cursor:
-- one range of the page index. Rows of removed hubs (whose relations are ended with the hub) and
-- of expired invitations are passed over; the caller still reads each hub under its policy.
-- Positional parameters: test/sql/read-plans.test.ts explains this body as it is.
create function app.my_hub_page(p_before_at timestamptz, p_before_id uuid, p_limit int)
  returns table (hub_id uuid, activity_at timestamptz, status text, role app.hub_role, invitation_id uuid)
  language sql stable security definer
  -- A page (at most 51 rows): the planner then joins each row to its hub by index, never scans hubs.
  rows 50
  set search_path = pg_catalog
  as $$
  select e.hub_id, e.activity_at, e.status, e.role, e.invitation_id
  from app_private.hub_list_entries e
  where e.user_id = app.viewer_id()
    and (e.activity_at, e.hub_id) < (coalesce($1::timestamptz, 'infinity'), coalesce($2::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
    and e.expires_at > now()
    and exists (select from app.hubs h where h.id = e.hub_id and h.removed_at is null)
  order by e.activity_at desc, e.hub_id desc
  limit $3::int
$$;

revoke all on function app.my_hub_page(timestamptz, uuid, int) from public;
grant execute on function app.my_hub_page(timestamptz, uuid, int) to app_user;

-- Checks and repairs (like app_private.counter_drift and rebuild_counters): the (user, hub) pairs
-- whose kept row differs from the relation rows (missing, extra or another relation); no rows: all
-- agree. Scans the three tables: for tests and repairs, never requests.
create function app_private.hub_list_entry_drift()
  returns table (user_id uuid, hub_id uuid, kept text, computed text)
  language sql stable
  set search_path = pg_catalog
  as $$
  select coalesce(k.user_id, c.user_id), coalesce(k.hub_id, c.hub_id),
         case when k.user_id is not null then concat_ws(' ', k.status, k.role, k.invitation_id, k.expires_at) end,
         case when c.user_id is not null then concat_ws(' ', c.status, c.role, c.invitation_id, c.expires_at) end
  from (select e.* from app_private.hub_list_entries e where e.expires_at > now()) k
  full join app_private.hub_list_relations() c on c.user_id = k.user_id and c.hub_id = k.hub_id
  where (k.status, k.role, k.invitation_id, k.expires_at) is distinct from (c.status, c.role, c.invitation_id, c.expires_at)
$$;

-- Sets every row from the relation rows, each at its hub's latest activity (after a restore or a
-- bulk load made with triggers off).
create function app_private.rebuild_hub_list_entries()
  returns void
  language plpgsql
  set search_path = pg_catalog
  as $$
begin
  lock table app_private.hub_list_entries in exclusive mode;
  delete from app_private.hub_list_entries;
  insert into app_private.hub_list_entries (hub_id, user_id, activity_at, status, role, invitation_id, expires_at)
  select r.hub_id, r.user_id, greatest(h.last_activity_at, a.last_active_at), r.status, r.role, r.invitation_id, r.expires_at
  from app_private.hub_list_relations() r
  join app.hubs h on h.id = r.hub_id
  left join (select a.hub_id, max(a.last_active_at) as last_active_at from app.hub_activity a group by a.hub_id) a on a.hub_id = r.hub_id;
end
$$;

select app_private.rebuild_hub_list_entries();
