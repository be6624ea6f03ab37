-- The activity writers: the one place an activity event and a hub's last activity are written.
-- A hub's last activity (lastActivityAt of GET /users/me/hubs) is read from app.hub_activity
-- instead of being written into the hubs row. Every vote, post placement and message in
-- a hub updated that one row, so all activity in a hub queued on its row lock: 54 of 79 ms of a
-- vote on a hub post, 189 votes/s. Now activity touches only the actor's own (hub, user) row, and
-- the read takes the newest of them through the (hub_id, last_active_at) index: one index probe
-- per listed hub. hubs.last_activity_at keeps the time of everything before the per-member rows were
-- introduced (and the hub's creation), so the answer is the later of the two and never goes back.
--
-- The two writers are plain SQL: the vote (app.cast_vote) calls them inside its one statement, where a
-- PL/pgSQL call would be a statement of its own; every other action calls them with `perform`.
-- The hubs an action touches come as one array (the vote touches every hub where it counts at once).
create or replace function app_private.touch_hub_activity(
  p_hub_ids uuid[],
  p_user_id uuid
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  insert into app.hub_activity(hub_id, user_id)
  select
    h,
    p_user_id
  from
    unnest(p_hub_ids) h
on conflict(hub_id,
  user_id)
  do update set
    last_active_at = now();
$$;

comment on function app_private.touch_hub_activity(uuid[], uuid) is
  'The one writer of a user''s activity in hubs (app.hub_activity): the actor''s row per hub moves to now, which is the hub''s lastActivityAt (hub cards, GET /users/me/hubs) and its list order. Called by app.cast_vote (POST /posts/{postId}/vote), post placement (POST /posts, POST /posts/{postId}/share/hubs), discussion messages (POST /hubs/{hubId}/discussions/{discussionId}/messages), invitations and joining.';

-- The viewer's activity event on a post (a hub share names its hub): what the Home feed of the
-- viewer's followers and co-members shows as "X voted / commented / reposted / shared".
create or replace function app_private.record_activity(
  p_post_id uuid,
  p_kind app.activity_kind,
  p_hub_id uuid default null
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  insert into app.activity_events(actor_id, post_id, kind, hub_id)
    values(app.viewer_id(), p_post_id, p_kind, p_hub_id);
$$;

comment on function app_private.record_activity(uuid, app.activity_kind, uuid) is
  'The one writer of the viewer''s activity events (app.activity_events): what the Home of the viewer''s followers and co-members shows (voted, commented, reposted, shared). Called by app.cast_vote (POST /posts/{postId}/vote), app.create_comment (POST /posts/{postId}/comments), reposts (POST /posts/{postId}/reposts) and shares (POST /posts/{postId}/share/feed, /share/hubs).';

-- The time of the newest activity in a hub. A hub's activity time is part of its public face
-- (like member_count); who was active stays unreadable (no API role reads app.hub_activity).
create or replace function app.hub_last_activity_at(
  p_hub_id uuid
)
  returns timestamptz
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return greatest(
    (select h.last_activity_at from app.hubs h where h.id = p_hub_id),
    (select max(a.last_active_at) from app.hub_activity a where a.hub_id = p_hub_id));
end
$$;

comment on function app.hub_last_activity_at(uuid) is
  'A hub''s newest activity time, its public lastActivityAt: the later of the hub row''s time and the newest app.hub_activity row (who was active stays unreadable). Read by the hub shapes (GET /hubs/{hubId}, hub lists) and the hub list sweep.';

grant execute on function app.hub_last_activity_at(uuid) to app_user;

-- Activity in a hub: the actors' own rows move at once, then each hub without a dirty row gets one
-- (a read when it has one). A statement that wrote no activity row does nothing.
create or replace function app_private.hub_activity_moved()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from new_rows) then
    return null;
  end if;
  update app_private.hub_list_entries e set activity_at = n.last_active_at
    from new_rows n
    where e.hub_id = n.hub_id and e.user_id = n.user_id and e.activity_at < n.last_active_at;
  insert into app_private.hub_list_dirty (hub_id)
    select distinct n.hub_id from new_rows n
    where not exists (select from app_private.hub_list_dirty d where d.hub_id = n.hub_id)
    order by 1
    on conflict (hub_id) do nothing;
  return null;
end
$$;

comment on function app_private.hub_activity_moved() is
  'Trigger function: activity in a hub moves the actors'' own rows of the hub list (app_private.hub_list_entries, GET /users/me/hubs) at once and marks the hub for the sweep that moves the other members'' rows. Triggers _300_hub_lists_insert and _300_hub_lists_update on app.hub_activity.';

-- One step of the sweep, one transaction:
-- - a hub whose sweep is in progress: up to p_batch of its list rows, in user id order from the
--   last reached, set to the activity time the sweep carries (rows of expired invitations are
--   deleted, rows being written by another transaction skipped); the last step ends the sweep and
--   sets when the hub may be swept again;
-- - else a dirty hub that is due is claimed: its dirty row deleted, its latest activity recorded as
--   the time to carry (activity after this commit queues the hub again); answers 0;
-- - else null: nothing to do.
-- Answers the rows scanned otherwise. Hubs being swept by another worker are skipped.
create or replace function app_private.propagate_hub_activity(
  p_batch int
)
  returns int
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v app_private.hub_list_sweeps;
  v_hub uuid;
  v_scanned int;
  v_last uuid;
begin
  select * into v from app_private.hub_list_sweeps s
    where s.target_at is not null
    order by s.not_before, s.hub_id
    limit 1
    for update skip locked;
  if not found then
    delete from app_private.hub_list_dirty d
      where d.hub_id = (select d2.hub_id from app_private.hub_list_dirty d2
                        where not exists (select from app_private.hub_list_sweeps s
                                          where s.hub_id = d2.hub_id and (s.not_before > now() or s.target_at is not null))
                        order by d2.queued_at, d2.hub_id
                        limit 1
                        for update skip locked)
      returning d.hub_id into v_hub;
    if v_hub is null then
      return null;
    end if;
    insert into app_private.hub_list_sweeps as s (hub_id, target_at, after_user, not_before)
      values (v_hub, app.hub_last_activity_at(v_hub), '00000000-0000-0000-0000-000000000000', now())
      on conflict (hub_id) do update set target_at = excluded.target_at, after_user = excluded.after_user;
    return 0;
  end if;
  with scanned as (
    select e.user_id from app_private.hub_list_entries e
    where e.hub_id = v.hub_id and e.user_id > v.after_user
    order by e.user_id
    limit p_batch
  ), stale as (
    select e.user_id, e.expires_at > now() as listed from app_private.hub_list_entries e
    where e.hub_id = v.hub_id and e.user_id in (select s.user_id from scanned s)
      and (e.activity_at < v.target_at or e.expires_at <= now())
    for update skip locked
  ), moved as (
    update app_private.hub_list_entries e set activity_at = v.target_at
    from stale s
    where e.hub_id = v.hub_id and e.user_id = s.user_id and s.listed
  ), expired as (
    delete from app_private.hub_list_entries e using stale s
    where e.hub_id = v.hub_id and e.user_id = s.user_id and not s.listed
  )
  select count(*), (array_agg(s.user_id order by s.user_id desc))[1] into v_scanned, v_last from scanned s;
  if v_scanned < p_batch then
    update app_private.hub_list_sweeps s
      set target_at = null, after_user = null,
          not_before = now() + greatest(app.hub_member_count(v.hub_id), 0) * interval '1 millisecond'
      where s.hub_id = v.hub_id;
  else
    update app_private.hub_list_sweeps s set after_user = v_last where s.hub_id = v.hub_id;
  end if;
  return v_scanned;
end
$$;

comment on function app_private.propagate_hub_activity(integer) is
  'One step of the hub list sweep (worker task propagate_hub_activity): carries a hub''s activity time to its members'' rows of GET /users/me/hubs in batches, deleting rows of expired invitations on the way.';

grant execute on function app_private.propagate_hub_activity(integer) to app_worker;

create trigger _300_hub_lists_insert
  after insert on app.hub_activity referencing new table as new_rows for each statement
  execute function app_private.hub_activity_moved();

comment on trigger _300_hub_lists_insert on app.hub_activity is
  'First activity of a user in a hub: moves the hub list rows (app_private.hub_activity_moved).';

create trigger _300_hub_lists_update
  after update on app.hub_activity referencing new table as new_rows for each statement
  execute function app_private.hub_activity_moved();

comment on trigger _300_hub_lists_update on app.hub_activity is
  'Later activity of a user in a hub: moves the hub list rows (app_private.hub_activity_moved).';
