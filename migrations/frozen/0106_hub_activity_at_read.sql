-- Up Migration
-- A hub's last activity (lastActivityAt of GET /users/me/hubs) is read from app.hub_activity
-- instead of being written into the hubs row (issue 12). Every vote, post placement and message in
-- a hub updated that one row, so all activity in a hub queued on its row lock: 54 of 79 ms of a
-- vote on a hub post, 189 votes/s. Now activity touches only the actor's own (hub, user) row, and
-- the read takes the newest of them through the (hub_id, last_active_at) index: one index probe
-- per listed hub. hubs.last_activity_at keeps the time of everything before this migration (and
-- the hub's creation), so the answer is the later of the two and never goes back.
create or replace function app_private.touch_hub_activity(p_hub_id uuid, p_user_id uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  insert into app.hub_activity (hub_id, user_id) values (p_hub_id, p_user_id)
    on conflict (hub_id, user_id) do update set last_active_at = now();
end
$$;

-- The time of the newest activity in a hub. A hub's activity time is part of its public face
-- (like member_count); who was active stays unreadable (no API role reads app.hub_activity).
create function app.hub_last_activity_at(p_hub_id uuid)
  returns timestamptz
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return greatest(
    (select h.last_activity_at from app.hubs h where h.id = p_hub_id),
    (select max(a.last_active_at) from app.hub_activity a where a.hub_id = p_hub_id));
end
$$;

grant execute on function app.hub_last_activity_at(uuid) to app_user;

-- Down Migration
update app.hubs h set last_activity_at = app.hub_last_activity_at(h.id);
drop function app.hub_last_activity_at(uuid);
create or replace function app_private.touch_hub_activity(p_hub_id uuid, p_user_id uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  insert into app.hub_activity (hub_id, user_id) values (p_hub_id, p_user_id)
    on conflict (hub_id, user_id) do update set last_active_at = now();
  update app.hubs set last_activity_at = now() where id = p_hub_id;
$$;
