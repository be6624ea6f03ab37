-- Up Migration
-- Hub membership transitions (spec part 3, 6.2; contract section 8): one stored function per
-- transition. Each checks the hub, the current state and the actor's role, writes, and queues its
-- notifications in the same transaction. Notifications to one user are inserted directly; those to
-- "all active members" or "all admins" are a graphile-worker job (hub_notification_fanout), so a
-- fan-out exists if and only if its cause committed.
--
-- Hub-scoped rows (hub_id set) are visible only to active members (0033). Notifications to people
-- who are not members when they happen (an invitation, a rejection, a removal) are therefore global
-- rows (hub_id null) that name their invitation or join request.

-- The viewer's role in an existing hub. Raises HUB_NOT_FOUND for an unknown hub; for a viewer who is
-- not an active member, HUB_ADMIN_REQUIRED when an admin role is required, else
-- HUB_MEMBERSHIP_REQUIRED; HUB_ADMIN_REQUIRED when the role is not one of p_roles.
create function app.require_hub_role(p_hub_id uuid, p_roles app.hub_role[])
  returns app.hub_role
  language plpgsql stable
  set search_path = pg_catalog
  as $$
declare
  v_role app.hub_role;
begin
  if not exists (select from app.hubs h where h.id = p_hub_id) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  select m.role into v_role from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = app.viewer_id();
  if v_role is null or not app.viewer_has_level(4) then
    perform app.fail(case when 'member' = any (p_roles) then 'HUB_MEMBERSHIP_REQUIRED' else 'HUB_ADMIN_REQUIRED' end);
  end if;
  if not v_role = any (p_roles) then
    perform app.fail('HUB_ADMIN_REQUIRED');
  end if;
  return v_role;
end
$$;

-- Queues a fan-out of one notification type to a hub's active members or admins. The payload holds
-- ids only.
create function app_private.queue_hub_fanout(p_hub_id uuid, p_type app.notification_type, p_audience text,
  p_except uuid[], p_join_request_id uuid default null, p_post_id uuid default null)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  select graphile_worker.add_job('hub_notification_fanout', json_build_object(
    'hubId', p_hub_id, 'type', p_type, 'audience', p_audience, 'actorId', app.viewer_id(),
    'except', p_except, 'joinRequestId', p_join_request_id, 'postId', p_post_id));
$$;

-- The fan-out itself (worker/tasks/hub-notification-fanout.ts): one set-based insert over the
-- hub's current members. Content mute (spec 6.3 rule 1) silences the content types only.
create function app_private.fan_out_hub_notification(p_payload jsonb)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_type app.notification_type := (p_payload ->> 'type')::app.notification_type;
  v_count int;
begin
  insert into app.notifications (recipient_id, type, actor_id, hub_id, join_request_id, post_id)
  select m.user_id, v_type, (p_payload ->> 'actorId')::uuid, m.hub_id,
         (p_payload ->> 'joinRequestId')::uuid, (p_payload ->> 'postId')::uuid
  from app.hub_memberships m
  where m.hub_id = (p_payload ->> 'hubId')::uuid
    and not m.user_id = any (coalesce(array(select jsonb_array_elements_text(p_payload -> 'except'))::uuid[], '{}'))
    and (p_payload ->> 'audience' = 'members' or m.role in ('admin', 'super_admin'))
    and not (m.content_muted and v_type in ('hub_post_created', 'post_shared_to_hub', 'post_reposted'));
  get diagnostics v_count = row_count;
  return v_count;
end
$$;

grant execute on function app_private.fan_out_hub_notification(jsonb) to app_worker;

-- Invites phones to a hub. Per distinct phone: nothing for a phone whose user is already an active
-- member or is the inviter; an unexpired pending invitation of the same kind is reused; otherwise a
-- new invitation, attached to the phone's user when there is one (who is notified). A phone with no
-- user yet waits: the invitation attaches when that phone is verified (trigger below).
create function app_private.invite_phones(p_hub_id uuid, p_phones text[], p_requires_approval boolean)
  returns setof app.hub_invitations
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_phone text;
  v_invitee uuid;
  v_invitation app.hub_invitations;
