-- Up Migration
-- Two transitions that make the same membership at once (accepting two invitations to one hub
-- concurrently, or accepting while an admin approves a join request) both saw no membership and the
-- second insert broke hub_memberships_pkey (500). start_membership now skips on that conflict and
-- says whether it made the membership; only the one that did touches activity and queues
-- hub_member_joined. Accepting answers ALREADY_HUB_MEMBER when another transition won, as a
-- second acceptance does; approving keeps approving a request of a user who became a member.
drop function app_private.start_membership(uuid, uuid);

create function app_private.start_membership(p_hub_id uuid, p_user_id uuid)
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
  perform app_private.queue_hub_fanout(p_hub_id, 'hub_member_joined', 'members', array[p_user_id]);
  return true;
end
$$;

revoke all on function app_private.start_membership(uuid, uuid) from public;

create or replace function app.accept_invitation(p_invitation_id uuid, out hub_id uuid, out viewer_status text)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_invitation app.hub_invitations;
begin
  perform app.require_level(4);
  v_invitation := app_private.pending_invitation(p_invitation_id);
  hub_id := v_invitation.hub_id;
  if exists (select from app.hub_memberships m where m.hub_id = v_invitation.hub_id and m.user_id = app.viewer_id()) then
    perform app.fail('ALREADY_HUB_MEMBER');
  end if;
  update app.hub_invitations set status = 'accepted', responded_at = now() where id = p_invitation_id;
  if v_invitation.requires_admin_approval then
    perform app_private.open_join_request(v_invitation.hub_id, 'member_invitation', v_invitation.id, null);
    viewer_status := 'pending_admin_approval';
  elsif app_private.start_membership(v_invitation.hub_id, app.viewer_id()) then
    viewer_status := 'member';
  else
    perform app.fail('ALREADY_HUB_MEMBER');
  end if;
end
$$;

create or replace function app.approve_join_request(p_hub_id uuid, p_request_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_request app.hub_join_requests := app_private.pending_join_request(p_hub_id, p_request_id);
begin
  update app.hub_join_requests set status = 'approved', decided_at = now(), decided_by = app.viewer_id()
    where id = p_request_id;
  perform app_private.start_membership(p_hub_id, v_request.user_id);
  insert into app.notifications (recipient_id, type, actor_id, hub_id, join_request_id)
    values (v_request.user_id, 'hub_join_request_approved', app.viewer_id(), p_hub_id, p_request_id);
end
$$;

-- Down Migration
drop function app_private.start_membership(uuid, uuid);

create function app_private.start_membership(p_hub_id uuid, p_user_id uuid) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog'
    AS $$
  insert into app.hub_memberships (hub_id, user_id) values (p_hub_id, p_user_id);
  select app_private.touch_hub_activity(p_hub_id, p_user_id);
  select app_private.queue_hub_fanout(p_hub_id, 'hub_member_joined', 'members', array[p_user_id]);
$$;

revoke all on function app_private.start_membership(uuid, uuid) from public;

create or replace function app.accept_invitation(p_invitation_id uuid, OUT hub_id uuid, OUT viewer_status text) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
declare
  v_invitation app.hub_invitations;
begin
  perform app.require_level(4);
  v_invitation := app_private.pending_invitation(p_invitation_id);
  hub_id := v_invitation.hub_id;
  if exists (select from app.hub_memberships m where m.hub_id = v_invitation.hub_id and m.user_id = app.viewer_id()) then
    perform app.fail('ALREADY_HUB_MEMBER');
  end if;
  update app.hub_invitations set status = 'accepted', responded_at = now() where id = p_invitation_id;
  if v_invitation.requires_admin_approval then
    perform app_private.open_join_request(v_invitation.hub_id, 'member_invitation', v_invitation.id, null);
    viewer_status := 'pending_admin_approval';
  else
    perform app_private.start_membership(v_invitation.hub_id, app.viewer_id());
    viewer_status := 'member';
  end if;
end
$$;

create or replace function app.approve_join_request(p_hub_id uuid, p_request_id uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
declare
  v_request app.hub_join_requests := app_private.pending_join_request(p_hub_id, p_request_id);
begin
  update app.hub_join_requests set status = 'approved', decided_at = now(), decided_by = app.viewer_id()
    where id = p_request_id;
  if not exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = v_request.user_id) then
    perform app_private.start_membership(p_hub_id, v_request.user_id);
  end if;
  insert into app.notifications (recipient_id, type, actor_id, hub_id, join_request_id)
    values (v_request.user_id, 'hub_join_request_approved', app.viewer_id(), p_hub_id, p_request_id);
end
$$;
