-- Up Migration
-- hub_member_joined names the member who joined as its actor. The fan-out took its actor from the
-- viewer, and on an approved join request the viewer is the approving admin: every member was told
-- the admin had joined (the admin too, about herself). queue_hub_fanout now takes the actor as an
-- optional last argument (left out, it is the viewer, which every other hub event means), and
-- start_membership, the one place a membership begins, passes the joiner.
drop function app_private.queue_hub_fanout(uuid, app.notification_type, text, uuid[], uuid, uuid);

create function app_private.queue_hub_fanout(p_hub_id uuid, p_type app.notification_type, p_audience text,
  p_except uuid[], p_join_request_id uuid default null, p_post_id uuid default null, p_actor_id uuid default null)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  select graphile_worker.add_job('hub_notification_fanout', json_build_object(
    'hubId', p_hub_id, 'type', p_type, 'audience', p_audience, 'actorId', coalesce(p_actor_id, app.viewer_id()),
    'except', p_except, 'joinRequestId', p_join_request_id, 'postId', p_post_id, 'key', gen_random_uuid()));
$$;

revoke all on function app_private.queue_hub_fanout(uuid, app.notification_type, text, uuid[], uuid, uuid, uuid) from public;

create or replace function app_private.start_membership(p_hub_id uuid, p_user_id uuid)
  returns boolean
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  insert into app.hub_memberships (hub_id, user_id) values (p_hub_id, p_user_id)
    on conflict (hub_id, user_id) do nothing;
  if not found then
    return false;
  end if;
  perform app_private.touch_hub_activity(p_hub_id, p_user_id);
  perform app_private.queue_hub_fanout(p_hub_id, 'hub_member_joined', 'members', array[p_user_id],
    p_actor_id => p_user_id);
  return true;
end
$$;