begin
  for v_phone in select distinct p from unnest(p_phones) p loop
    select pi.user_id into v_invitee from app.phone_identities pi where pi.phone_e164 = v_phone;
    continue when v_invitee = app.viewer_id()
      or exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = v_invitee);
    select * into v_invitation from app.hub_invitations i
      where i.hub_id = p_hub_id and i.phone_e164 = v_phone and i.status = 'invited' and i.expires_at > now()
        and i.requires_admin_approval = p_requires_approval
      order by i.created_at desc limit 1;
    if not found then
      insert into app.hub_invitations (hub_id, invited_by, phone_e164, invitee_id, requires_admin_approval)
        values (p_hub_id, app.viewer_id(), v_phone, v_invitee, p_requires_approval)
        returning * into v_invitation;
      if v_invitee is not null then
        insert into app.notifications (recipient_id, type, actor_id, invitation_id)
          values (v_invitee, 'hub_invite_received', app.viewer_id(), v_invitation.id);
      end if;
    end if;
    return next v_invitation;
  end loop;
  perform app_private.touch_hub_activity(p_hub_id, app.viewer_id());
end
$$;

-- Whether an asset may become a hub's image: a completed hub_photo asset of the viewer.
create function app.hub_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (select from app.assets a where a.id = p_asset_id and a.owner_id = app.viewer_id() and a.purpose = 'hub_photo')
$$;

-- POST /hubs: the creator becomes super_admin and first member (with default notification
-- settings), the custom link is reserved (unique, lowercase), and initial invitees get admin
-- invitations.
create function app.create_hub(p_name text, p_description text, p_asset_id uuid, p_custom_link text, p_phones text[])
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_hub uuid;
begin
  perform app.require_level(4);
  if not app.hub_asset_usable(p_asset_id) then
    perform app.fail('VALIDATION_FAILED');
  end if;
  insert into app.hubs (name, description, profile_asset_id, custom_link, created_by)
    values (p_name, coalesce(p_description, ''), p_asset_id, lower(p_custom_link), app.viewer_id())
    returning id into v_hub;
  insert into app.hub_memberships (hub_id, user_id, role) values (v_hub, app.viewer_id(), 'super_admin');
  perform app_private.invite_phones(v_hub, coalesce(p_phones, '{}'), false);
  return v_hub;
end
$$;

