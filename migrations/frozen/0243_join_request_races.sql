-- Up Migration
-- A join request sent concurrently by one user answered 500: two requests both saw no pending
-- request, both inserted, and the second broke hub_join_requests_one_pending. The insert now skips
-- on that conflict (waiting for the first to commit) and answers the request that is pending, as a
-- second request answers it; the admins' fan-out is queued only by the request that inserted.
create or replace function app_private.open_join_request(p_hub_id uuid, p_source app.join_request_source,
  p_invitation_id uuid, p_invite_link_id uuid)
  returns uuid
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_request uuid;
begin
  insert into app.hub_join_requests (hub_id, user_id, source, invitation_id, invite_link_id)
    values (p_hub_id, app.viewer_id(), p_source, p_invitation_id, p_invite_link_id)
    on conflict (hub_id, user_id) where status = 'pending' do nothing
    returning id into v_request;
  if v_request is not null then
    perform app_private.queue_hub_fanout(p_hub_id, 'hub_join_request_created', 'admins', '{}', v_request);
    return v_request;
  end if;
  -- A new statement sees the pending request the conflicting transaction committed.
  select r.id into v_request from app.hub_join_requests r
    where r.hub_id = p_hub_id and r.user_id = app.viewer_id() and r.status = 'pending';
  return v_request;
end
$$;

-- Down Migration
create or replace function app_private.open_join_request(p_hub_id uuid, p_source app.join_request_source, p_invitation_id uuid, p_invite_link_id uuid) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
declare
  v_request uuid;
begin
  select r.id into v_request from app.hub_join_requests r
    where r.hub_id = p_hub_id and r.user_id = app.viewer_id() and r.status = 'pending';
  if v_request is null then
    insert into app.hub_join_requests (hub_id, user_id, source, invitation_id, invite_link_id)
      values (p_hub_id, app.viewer_id(), p_source, p_invitation_id, p_invite_link_id)
      returning id into v_request;
    perform app_private.queue_hub_fanout(p_hub_id, 'hub_join_request_created', 'admins', '{}', v_request);
  end if;
  return v_request;
end
$$;
