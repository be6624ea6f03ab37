-- Hubs: creation and settings, memberships and roles, invitations, join requests, invite links, hub
-- profiles, the membership rules the other domains' policies use (app.is_active_member, co-members).
create or replace function app.viewer_active_hub_ids()
  returns uuid[]
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return (select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
          where m.user_id = app.viewer_id() and app.viewer_has_level(app.access_level('hub_ready')));
end
$$;

comment on function app.viewer_active_hub_ids() is
  'The hubs the viewer is an active member of (a membership, and the viewer at access level 4), as one array. Used by the discussion, saved-discussion, invitation and post placement select policies, app.hub_discussion_thread, app.hub_discussion_author and app_private.feed_page.';

grant execute on function app.viewer_active_hub_ids() to app_user;

create or replace function app.viewer_admin_hub_ids()
  returns uuid[]
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return (select coalesce(array_agg(m.hub_id), '{}') from app.hub_memberships m
          where m.user_id = app.viewer_id() and m.role in ('admin', 'super_admin') and app.viewer_has_level(app.access_level('hub_ready')));
end
$$;

comment on function app.viewer_admin_hub_ids() is
  'The hubs the viewer administers (admin or super_admin, at access level 4). Used by the policies hub_invite_links_select_admin and hub_join_requests_select (GET /hubs/{hubId}/join-requests).';

grant execute on function app.viewer_admin_hub_ids() to app_user;

-- Had no caller but a test (the policies ask app.viewer_shares_hub_with per row): dropped.
drop function if exists app.viewer_co_member_ids();

create or replace function app.is_active_member(
  p_hub_id uuid,
  p_user_id uuid
)
  returns boolean
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return (select m.active from app_private.active_member(p_hub_id, p_user_id) m); end $$;

comment on function app.is_active_member(uuid, uuid) is
  'Whether a user is an active member of a hub (app_private.active_member: a membership, and the user at access level 4). Used by app.cast_vote, app.hub_feed, app.create_repost, app.hub_discussion_author and the post visibility helpers app_private.repost_visible and app_private.scope_visible.';

grant execute on function app.is_active_member(uuid, uuid) to app_user;