-- PATCH /hubs/{hubId} (admin): the fields given (null leaves a field as it is).
create function app.update_hub(p_hub_id uuid, p_name text, p_description text, p_asset_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.require_hub_role(p_hub_id, '{admin,super_admin}');
  if p_asset_id is not null and not app.hub_asset_usable(p_asset_id) then
    perform app.fail('VALIDATION_FAILED');
  end if;
  update app.hubs set name = coalesce(p_name, name), description = coalesce(p_description, description),
                      profile_asset_id = coalesce(p_asset_id, profile_asset_id)
    where id = p_hub_id;
end
$$;

-- PATCH /hubs/{hubId}/link (admin).
create function app.set_hub_link(p_hub_id uuid, p_custom_link text)
  returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.require_hub_role(p_hub_id, '{admin,super_admin}');
  update app.hubs set custom_link = lower(p_custom_link) where id = p_hub_id;
  return lower(p_custom_link);
end
$$;

-- POST /hubs/{hubId}/invitations: admins' invitations lead to membership on accept; members'
-- invitations lead to admin approval.
create function app.invite_to_hub(p_hub_id uuid, p_phones text[])
  returns table (id uuid, masked_phone text, requires_admin_approval boolean, expires_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_role app.hub_role := app.require_hub_role(p_hub_id, '{member,admin,super_admin}');
begin
  return query select i.id, i.masked_phone, i.requires_admin_approval, i.expires_at
    from app_private.invite_phones(p_hub_id, p_phones, v_role = 'member') i;
end
$$;

-- A membership starts: the row, activity, and hub_member_joined to the other active members.
create function app_private.start_membership(p_hub_id uuid, p_user_id uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  insert into app.hub_memberships (hub_id, user_id) values (p_hub_id, p_user_id);
  select app_private.touch_hub_activity(p_hub_id, p_user_id);
  select app_private.queue_hub_fanout(p_hub_id, 'hub_member_joined', 'members', array[p_user_id]);
$$;

-- A join request waits for an admin: hub_join_request_created to the hub's admins. An existing
-- pending request of the user is reused.
create function app_private.open_join_request(p_hub_id uuid, p_source app.join_request_source,
  p_invitation_id uuid, p_invite_link_id uuid)
  returns uuid
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
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

-- The viewer's pending invitation, locked: INVITATION_NOT_FOUND (not the viewer's),
-- INVITATION_NOT_PENDING, INVITATION_EXPIRED.
create function app_private.pending_invitation(p_invitation_id uuid)
  returns app.hub_invitations
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_invitation app.hub_invitations;
begin
  select * into v_invitation from app.hub_invitations i
    where i.id = p_invitation_id and i.invitee_id = app.viewer_id() for update;
  if not found then
    perform app.fail('INVITATION_NOT_FOUND');
  elsif v_invitation.status <> 'invited' then
    perform app.fail('INVITATION_NOT_PENDING');
  elsif v_invitation.expires_at <= now() then
    perform app.fail('INVITATION_EXPIRED');
  end if;
  return v_invitation;
end
$$;

-- POST /hub-invitations/{invitationId}/accept.
create function app.accept_invitation(p_invitation_id uuid, out hub_id uuid, out viewer_status text)
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
  else
    perform app_private.start_membership(v_invitation.hub_id, app.viewer_id());
    viewer_status := 'member';
  end if;
end
$$;

-- POST /hub-invitations/{invitationId}/decline.
create function app.decline_invitation(p_invitation_id uuid)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_invitation app.hub_invitations := app_private.pending_invitation(p_invitation_id);
begin
  update app.hub_invitations set status = 'declined', responded_at = now() where id = p_invitation_id;
  return v_invitation.hub_id;
end
$$;

-- POST /hubs/{hubId}/invite-links (admin). The API makes the random token.
create function app.create_invite_link(p_hub_id uuid, p_token text)
  returns timestamptz
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_expires timestamptz;
begin
  perform app.require_hub_role(p_hub_id, '{admin,super_admin}');
  insert into app.hub_invite_links (hub_id, token, created_by) values (p_hub_id, p_token, app.viewer_id())
    returning expires_at into v_expires;
  return v_expires;
end
$$;

-- A usable invite link: INVITE_LINK_NOT_FOUND, INVITE_LINK_EXPIRED.
create function app_private.usable_invite_link(p_token text)
  returns app.hub_invite_links
  language plpgsql stable
  set search_path = pg_catalog
  as $$
declare
  v_link app.hub_invite_links;
begin
  select * into v_link from app.hub_invite_links l where l.token = p_token;
  if not found then
    perform app.fail('INVITE_LINK_NOT_FOUND');
  elsif v_link.expires_at <= now() then
    perform app.fail('INVITE_LINK_EXPIRED');
  end if;
  return v_link;
end
$$;

-- GET /hub-invite-links/{token}: the hub's safe preview for whoever holds the token.
create function app.invite_link_preview(p_token text,
  out hub_id uuid, out name text, out description text, out photo_key text, out member_count int)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select h.id, h.name, h.description, a.object_key, h.member_count
  from app_private.usable_invite_link(p_token) l
  join app.hubs h on h.id = l.hub_id
  left join app.assets a on a.id = h.profile_asset_id
$$;

-- POST /hub-invite-links/{token}/join-requests: links never create membership directly.
create function app.request_to_join(p_token text, out request_id uuid, out hub_id uuid)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_link app.hub_invite_links := app_private.usable_invite_link(p_token);
begin
  perform app.require_level(4);
  hub_id := v_link.hub_id;
  if exists (select from app.hub_memberships m where m.hub_id = v_link.hub_id and m.user_id = app.viewer_id()) then
    perform app.fail('ALREADY_HUB_MEMBER');
  end if;
  request_id := app_private.open_join_request(v_link.hub_id, 'invite_link', null, v_link.id);
end
$$;

-- A pending join request of the hub, locked (two admins deciding at once: one wins, the other gets
-- JOIN_REQUEST_NOT_PENDING): JOIN_REQUEST_NOT_FOUND, JOIN_REQUEST_NOT_PENDING.
create function app_private.pending_join_request(p_hub_id uuid, p_request_id uuid)
  returns app.hub_join_requests
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_request app.hub_join_requests;
begin
  perform app.require_hub_role(p_hub_id, '{admin,super_admin}');
  select * into v_request from app.hub_join_requests r where r.id = p_request_id and r.hub_id = p_hub_id for update;
  if not found then
    perform app.fail('JOIN_REQUEST_NOT_FOUND');
  elsif v_request.status <> 'pending' then
    perform app.fail('JOIN_REQUEST_NOT_PENDING');
  end if;
  return v_request;
end
$$;

-- POST /hubs/{hubId}/join-requests/{requestId}/approve.
create function app.approve_join_request(p_hub_id uuid, p_request_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
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

-- POST /hubs/{hubId}/join-requests/{requestId}/reject.
create function app.reject_join_request(p_hub_id uuid, p_request_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_request app.hub_join_requests := app_private.pending_join_request(p_hub_id, p_request_id);
begin
  update app.hub_join_requests set status = 'rejected', decided_at = now(), decided_by = app.viewer_id()
    where id = p_request_id;
  insert into app.notifications (recipient_id, type, actor_id, join_request_id)
    values (v_request.user_id, 'hub_join_request_rejected', app.viewer_id(), p_request_id);
end
$$;

-- The target's role in the hub, locked; USER_NOT_FOUND when the target is not an active member.
create function app_private.member_role(p_hub_id uuid, p_user_id uuid)
  returns app.hub_role
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_role app.hub_role;
begin
  select m.role into v_role from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = p_user_id for update;
  if v_role is null then
    perform app.fail('USER_NOT_FOUND');
  end if;
  return v_role;
end
$$;

-- POST /hubs/{hubId}/members/{userId}/remove: admins remove members; only the super_admin removes
-- admins; nobody removes the super_admin.
create function app.remove_hub_member(p_hub_id uuid, p_user_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_actor app.hub_role := app.require_hub_role(p_hub_id, '{admin,super_admin}');
  v_target app.hub_role := app_private.member_role(p_hub_id, p_user_id);
begin
  if v_target = 'super_admin' then
    perform app.fail('SUPER_ADMIN_CANNOT_LEAVE');
  elsif p_user_id = app.viewer_id() or (v_target = 'admin' and v_actor <> 'super_admin') then
    perform app.fail('FORBIDDEN');
  end if;
  delete from app.hub_memberships where hub_id = p_hub_id and user_id = p_user_id;
  insert into app.notifications (recipient_id, type, actor_id) values (p_user_id, 'hub_member_removed', app.viewer_id());
end
$$;

-- Role changes (super_admin only): promote a member to admin, demote an admin to member.
-- Changing to the role already held is a no-op without a notification.
create function app.change_hub_role(p_hub_id uuid, p_user_id uuid, p_role app.hub_role)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_actor app.hub_role := app.require_hub_role(p_hub_id, '{admin,super_admin}');
  v_target app.hub_role;
begin
  if v_actor <> 'super_admin' then
    perform app.fail('FORBIDDEN');
  end if;
  v_target := app_private.member_role(p_hub_id, p_user_id);
  if v_target = 'super_admin' then
    perform app.fail('SUPER_ADMIN_CANNOT_LEAVE');
  end if;
  if v_target = p_role then
    return;
  end if;
  update app.hub_memberships set role = p_role where hub_id = p_hub_id and user_id = p_user_id;
  insert into app.notifications (recipient_id, type, actor_id, hub_id) values (p_user_id, 'hub_role_changed', app.viewer_id(), p_hub_id);
end
$$;

-- DELETE /hubs/{hubId}/membership: the super_admin cannot leave.
create function app.leave_hub(p_hub_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if app.require_hub_role(p_hub_id, '{member,admin,super_admin}') = 'super_admin' then
    perform app.fail('SUPER_ADMIN_CANNOT_LEAVE');
  end if;
  delete from app.hub_memberships where hub_id = p_hub_id and user_id = app.viewer_id();
end
$$;

-- PATCH /hubs/{hubId}/notification-settings.
create function app.set_hub_content_muted(p_hub_id uuid, p_muted boolean)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.require_hub_role(p_hub_id, '{member,admin,super_admin}');
  update app.hub_memberships set content_muted = p_muted where hub_id = p_hub_id and user_id = app.viewer_id();
end
$$;

-- A verified phone picks up the invitations that waited for it, each with its notification.
create function app_private.attach_phone_invitations() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  with attached as (
    update app.hub_invitations set invitee_id = new.user_id
    where phone_e164 = new.phone_e164 and invitee_id is null and status = 'invited' and expires_at > now()
    returning id, invited_by
  )
  insert into app.notifications (recipient_id, type, actor_id, invitation_id)
    select new.user_id, 'hub_invite_received', a.invited_by, a.id from attached a;
  return null;
end
$$;

create trigger phone_identities_attach_invitations
  after insert on app.phone_identities
  for each row execute function app_private.attach_phone_invitations();

grant execute on function app.hub_asset_usable(uuid), app.create_hub(text, text, uuid, text, text[]),
  app.update_hub(uuid, text, text, uuid), app.set_hub_link(uuid, text), app.invite_to_hub(uuid, text[]),
  app.accept_invitation(uuid), app.decline_invitation(uuid), app.create_invite_link(uuid, text),
  app.invite_link_preview(text), app.request_to_join(text), app.approve_join_request(uuid, uuid),
  app.reject_join_request(uuid, uuid), app.remove_hub_member(uuid, uuid), app.change_hub_role(uuid, uuid, app.hub_role),
  app.leave_hub(uuid), app.set_hub_content_muted(uuid, boolean), app.require_hub_role(uuid, app.hub_role[]) to app_user;

-- Down Migration
drop trigger phone_identities_attach_invitations on app.phone_identities;
drop function app_private.attach_phone_invitations();
drop function app.set_hub_content_muted(uuid, boolean);
drop function app.leave_hub(uuid);
drop function app.change_hub_role(uuid, uuid, app.hub_role);
drop function app.remove_hub_member(uuid, uuid);
drop function app_private.member_role(uuid, uuid);
drop function app.reject_join_request(uuid, uuid);
drop function app.approve_join_request(uuid, uuid);
drop function app_private.pending_join_request(uuid, uuid);
drop function app.request_to_join(text);
drop function app.invite_link_preview(text);
drop function app_private.usable_invite_link(text);
drop function app.create_invite_link(uuid, text);
drop function app.decline_invitation(uuid);
drop function app.accept_invitation(uuid);
drop function app_private.pending_invitation(uuid);
drop function app_private.open_join_request(uuid, app.join_request_source, uuid, uuid);
drop function app_private.start_membership(uuid, uuid);
drop function app.invite_to_hub(uuid, text[]);
drop function app.set_hub_link(uuid, text);
drop function app.update_hub(uuid, text, text, uuid);
drop function app.create_hub(text, text, uuid, text, text[]);
drop function app.hub_asset_usable(uuid);
drop function app_private.invite_phones(uuid, text[], boolean);
drop function app_private.fan_out_hub_notification(jsonb);
drop function app_private.queue_hub_fanout(uuid, app.notification_type, text, uuid[], uuid, uuid);
drop function app.require_hub_role(uuid, app.hub_role[]);