-- activeUsers24h (GET /hubs/{hubId}, every row of GET /search/hubs) counted every member active in
-- the hub's last day on every read: 100,000 active members, 100,000 index entries per hub card.
-- It is a window that moves with the clock, so no write can keep it (a member drops out of it by
-- doing nothing); it becomes a bounded count instead: exact up to 1,000, and 1,000 means at least
-- 1,000 (the OpenAPI document says so). The count reads at most 1,000 entries of the
-- (hub_id, last_active_at) index, whatever the hub's size: a cursor newest first, moved over at
-- most 1,000 rows, planned for its hub (as the page functions are). A plan for any hub expects
-- every hub to hold what the one hot hub does, and a plain count then read the whole table for
-- each hub card (PostgreSQL 15-17, whose SQL functions are planned without the hub's value).
create or replace function app.hub_active_users(
  p_hub_id uuid
)
  returns integer
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  set plan_cache_mode = force_custom_plan
  as $$
declare
  v_recent refcursor;
  v_count integer;
begin
  open v_recent no scroll for
    select from app.hub_activity a
    where a.hub_id = p_hub_id and a.last_active_at > now() - interval '24 hours'
    order by a.last_active_at desc;
  move forward 1000 in v_recent;
  get diagnostics v_count = row_count;
  close v_recent;
  return v_count;
end
$$;

comment on function app.hub_active_users(uuid) is
  'The activeUsers24h of a hub: members active in its last 24 hours, counted up to 1,000 (1,000 means at least 1,000), at a bounded cost. Read by GET /hubs/{hubId}, PATCH /hubs/{hubId} and GET /search/hubs.';

grant execute on function app.hub_active_users(uuid) to app_user;

-- Hubs the Hub-ready viewer is related to: active member, invited (pending, unexpired invitation)
-- or pending admin approval. Such viewers may look at the hub's member list (dark for the latter two).
create or replace function app.viewer_related_hub_ids()
  returns uuid[]
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    coalesce(array_agg(distinct hub_id), '{}')
  from(
    select
      m.hub_id
    from
      app.hub_memberships m
    where
      m.user_id = app.viewer_id()
    union all
    select
      i.hub_id
    from
      app.hub_invitations i
    where
      i.invitee_id = app.viewer_id()
      and i.status = 'invited'
      and i.expires_at > now()
    union all
    select
      r.hub_id
    from
      app.hub_join_requests r
    where
      r.user_id = app.viewer_id()
      and r.status = 'pending') related
where
  app.viewer_has_level(app.access_level('hub_ready'))
$$;

comment on function app.viewer_related_hub_ids() is
  'The hubs the viewer (at access level 4) is related to: active member, invited (pending, unexpired) or waiting for admin approval; such viewers see the hub''s member list. Used by the policy hub_memberships_select_related and app.hub_member_page.';

grant execute on function app.viewer_related_hub_ids() to app_user;

-- The viewer's role in an existing hub. Raises HUB_NOT_FOUND for an unknown hub; for a viewer who is
-- not an active member, HUB_ADMIN_REQUIRED when an admin role is required, else
-- HUB_MEMBERSHIP_REQUIRED; HUB_ADMIN_REQUIRED when the role is not one of p_roles.
create or replace function app.require_hub_role(
  p_hub_id uuid,
  p_roles app.hub_role[]
)
  returns app.hub_role
  language plpgsql
  stable
  set search_path = pg_catalog
  as $$
declare
  v_role app.hub_role;
begin
  if not exists (select from app.hubs h where h.id = p_hub_id) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  select m.role into v_role from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = app.viewer_id();
  if v_role is null or not app.viewer_has_level(app.access_level('hub_ready')) then
    perform app.fail(case when 'member' = any (p_roles) then 'HUB_MEMBERSHIP_REQUIRED' else 'HUB_ADMIN_REQUIRED' end);
  end if;
  if not v_role = any (p_roles) then
    perform app.fail('HUB_ADMIN_REQUIRED');
  end if;
  return v_role;
end
$$;

comment on function app.require_hub_role(uuid, app.hub_role[]) is
  'The hub role gate: the viewer''s role in an existing hub, or HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED or HUB_ADMIN_REQUIRED. Called by the hub functions that act for a role (update, link, invitations, invite links, join requests, members, leave, mute), app_private.check_post_audience, app.share_post_to_hubs, app.hub_discussion_thread, and by GET /hubs/{hubId}/invitations, GET /hubs/{hubId}/join-requests, GET /hubs/{hubId}/notification-settings, GET /hubs/{hubId}/discussions and GET /posts/{postId}/vote/summary with a hubId.';

grant execute on function app.require_hub_role(uuid, app.hub_role[]) to app_user;

-- Invitations: "an unexpired pending invitation of the same kind is reused" did not hold under
-- concurrency (two identical requests both found none and made two invitations, two
-- notifications). No unique constraint can say it (expiry depends on now()), so one transaction at
-- a time decides per hub and phone: a transaction advisory lock per (hub, phone), taken in phone
-- order so that two requests naming the same phones cannot deadlock, and the next statement sees
-- what the previous holder committed.
create or replace function app_private.invite_phones(
  p_hub_id uuid,
  p_phones text[],
  p_requires_approval boolean
)
  returns setof app.hub_invitations
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_phone text;
  v_invitee uuid;
  v_invitation app.hub_invitations;
begin
  for v_phone in select distinct p from unnest(p_phones) p order by p loop
    perform pg_advisory_xact_lock(hashtextextended('hub_invitation:' || p_hub_id || ':' || v_phone, 0));
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
  perform app_private.touch_hub_activity(array[p_hub_id], app.viewer_id());
end
$$;

comment on function app_private.invite_phones(uuid, text[], boolean) is
  'Invites phone numbers to a hub: reuses an unexpired pending invitation of the same kind, else creates one and notifies a known invitee (hub_invite_received); one transaction at a time per hub and phone (advisory lock). Called by app.create_hub (POST /hubs) and app.invite_to_hub (POST /hubs/{hubId}/invitations).';

-- POST /hubs: the creator becomes super_admin and first member (with default notification
-- settings), the custom link is reserved (unique, lowercase), and initial invitees get admin
-- invitations.
create or replace function app.create_hub(
  p_name text,
  p_description text,
  p_asset_id uuid,
  p_custom_link text,
  p_phones text[]
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_hub uuid;
begin
  perform app.require_level(app.access_level('hub_ready'));
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

comment on function app.create_hub(text, text, uuid, text, text[]) is
  'Creates a hub (level 4): the creator becomes its super_admin, the custom link is stored lowercase, the initial phones get admin invitations. Called by POST /hubs.';

grant execute on function app.create_hub(text, text, uuid, text, text[]) to app_user;

-- PATCH /hubs/{hubId} (admin): the fields given (null leaves a field as it is).
create or replace function app.update_hub(
  p_hub_id uuid,
  p_name text,
  p_description text,
  p_asset_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app.update_hub(uuid, text, text, uuid) is
  'Changes a hub''s name, description or image (admins; null leaves a field as it is). Called by PATCH /hubs/{hubId}.';

grant execute on function app.update_hub(uuid, text, text, uuid) to app_user;

-- PATCH /hubs/{hubId}/link (admin).
create or replace function app.set_hub_link(
  p_hub_id uuid,
  p_custom_link text
)
  returns text
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.require_hub_role(p_hub_id, '{admin,super_admin}');
  update app.hubs set custom_link = lower(p_custom_link) where id = p_hub_id;
  return lower(p_custom_link);
end
$$;

comment on function app.set_hub_link(uuid, text) is
  'Changes a hub''s custom link, stored lowercase (admins). Called by PATCH /hubs/{hubId}/link.';

grant execute on function app.set_hub_link(uuid, text) to app_user;

-- POST /hubs/{hubId}/invitations: admins' invitations lead to membership on accept; members'
-- invitations lead to admin approval.
create or replace function app.invite_to_hub(
  p_hub_id uuid,
  p_phones text[]
)
  returns table(
      id uuid,
      masked_phone text,
      requires_admin_approval boolean,
      expires_at timestamptz
)
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_role app.hub_role := app.require_hub_role(p_hub_id, '{member,admin,super_admin}');
begin
  return query select i.id, i.masked_phone, i.requires_admin_approval, i.expires_at
    from app_private.invite_phones(p_hub_id, p_phones, v_role = 'member') i;
end
$$;

comment on function app.invite_to_hub(uuid, text[]) is
  'Invites phone numbers to a hub (active members): an admin''s invitation leads to membership on accept, a member''s to admin approval. Called by POST /hubs/{hubId}/invitations.';

grant execute on function app.invite_to_hub(uuid, text[]) to app_user;

-- Joining a hub, in order (the names are the code's):
--   1. app.hub_memberships: the membership (none when already a member: false); when that insert
--      ends, its triggers, which hold whoever writes a membership: _300_list_entry
--      (app_private.hub_list_relation_changed: the member's row of GET /users/me/hubs), then
--      _500_count_insert (app_private.count_hub_memberships: hub_members);
--   2. app_private.touch_hub_activity: the member's activity in the hub (app.hub_activity's
--      triggers _300_hub_lists_insert and _300_hub_lists_update: the hub list);
--   3. app_private.queue_hub_fanout: the hub_member_joined fan-out job for the other members.
create or replace function app_private.start_membership(
  p_hub_id uuid,
  p_user_id uuid
)
  returns boolean
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
begin
  insert into app.hub_memberships (hub_id, user_id) values (p_hub_id, p_user_id)
    on conflict (hub_id, user_id) do nothing;
  if not found then
    return false;
  end if;
  perform app_private.touch_hub_activity(array[p_hub_id], p_user_id);
  perform app_private.queue_hub_fanout(p_hub_id, 'hub_member_joined', 'members', array[p_user_id],
    p_actor_id => p_user_id);
  return true;
end
$$;

comment on function app_private.start_membership(uuid, uuid) is
  'Makes a user a member of a hub (false when already one), records their hub activity and queues the hub_member_joined fan-out. Called by app.accept_invitation and app.approve_join_request.';

-- Opens a user's join request, or answers the one pending. Two requests of one user may both see
-- no pending request, so the insert skips on hub_join_requests_one_pending (waiting for the first
-- to commit) and answers the request that is pending, as a later request does; the admins'
-- fan-out is queued only by the request that inserted.
create or replace function app_private.open_join_request(
  p_hub_id uuid,
  p_source app.join_request_source,
  p_invitation_id uuid,
  p_invite_link_id uuid
)
  returns uuid
  language plpgsql
  volatile
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

comment on function app_private.open_join_request(uuid, app.join_request_source, uuid, uuid) is
  'Opens the viewer''s join request to a hub, or answers the one already pending (concurrent requests make one); only the request that inserted queues the admins'' hub_join_request_created fan-out. Called by app.accept_invitation and app.request_to_join.';

-- The viewer's pending invitation, locked: INVITATION_NOT_FOUND (not the viewer's),
-- INVITATION_NOT_PENDING, INVITATION_EXPIRED.
create or replace function app_private.pending_invitation(
  p_invitation_id uuid
)
  returns app.hub_invitations
  language plpgsql
  volatile
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

comment on function app_private.pending_invitation(uuid) is
  'The viewer''s pending, unexpired invitation, locked, or INVITATION_NOT_FOUND, INVITATION_NOT_PENDING, INVITATION_EXPIRED. Called by app.accept_invitation and app.decline_invitation.';

create or replace function app.accept_invitation(
  p_invitation_id uuid,
  out hub_id uuid,
  out viewer_status text
)
language plpgsql
volatile
security definer
set search_path = pg_catalog
as $$
declare
  v_invitation app.hub_invitations;
begin
  perform app.require_level(app.access_level('hub_ready'));
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

comment on function app.accept_invitation(uuid) is
  'Accepts the viewer''s invitation (level 4): membership for an admin''s invitation, a join request for a member''s. Called by POST /hub-invitations/{invitationId}/accept.';

grant execute on function app.accept_invitation(uuid) to app_user;

-- POST /hub-invitations/{invitationId}/decline.
create or replace function app.decline_invitation(
  p_invitation_id uuid
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_invitation app.hub_invitations := app_private.pending_invitation(p_invitation_id);
begin
  update app.hub_invitations set status = 'declined', responded_at = now() where id = p_invitation_id;
  return v_invitation.hub_id;
end
$$;

comment on function app.decline_invitation(uuid) is
  'Declines the viewer''s pending invitation. Called by POST /hub-invitations/{invitationId}/decline.';

grant execute on function app.decline_invitation(uuid) to app_user;

-- POST /hubs/{hubId}/invite-links (admin). The API makes the random token.
create or replace function app.create_invite_link(
  p_hub_id uuid,
  p_token text
)
  returns timestamptz
  language plpgsql
  volatile
  security definer
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

comment on function app.create_invite_link(uuid, text) is
  'Stores an invite link of a hub with the token the API made (admins); returns when it expires. Called by POST /hubs/{hubId}/invite-links.';

grant execute on function app.create_invite_link(uuid, text) to app_user;

-- A usable invite link: INVITE_LINK_NOT_FOUND, INVITE_LINK_EXPIRED.
create or replace function app_private.usable_invite_link(
  p_token text
)
  returns app.hub_invite_links
  language plpgsql
  stable
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

comment on function app_private.usable_invite_link(text) is
  'An invite link by token, or INVITE_LINK_NOT_FOUND, INVITE_LINK_EXPIRED. Used by app.invite_link_preview and app.request_to_join.';

create or replace function app.invite_link_preview(
  p_token text,
  out hub_id uuid,
  out name text,
  out description text,
  out photo_key text,
  out member_count integer
)
language sql
stable
security definer
set search_path = pg_catalog
as $$
  select
    h.id,
    h.name,
    h.description,
    app.image_key(a.status, a.display_key, a.object_key),
    app_private.counter_value('hub_members', h.id)::integer
  from
    app_private.usable_invite_link(p_token) l
  join app.hubs h on h.id = l.hub_id
  left join app.assets a on a.id = h.profile_asset_id
$$;

comment on function app.invite_link_preview(text) is
  'The safe preview of a hub through a usable invite link (name, description, image, member count), for any holder of the token. Called by GET /hub-invite-links/{token} and the web page /hub-invite-links/{token}.';

grant execute on function app.invite_link_preview(text) to app_user;

grant execute on function app.invite_link_preview(text) to app_anonymous;

-- POST /hub-invite-links/{token}/join-requests: links never create membership directly.
create or replace function app.request_to_join(
  p_token text,
  out request_id uuid,
  out hub_id uuid
)
language plpgsql
volatile
security definer
set search_path = pg_catalog
as $$
declare
  v_link app.hub_invite_links := app_private.usable_invite_link(p_token);
begin
  perform app.require_level(app.access_level('hub_ready'));
  hub_id := v_link.hub_id;
  if exists (select from app.hub_memberships m where m.hub_id = v_link.hub_id and m.user_id = app.viewer_id()) then
    perform app.fail('ALREADY_HUB_MEMBER');
  end if;
  request_id := app_private.open_join_request(v_link.hub_id, 'invite_link', null, v_link.id);
end
$$;

comment on function app.request_to_join(text) is
  'Asks to join a hub through an invite link (level 4); a link never makes a member directly. Called by POST /hub-invite-links/{token}/join-requests.';

grant execute on function app.request_to_join(text) to app_user;

-- A pending join request of the hub, locked (two admins deciding at once: one wins, the other gets
-- JOIN_REQUEST_NOT_PENDING): JOIN_REQUEST_NOT_FOUND, JOIN_REQUEST_NOT_PENDING.
create or replace function app_private.pending_join_request(
  p_hub_id uuid,
  p_request_id uuid
)
  returns app.hub_join_requests
  language plpgsql
  volatile
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

comment on function app_private.pending_join_request(uuid, uuid) is
  'A pending join request of the hub, locked, for an admin of the hub (two admins deciding at once: one wins), or JOIN_REQUEST_NOT_FOUND, JOIN_REQUEST_NOT_PENDING. Called by app.approve_join_request and app.reject_join_request.';

create or replace function app.approve_join_request(
  p_hub_id uuid,
  p_request_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app.approve_join_request(uuid, uuid) is
  'Approves a join request (admins): the requester becomes a member and is notified (hub_join_request_approved). Called by POST /hubs/{hubId}/join-requests/{requestId}/approve.';

grant execute on function app.approve_join_request(uuid, uuid) to app_user;

-- POST /hubs/{hubId}/join-requests/{requestId}/reject.
create or replace function app.reject_join_request(
  p_hub_id uuid,
  p_request_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app.reject_join_request(uuid, uuid) is
  'Rejects a join request (admins) and notifies the requester (hub_join_request_rejected). Called by POST /hubs/{hubId}/join-requests/{requestId}/reject.';

grant execute on function app.reject_join_request(uuid, uuid) to app_user;

-- GET /hubs/{hubId}/invitations: one page of a hub's invitations, newest first after (p_after_at,
-- p_after_id) (null: from the first), at most p_limit rows, with who invited and their photo's key,
-- through the policies (the caller's rights). A cursor planned for its first rows walks
-- hub_invitations_hub_page in order whatever the statistics say the hub holds (docs/performance.md,
-- "Hot values"); one FETCH, hence volatile, as the other page functions.
create or replace function app.hub_invitation_page(
  p_hub_id uuid,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      invitation_id uuid,
      masked_phone text,
      status app.invitation_status,
      expires_at timestamptz,
      created_at timestamptz,
      inviter_id uuid,
      username text,
      full_name text,
      photo_key text
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_at timestamptz := coalesce(p_after_at, 'infinity');
  v_id uuid := coalesce(p_after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
begin
  open v_rows no scroll for
    select i.id, i.masked_phone, i.status, i.expires_at, i.created_at, u.id, u.username, u.full_name, app.image_key(a.status, a.display_key, a.object_key)
    from app.hub_invitations i
    join app.users u on u.id = i.invited_by
    left join app.assets a on a.id = u.profile_asset_id
    where i.hub_id = p_hub_id and (i.created_at, i.id) < (v_at, v_id)
    order by i.created_at desc, i.id desc;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.hub_invitation_page(uuid, timestamp with time zone, uuid, integer) is
  'One page of a hub''s invitations, newest first after a cursor, with the inviter, through the policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /hubs/{hubId}/invitations.';

grant execute on function app.hub_invitation_page(uuid, timestamp with time zone, uuid, integer) to app_user;

-- GET /hubs/{hubId}/join-requests: one page of a hub's pending join requests, oldest first after
-- (p_after_at, p_after_id) (null: from the first), at most p_limit rows, with the requester and
-- their photo's key, through the policies. A cursor planned for its first rows walks
-- hub_join_requests_hub_page in order whatever the statistics say the hub holds; one FETCH, hence
-- volatile.
create or replace function app.hub_join_request_page(
  p_hub_id uuid,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      request_id uuid,
      source app.join_request_source,
      created_at timestamptz,
      user_id uuid,
      username text,
      full_name text,
      photo_key text
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_at timestamptz := coalesce(p_after_at, '-infinity');
  v_id uuid := coalesce(p_after_id, '00000000-0000-0000-0000-000000000000');
begin
  open v_rows no scroll for
    select r.id, r.source, r.created_at, u.id, u.username, u.full_name, app.image_key(a.status, a.display_key, a.object_key)
    from app.hub_join_requests r
    join app.users u on u.id = r.user_id
    left join app.assets a on a.id = u.profile_asset_id
    where r.hub_id = p_hub_id and r.status = 'pending' and (r.created_at, r.id) > (v_at, v_id)
    order by r.created_at, r.id;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.hub_join_request_page(uuid, timestamp with time zone, uuid, integer) is
  'One page of a hub''s pending join requests, oldest first after a cursor, with the requester, through the policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /hubs/{hubId}/join-requests.';

grant execute on function app.hub_join_request_page(uuid, timestamp with time zone, uuid, integer) to app_user;

-- The target's role in the hub, locked; USER_NOT_FOUND when the target is not an active member.
create or replace function app_private.member_role(
  p_hub_id uuid,
  p_user_id uuid
)
  returns app.hub_role
  language plpgsql
  volatile
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

comment on function app_private.member_role(uuid, uuid) is
  'A member''s role in the hub, locked, or USER_NOT_FOUND when not a member. Called by app.remove_hub_member and app.change_hub_role.';

-- POST /hubs/{hubId}/members/{userId}/remove: admins remove members; only the super_admin removes
-- admins; nobody removes the super_admin.
create or replace function app.remove_hub_member(
  p_hub_id uuid,
  p_user_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app.remove_hub_member(uuid, uuid) is
  'Removes a member (admins remove members, only the super_admin removes admins, nobody removes the super_admin) and notifies them (hub_member_removed). Called by POST /hubs/{hubId}/members/{userId}/remove.';

grant execute on function app.remove_hub_member(uuid, uuid) to app_user;

-- Role changes (super_admin only): promote a member to admin, demote an admin to member.
-- Changing to the role already held is a no-op without a notification.
create or replace function app.change_hub_role(
  p_hub_id uuid,
  p_user_id uuid,
  p_role app.hub_role
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app.change_hub_role(uuid, uuid, app.hub_role) is
  'Promotes a member to admin or demotes an admin to member (super_admin only), notifying them (hub_role_changed); the role already held is a no-op. Called by POST /hubs/{hubId}/admins and DELETE /hubs/{hubId}/admins/{userId}.';

grant execute on function app.change_hub_role(uuid, uuid, app.hub_role) to app_user;

-- DELETE /hubs/{hubId}/membership: the super_admin cannot leave.
create or replace function app.leave_hub(
  p_hub_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if app.require_hub_role(p_hub_id, '{member,admin,super_admin}') = 'super_admin' then
    perform app.fail('SUPER_ADMIN_CANNOT_LEAVE');
  end if;
  delete from app.hub_memberships where hub_id = p_hub_id and user_id = app.viewer_id();
end
$$;

comment on function app.leave_hub(uuid) is 'The viewer leaves a hub; the super_admin cannot. Called by DELETE /hubs/{hubId}/membership.';

grant execute on function app.leave_hub(uuid) to app_user;

-- PATCH /hubs/{hubId}/notification-settings.
create or replace function app.set_hub_content_muted(
  p_hub_id uuid,
  p_muted boolean
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.require_hub_role(p_hub_id, '{member,admin,super_admin}');
  update app.hub_memberships set content_muted = p_muted where hub_id = p_hub_id and user_id = app.viewer_id();
end
$$;

comment on function app.set_hub_content_muted(uuid, boolean) is
  'Mutes or unmutes a hub''s content notifications for the viewer (active members). Called by PATCH /hubs/{hubId}/notification-settings.';

grant execute on function app.set_hub_content_muted(uuid, boolean) to app_user;

-- A verified phone picks up the invitations that waited for it, each with its notification.
create or replace function app_private.attach_phone_invitations()
  returns trigger
  language plpgsql
  security definer
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

comment on function app_private.attach_phone_invitations() is
  'A verified phone picks up the pending invitations that waited for it, each with its hub_invite_received notification. Runs from the trigger _300_attach_invitations on app.phone_identities (app_private.sign_in_phone: POST /auth/otp/verify, POST /auth/idp/token).';

-- The viewer's relationship to a hub (viewerStatus of spec 2.5): 'member', 'pending_admin_approval'
-- or 'invited' (an unexpired pending invitation), or null; null below level 4 too.
-- HUB_NOT_FOUND for an unknown hub.
create or replace function app.viewer_hub_status(
  p_hub_id uuid
)
  returns text
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.hubs h where h.id = p_hub_id) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  if not app.viewer_has_level(app.access_level('hub_ready')) then
    return null;
  end if;
  -- The relation as GET /users/me/hubs shows it (member before a pending request before an invitation).
  return (select r.status from app_private.hub_list_relation(app.viewer_id(), p_hub_id) r);
end
$$;

comment on function app.viewer_hub_status(uuid) is
  'The viewer''s relation to a hub (member, pending_admin_approval, invited, or null; null below level 4), or HUB_NOT_FOUND. Read by GET /hubs/{hubId}, PATCH /hubs/{hubId}, GET /hubs/{hubId}/members and GET /hubs/{hubId}/admins.';

grant execute on function app.viewer_hub_status(uuid) to app_user;

-- The members of a hub as hub_memberships_select_related shows them (the viewer's own row, or any
-- hub the viewer is related to), with join time and role. The member list (GET /hubs/{id}/members
-- and its admins page) selects from this instead of the table.
-- Had no caller but a test (the member lists read app.hub_member_page): dropped.
drop function if exists app.hub_member_roster(uuid);

-- The viewer's own notification setting for a hub (false when not a member).
create or replace function app.viewer_hub_content_muted(
  p_hub_id uuid
)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    coalesce((
      select
        m.content_muted
      from app.hub_memberships m
      where
        m.hub_id = p_hub_id
        and m.user_id = app.viewer_id()), false)
$$;

comment on function app.viewer_hub_content_muted(uuid) is
  'The viewer''s notification setting for a hub (false when not a member). Called by GET /hubs/{hubId}/notification-settings.';

grant execute on function app.viewer_hub_content_muted(uuid) to app_user;

-- Had no caller (GET /users/me/hubs reads app.my_hub_page): dropped, so app_user may not call it.
-- Functions are replaced in place, never dropped by reset.sql: this line goes once every database
-- has run it.
drop function if exists app.viewer_open_invitations();

-- The co-members of p_viewer, whose active hubs are p_hubs (a user in several of them more than once).
create or replace function app_private.co_members_of(
  p_hubs uuid[],
  p_viewer uuid
)
  returns setof uuid
  language sql
  stable
  as $$
  select
    m.user_id
  from
    app.hub_memberships m
  where
    m.hub_id = any(p_hubs)
    and m.user_id <> p_viewer
$$;

comment on function app_private.co_members_of(uuid[], uuid) is
  'The co-members of a viewer, given the viewer''s active hubs. Used by the home feed''s functions app_private.home_card_events_since_cursor and app_private.home_events (GET /posts).';

-- Active membership: a membership row, and the member is Hub-ready (level 4).
create or replace function app_private.active_member(
  p_hub_id uuid,
  p_user_id uuid
)
  returns table(
      active boolean
)
  language sql
  stable
  as $$
  select
    exists(
      select
      from
        app.hub_memberships m
      where
        m.hub_id = p_hub_id
        and m.user_id = p_user_id)
    and coalesce((
      select
        l.level
      from app_private.user_level(p_user_id) l) >= app.access_level('hub_ready'), false)
$$;

comment on function app_private.active_member(uuid, uuid) is
  'The active membership rule, written once: a membership row, and the member at access level 4. Read by app.is_active_member and app.is_member_of_post_target.';

-- One page of a hub's members as hub_memberships_select_related shows them (the viewer's own row,
-- or every row of a hub the viewer is related to), in join order after (p_after_at, p_after_id)
-- (null: from the first), with a role in p_roles (null: any), at most p_limit rows. The rows come
-- from a cursor, which PL/pgSQL plans for its first rows, so it walks the hub's range of the
-- membership index in join order whatever the statistics say the hub holds: a statement with
-- `limit` is planned for limit / expected rows, and without column statistics it read and sorted
-- every membership of the hub (as app.comment_page; docs/performance.md, "Hot values").
create or replace function app.hub_member_page(
  p_hub_id uuid,
  p_after_at timestamptz,
  p_after_id uuid,
  p_roles app.hub_role[],
  p_limit integer
)
  returns table(
      user_id uuid,
      role app.hub_role,
      joined_at timestamptz
)
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  -- Planned for each call's hub: a plan for any hub (PL/pgSQL's generic plan, after five calls)
  -- expects the few members of an average hub, reads them all by the primary key and sorts them,
  -- which for a hub of 100,000 members is the cost this function exists to avoid.
  set plan_cache_mode = force_custom_plan
  -- About a page: the planner then joins each row's user, Hub identity and phone by index probes,
  -- where the default estimate (1,000 rows) made it hash whole tables for a page of three admins.
  rows 20
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_all boolean := p_hub_id = any (app.viewer_related_hub_ids());
  v_at timestamptz := coalesce(p_after_at, '-infinity');
  v_id uuid := coalesce(p_after_id, '00000000-0000-0000-0000-000000000000');
  v_rows refcursor;
begin
  if p_roles is not null and p_roles <@ array['admin', 'super_admin']::app.hub_role[] then
    open v_rows no scroll for
      select m.user_id, m.role, m.joined_at
      from app.hub_memberships m
      where m.hub_id = p_hub_id and m.role in ('admin', 'super_admin') and m.role = any (p_roles)
        and (m.joined_at, m.user_id) > (v_at, v_id)
        and (v_all or m.user_id = v_viewer)
      order by m.joined_at, m.user_id;
  else
    open v_rows no scroll for
      select m.user_id, m.role, m.joined_at
      from app.hub_memberships m
      where m.hub_id = p_hub_id and (p_roles is null or m.role = any (p_roles))
        and (m.joined_at, m.user_id) > (v_at, v_id)
        and (v_all or m.user_id = v_viewer)
      order by m.joined_at, m.user_id;
  end if;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.hub_member_page(uuid, timestamp with time zone, uuid, app.hub_role[], integer) is
  'One page of a hub''s members as the policy hub_memberships_select_related shows them, in join order after a cursor, optionally by role, read from an index whatever the hub''s size. Called by GET /hubs/{hubId}/members and GET /hubs/{hubId}/admins.';

grant execute on function app.hub_member_page(uuid, timestamp with time zone, uuid, app.hub_role[], integer) to app_user;

-- Keeps a hub's words with every insert and change of its name, in the statement that writes it
-- (the name-word indexes' bookkeeping is written once: db/sql/users.sql, app_private.keep_name_words).
create or replace function app_private.hub_name_words_sync()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.keep_name_words('app.hub_name_words', 'hub_id', new.id, new.name, tg_op = 'UPDATE');
  return null;
end
$$;

comment on function app_private.hub_name_words_sync() is
  'Keeps app.hub_name_words equal to the words of the hub''s name (app_private.keep_name_words), in the statement that writes the name (POST /hubs, PATCH /hubs/{hubId}). Runs from the triggers _300_name_words_insert and _300_name_words_update on app.hubs.';

create or replace function app_private.rebuild_hub_name_words()
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    app_private.rebuild_name_words('app.hub_name_words', 'hub_id', 'app.hubs', 'name')
$$;

comment on function app_private.rebuild_hub_name_words() is
  'Sets every hub''s name words from the names (app_private.rebuild_name_words): the repair after a bulk load made with triggers off. Called by the scale benchmark (every app_private.rebuild_*) and test/http/search/search-words.test.ts.';

-- The hubs with a name word starting with the first word of p_query (as typed), by that word and hub
-- id after (p_after_word, p_after_id) (null: from the first), each hub once, rechecked with
-- app.name_words_match, at most p_limit rows, through the hub name words' and hubs' policies (the
-- caller's rights): GET /search/hubs with q. Read from a cursor in the order of hub_name_words_word,
-- each word's hub by a probe, whatever the statistics say the word holds (as app.user_name_matches).
create or replace function app.hub_name_matches(
  p_query text,
  p_after_word text,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      word text,
      hub_id uuid,
      name text,
      is_recommended boolean
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_q text := app.search_text(p_query);
  v_first text collate "C" := (regexp_match(app.search_text(p_query), '[[:alnum:]]+'))[1];
  v_several boolean := app.search_text(p_query) ~ '[[:alnum:]][^[:alnum:]]+[[:alnum:]]';
  v_last text collate "C";
  v_pattern text collate "C";
  v_word text collate "C" := p_after_word;
  v_id uuid := coalesce(p_after_id, '00000000-0000-0000-0000-000000000000');
begin
  -- The last word a match can be: the first word itself when the query has several, else the
  -- first word followed by the highest character (the range the index reads).
  v_last := v_first || case when v_several then '' else chr(1114111) end;
  v_pattern := v_first || case when v_several then '' else '%' end;
  -- Without a cursor the walk starts at (first word, nil id), so that the position is also where
  -- the index is entered (the range of >= and the row comparison are not merged, and a position
  -- before the range entered the index at its first word).
  v_word := coalesce(v_word, v_first);
  open v_rows no scroll for
    select w.word, h.id, h.name, h.is_recommended
    from app.hub_name_words w
    cross join lateral (
      select h.id, h.name, h.is_recommended from app.hubs h
      where h.id = w.hub_id
        and not exists (select from app.hub_name_words x where x.hub_id = h.id and x.word like v_pattern and x.word < w.word)
        and app.name_words_match(h.name, v_q)
      limit 1) h
    where w.word >= v_first and w.word <= v_last and w.word like v_pattern and (w.word, w.hub_id) > (v_word, v_id)
    order by w.word, w.hub_id;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.hub_name_matches(text, text, uuid, integer) is
  'Hubs with a name word starting with the query''s first word, by word and id after a cursor, each once, through the hub name words'' and hubs'' policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /search/hubs.';

grant execute on function app.hub_name_matches(text, text, uuid, integer) to app_user;

create or replace function app.invitation_preview(
  p_invitation_id uuid
)
  returns table(
      hub_id uuid,
      name text,
      description text,
      photo_key text,
      member_count integer
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    h.id,
    h.name,
    h.description,
    app.image_key(a.status, a.display_key, a.object_key),
    app_private.counter_value('hub_members', h.id)::integer
  from
    app.hub_invitations i
    join app.hubs h on h.id = i.hub_id
    left join app.assets a on a.id = h.profile_asset_id
  where
    i.id = p_invitation_id
    and i.status = 'invited'
    and i.expires_at > now()
$$;

comment on function app.invitation_preview(uuid) is
  'The safe preview of a hub through a pending, unexpired invitation (name, description, image, member count). Called by the web page /hub-invitations/{invitationId}.';

grant execute on function app.invitation_preview(uuid) to app_anonymous;

-- The co-member select policies of app.phone_identities and app.hub_profiles ask, per row, whether
-- the viewer and that user share a hub: an EXISTS over the viewer's memberships joined to the
-- other user's membership of the same hub (primary key probes), not the set of every member of
-- every hub of the viewer (~50 ms per statement for a member of a 100,000-member hub). The rule: a
-- membership of the viewer and one of the other user in one hub, and the viewer at access level 4
-- (account hiding removes a hidden account's memberships, so a hidden account is nobody's
-- co-member here either).
create or replace function app.viewer_shares_hub_with(
  p_user_id uuid
)
  returns boolean
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return app.viewer_has_level(app.access_level('hub_ready'))
     and exists (select from app.hub_memberships mine
                 join app.hub_memberships other on other.hub_id = mine.hub_id and other.user_id = p_user_id
                 where mine.user_id = app.viewer_id());
end
$$;

comment on function app.viewer_shares_hub_with(p_user_id uuid) is
  'Whether the viewer (access level 4) and p_user_id are members of one hub, asked per row by the co-member select policies of app.hub_profiles and app.phone_identities.';

grant execute on function app.viewer_shares_hub_with(uuid) to app_user;

-- Every (user, hub) relation the list shows, computed from the rows (the reference the kept rows
-- are checked against, and what a rebuild writes).
create or replace function app_private.hub_list_relations()
  returns table(
      user_id uuid,
      hub_id uuid,
      status text,
      role app.hub_role,
      invitation_id uuid,
      expires_at timestamptz
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select distinct on(r.user_id,
    r.hub_id)
    r.user_id,
    r.hub_id,
    r.status,
    r.role,
    r.invitation_id,
    r.expires_at
  from(
    select
      m.user_id,
      m.hub_id,
      'member' as status,
      m.role,
      null::uuid as invitation_id,
      'infinity'::timestamptz as expires_at,
      1 as rank
    from
      app.hub_memberships m
    union all
    select
      r.user_id,
      r.hub_id,
      'pending_admin_approval',
      null,
      null,
      'infinity',
      2
    from
      app.hub_join_requests r
    where
      r.status = 'pending'
    union all
    select
      i.invitee_id,
      i.hub_id,
      'invited',
      null,
      i.id,
      i.expires_at,
      3
    from
      app.hub_invitations i
    where
      i.status = 'invited'
      and i.invitee_id is not null
      and i.expires_at > now()) r
order by
  r.user_id,
  r.hub_id,
  r.rank,
  r.expires_at desc,
  r.invitation_id
$$;

comment on function app_private.hub_list_relations() is
  'Every (user, hub) relation GET /users/me/hubs shows (member, pending_admin_approval, invited), computed from the rows: the reference of app_private.hub_list_entry_drift and what app_private.rebuild_hub_list_entries writes.';

-- The same for one (user, hub): three index probes.
create or replace function app_private.hub_list_relation(
  p_user_id uuid,
  p_hub_id uuid
)
  returns table(
      status text,
      role app.hub_role,
      invitation_id uuid,
      expires_at timestamptz
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    r.status,
    r.role,
    r.invitation_id,
    r.expires_at
  from(
    select
      'member' as status,
      m.role,
      null::uuid as invitation_id,
      'infinity'::timestamptz as expires_at,
      1 as rank
    from
      app.hub_memberships m
    where
      m.hub_id = p_hub_id
      and m.user_id = p_user_id
    union all
    select
      'pending_admin_approval',
      null,
      null,
      'infinity',
      2
    from
      app.hub_join_requests r
    where
      r.hub_id = p_hub_id
      and r.user_id = p_user_id
      and r.status = 'pending'
    union all
    select
      'invited',
      null,
      i.id,
      i.expires_at,
      3
    from
      app.hub_invitations i
    where
      i.invitee_id = p_user_id
      and i.hub_id = p_hub_id
      and i.status = 'invited'
      and i.expires_at > now()) r
order by
  r.rank,
  r.expires_at desc,
  r.invitation_id
limit 1
$$;

comment on function app_private.hub_list_relation(uuid, uuid) is
  'The relation GET /users/me/hubs shows for one (user, hub), by three index probes. Used by app_private.refresh_hub_list_entry and app.viewer_hub_status (GET /hubs/{hubId}).';

-- Makes the row of (user, hub) agree with the relation rows: written, updated or deleted. A new
-- row starts at the hub's latest activity; a kept row keeps its key (or takes the hub's, if newer).
create or replace function app_private.refresh_hub_list_entry(
  p_user_id uuid,
  p_hub_id uuid
)
  returns void
  language plpgsql
  volatile
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

comment on function app_private.refresh_hub_list_entry(uuid, uuid) is
  'Makes the kept row of GET /users/me/hubs for one (user, hub) agree with the relation rows (written, updated or deleted). Called by app_private.hub_list_relation_changed.';

-- Row triggers of the three relation tables: the (user, hub) pairs a change touches, before and
-- after. tg_argv[0] names the user column (user_id, or invitee_id of an invitation).
create or replace function app_private.hub_list_relation_changed()
  returns trigger
  language plpgsql
  security definer
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

comment on function app_private.hub_list_relation_changed() is
  'Refreshes the kept rows of GET /users/me/hubs for the (user, hub) pairs a change touches, before and after. Runs from the triggers _300_list_entry on app.hub_memberships, app.hub_join_requests and app.hub_invitations.';

-- The viewer's page of the list, in (activity_at, hub_id) descending order, after the cursor:
-- one range of the page index. Rows of removed hubs (whose relations are ended with the hub) and
-- of expired invitations are passed over; the caller still reads each hub under its policy.
-- Positional parameters: test/sql/database/read-plans.test.ts explains this body as it is.
create or replace function app.my_hub_page(
  p_before_at timestamptz,
  p_before_id uuid,
  p_limit int
)
  returns table(
      hub_id uuid,
      activity_at timestamptz,
      status text,
      role app.hub_role,
      invitation_id uuid
)
  language sql
  stable
  security definer
  -- A page (at most 51 rows): the planner then joins each row to its hub by index, never scans hubs.
  rows 50
  set search_path = pg_catalog
  as $$
  select
    e.hub_id,
    e.activity_at,
    e.status,
    e.role,
    e.invitation_id
  from
    app_private.hub_list_entries e
  where
    e.user_id = app.viewer_id()
    and(e.activity_at,
      e.hub_id) <(coalesce($1::timestamptz, 'infinity'),
      coalesce($2::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
    and e.expires_at > now()
    and exists(
      select
      from
        app.hubs h
      where
        h.id = e.hub_id
        and h.removed_at is null)
  order by
    e.activity_at desc,
    e.hub_id desc
  limit $3::int
$$;

comment on function app.my_hub_page(timestamp with time zone, uuid, integer) is
  'The viewer''s page of GET /users/me/hubs, newest activity first, after a cursor: one range of the kept rows, passing over removed hubs and expired invitations. Called by GET /users/me/hubs.';

grant execute on function app.my_hub_page(timestamp with time zone, uuid, integer) to app_user;

-- Checks and repairs (like app_private.counter_drift and rebuild_counters): the (user, hub) pairs
-- whose kept row differs from the relation rows (missing, extra or another relation); no rows: all
-- agree. Scans the three tables: for tests and repairs, never requests.
create or replace function app_private.hub_list_entry_drift()
  returns table(
      user_id uuid,
      hub_id uuid,
      kept text,
      computed text
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    coalesce(k.user_id, c.user_id),
    coalesce(k.hub_id, c.hub_id),
    case when k.user_id is not null then
      concat_ws(' ', k.status, k.role, k.invitation_id, k.expires_at)
    end,
    case when c.user_id is not null then
      concat_ws(' ', c.status, c.role, c.invitation_id, c.expires_at)
    end
  from(
    select
      e.*
    from
      app_private.hub_list_entries e
    where
      e.expires_at > now()) k
  full join app_private.hub_list_relations() c on c.user_id = k.user_id
    and c.hub_id = k.hub_id
where(k.status,
  k.role,
  k.invitation_id,
  k.expires_at) is distinct from(c.status,
  c.role,
  c.invitation_id,
  c.expires_at)
$$;

comment on function app_private.hub_list_entry_drift() is
  'The check of the kept rows of GET /users/me/hubs: the (user, hub) pairs whose row differs from the relation rows (no rows: all agree). Scans three tables; run by tests (test/http/hubs/hub-activity.test.ts), never by a request.';

-- Sets every row from the relation rows, each at its hub's latest activity (after a restore or a
-- bulk load made with triggers off).
create or replace function app_private.rebuild_hub_list_entries()
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

comment on function app_private.rebuild_hub_list_entries() is
  'Sets every kept row of GET /users/me/hubs from the relation rows, at its hub''s latest activity: the repair after a restore or a bulk load made with triggers off. Called by the scale benchmark (every app_private.rebuild_*).';

create or replace view app.hub_stats with ( security_invoker = true
) as
select
  h.id as hub_id,
  m.member_count
from
  app.hubs h
  cross join lateral (
    select
      app.hub_member_count(
        h.id
) as member_count) m;

comment on view app.hub_stats is '@primaryKey hub_id
@foreignKey (hub_id) references app.hubs (id)';

-- Invitations: the invited user sees theirs; active members see their hub's (with masked phones).
create policy hub_invitations_select on app.hub_invitations
  for select to app_user
    using (invitee_id =(
      select
        app.viewer_id())
        or hub_id = any ((
          select
            app.viewer_active_hub_ids())::uuid[]));

comment on policy hub_invitations_select on app.hub_invitations is
  'An invited user sees their invitations; active members see their hub''s (with masked phones). Serves GET /hubs/{hubId}/invitations and the invitations POST /hubs answers.';

grant select (id, hub_id, invited_by, masked_phone, requires_admin_approval, status, created_at, expires_at) on app.hub_invitations to app_user;

-- Invite links: the hub's admins only. Anyone holding a token previews it through a function.
create policy hub_invite_links_select_admin on app.hub_invite_links
  for select to app_user
    using (hub_id = any ((
      select
        app.viewer_admin_hub_ids())::uuid[]));

comment on policy hub_invite_links_select_admin on app.hub_invite_links is
  'Invite links are visible to the hub''s admins only (the internal GraphQL API); a token holder previews a link through app.invite_link_preview.';

grant select (id, hub_id, expires_at) on app.hub_invite_links to app_user;

-- Join requests: the requester sees theirs; the hub's admins see the hub's.
create policy hub_join_requests_select on app.hub_join_requests
  for select to app_user
    using (user_id =(
      select
        app.viewer_id())
        or hub_id = any ((
          select
            app.viewer_admin_hub_ids())::uuid[]));

comment on policy hub_join_requests_select on app.hub_join_requests is
  'A requester sees their join requests; the hub''s admins see the hub''s. Serves GET /hubs/{hubId}/join-requests.';

grant select (id, hub_id, user_id, source, status, created_at) on app.hub_join_requests to app_user;

create policy hub_memberships_select_admin on app.hub_memberships
  for select to app_admin
    using (true);

comment on policy hub_memberships_select_admin on app.hub_memberships is
  'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every membership.';

create policy hub_memberships_select_related on app.hub_memberships
  for select to app_user
    using (user_id =(
      select
        app.viewer_id())
        or hub_id = any ((
          select
            app.viewer_related_hub_ids())::uuid[]));

comment on policy hub_memberships_select_related on app.hub_memberships is
  'A user sees their own memberships and every membership of a hub they are related to (app.viewer_related_hub_ids). Serves the viewer role of GET /hubs/{hubId} and the internal GraphQL API.';

grant select on app.hub_memberships to app_admin;

grant select (hub_id, user_id, role) on app.hub_memberships to app_user;

-- As public as the hub names they come from: every hub is visible to signed-in users
-- (hubs_select_signed_in).
create policy hub_name_words_select_signed_in on app.hub_name_words
  for select to app_user
    using (true);

comment on policy hub_name_words_select_signed_in on app.hub_name_words is
  'Hub name words are as public as hub names: every signed-in user reads them. Serves GET /search/hubs.';

grant select (hub_id, word) on app.hub_name_words to app_user;

create policy hub_profiles_insert_self on app.hub_profiles
  for insert
    to app_user
    with check (user_id =( select app.viewer_id()));

comment on policy hub_profiles_insert_self on app.hub_profiles is
  'A user creates only their own Hub identity (PATCH /users/me/hub-profile).';

create policy hub_profiles_select_self_or_co_members on app.hub_profiles
  for select to app_user
    using (user_id =(
      select
        app.viewer_id())
        or app.viewer_shares_hub_with(user_id));

comment on policy hub_profiles_select_self_or_co_members on app.hub_profiles is
  'The Hub identity (display name, image) is shown to its owner (GET and PATCH /users/me/hub-profile) and to co-members of an active hub (member lists, discussion message authors). The co-member test is a per-row probe (app.viewer_shares_hub_with), after the cheap self test.';

create policy hub_profiles_update_self on app.hub_profiles
  for update to app_user
    using (user_id =( select app.viewer_id()))
    with check (user_id =(
      select
        app.viewer_id()));

comment on policy hub_profiles_update_self on app.hub_profiles is
  'A user edits only their own Hub identity, and only the granted columns (PATCH /users/me/hub-profile).';

grant insert (user_id, display_name, profile_asset_id) on app.hub_profiles to app_user;

grant update (display_name, profile_asset_id, updated_at) on app.hub_profiles to app_user;

grant select (user_id, display_name, profile_asset_id) on app.hub_profiles to app_anonymous;

grant select (hub_id, member_count) on app.hub_stats to app_user;

grant select (hub_id, member_count) on app.hub_stats to app_admin;

create policy hubs_select_admin on app.hubs
  for select to app_admin
    using (true);

comment on policy hubs_select_admin on app.hubs is
  'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every hub, removed ones too.';

create policy hubs_select_signed_in on app.hubs
  for select to app_user
    using (removed_at is null);

comment on policy hubs_select_signed_in on app.hubs is
  'Every hub that is not removed is visible to signed-in users. Serves GET /hubs/{hubId}, GET /search/hubs, GET /users/me/hubs and the hubs named in cards and lists.';

-- Every other change goes through the hub functions (app.create_hub, app.update_hub, ...);
-- internal tooling sets the recommended flag (GET /search/hubs with an empty q lists recommended hubs).
create policy hubs_update_recommended_admin on app.hubs
  for update to app_admin
    using (true)
    with check (true);

comment on policy hubs_update_recommended_admin on app.hubs is
  'Admin tooling sets the recommended flag of a hub (the only column granted to app_admin); every other change goes through the hub functions. GET /search/hubs with an empty q lists recommended hubs.';

grant select on app.hubs to app_admin;

grant update (is_recommended) on app.hubs to app_admin;

-- Not last_activity_at: the time of the hub's activity before per-member activity rows, never
-- written since; the latest activity is app.hub_last_activity_at (read by REST's hub cards).
grant select (id, name, description, profile_asset_id, custom_link, is_recommended) on app.hubs to app_anonymous;

create trigger _300_list_entry
  after insert or delete or update of status,
  hub_id,
  invitee_id,
  expires_at on app.hub_invitations for each row
  execute function app_private.hub_list_relation_changed('invitee_id');

comment on trigger _300_list_entry on app.hub_invitations is
  'Keeps the kept rows of GET /users/me/hubs with each invitation change (app_private.hub_list_relation_changed, on invitee_id).';

create trigger _300_list_entry
  after insert or delete or update of status,
  hub_id,
  user_id on app.hub_join_requests for each row
  execute function app_private.hub_list_relation_changed('user_id');

comment on trigger _300_list_entry on app.hub_join_requests is
  'Keeps the kept rows of GET /users/me/hubs with each join request change (app_private.hub_list_relation_changed).';

create trigger _300_list_entry
  after insert or delete or update of role,
  hub_id,
  user_id on app.hub_memberships for each row
  execute function app_private.hub_list_relation_changed('user_id');

comment on trigger _300_list_entry on app.hub_memberships is
  'Keeps the kept rows of GET /users/me/hubs with each membership change (app_private.hub_list_relation_changed).';

create trigger _300_name_words_insert
  after insert on app.hubs for each row
  execute function app_private.hub_name_words_sync();

comment on trigger _300_name_words_insert on app.hubs is 'Writes a new hub''s name words (app_private.hub_name_words_sync).';

create trigger _300_name_words_update
  after update of name on app.hubs for each row
  when(old.name is distinct from new.name)
  execute function app_private.hub_name_words_sync();

comment on trigger _300_name_words_update on app.hubs is
  'Rewrites a hub''s name words when its name changes (app_private.hub_name_words_sync).';

create trigger _300_attach_invitations
  after insert on app.phone_identities for each row
  execute function app_private.attach_phone_invitations();

comment on trigger _300_attach_invitations on app.phone_identities is
  'A newly verified phone picks up the invitations that waited for it (app_private.attach_phone_invitations).';
