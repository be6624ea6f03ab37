-- Up Migration
-- The ways into a hub (spec part 3): phone invitations, invite links and join requests. None of
-- them is a membership; accepting or approving creates one (functions in 0032).

create type app.invitation_status as enum ('invited', 'accepted', 'declined');
create type app.join_request_source as enum ('invite_link', 'member_invitation');
create type app.join_request_status as enum ('pending', 'approved', 'rejected');

create table app.hub_invitations (
  id uuid primary key default gen_random_uuid(),
  hub_id uuid not null references app.hubs (id),
  invited_by uuid not null references app.users (id),
  -- Private: never selectable by API roles (see grants). Lists show masked_phone.
  phone_e164 text not null check (phone_e164 ~ '^\+[1-9][0-9]{6,14}$'),
  masked_phone text generated always as (left(phone_e164, 3) || repeat('•', greatest(length(phone_e164) - 6, 0)) || right(phone_e164, 3)) stored,
  -- The invited user: set at once when the phone has a user, or when the phone is verified later.
  invitee_id uuid references app.users (id),
  -- Created by a member (not an admin): accepting leads to admin approval, not membership.
  requires_admin_approval boolean not null,
  status app.invitation_status not null default 'invited',
  created_at timestamptz not null default now(),
  expires_at timestamptz not null default now() + interval '7 days',
  responded_at timestamptz
);
create index hub_invitations_hub on app.hub_invitations (hub_id, created_at desc);
create index hub_invitations_invitee on app.hub_invitations (invitee_id) where status = 'invited';
create index hub_invitations_phone_pending on app.hub_invitations (phone_e164) where invitee_id is null and status = 'invited';

create table app.hub_invite_links (
  id uuid primary key default gen_random_uuid(),
  hub_id uuid not null references app.hubs (id),
  token text not null unique,
  created_by uuid not null references app.users (id),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null default now() + interval '7 days'
);

create table app.hub_join_requests (
  id uuid primary key default gen_random_uuid(),
  hub_id uuid not null references app.hubs (id),
  user_id uuid not null references app.users (id),
  source app.join_request_source not null,
  invitation_id uuid references app.hub_invitations (id),
  invite_link_id uuid references app.hub_invite_links (id),
  status app.join_request_status not null default 'pending',
  created_at timestamptz not null default now(),
  decided_at timestamptz,
  decided_by uuid references app.users (id)
);
-- At most one pending request per user and hub.
create unique index hub_join_requests_one_pending on app.hub_join_requests (hub_id, user_id) where status = 'pending';
create index hub_join_requests_hub on app.hub_join_requests (hub_id, created_at) where status = 'pending';

-- Hubs the Hub-ready viewer is related to: active member, invited (pending, unexpired invitation)
-- or pending admin approval. Such viewers may look at the hub's member list (dark for the latter two).
create function app.viewer_related_hub_ids()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(distinct hub_id), '{}') from (
    select m.hub_id from app.hub_memberships m where m.user_id = app.viewer_id()
    union all
    select i.hub_id from app.hub_invitations i
      where i.invitee_id = app.viewer_id() and i.status = 'invited' and i.expires_at > now()
    union all
    select r.hub_id from app.hub_join_requests r where r.user_id = app.viewer_id() and r.status = 'pending'
  ) related
  where app.viewer_has_level(4)
$$;

grant execute on function app.viewer_related_hub_ids() to app_user;

-- Memberships are visible within related hubs (replaces the own-rows policy of 0030).
drop policy hub_memberships_select_own on app.hub_memberships;
create policy hub_memberships_select_related on app.hub_memberships
  for select to app_user
  using (user_id = (select app.viewer_id()) or hub_id = any ((select app.viewer_related_hub_ids())::uuid[]));

alter table app.hub_invitations enable row level security;
alter table app.hub_invitations force row level security;
alter table app.hub_invite_links enable row level security;
alter table app.hub_invite_links force row level security;
alter table app.hub_join_requests enable row level security;
alter table app.hub_join_requests force row level security;

-- Invitations: the invited user sees theirs; active members see their hub's (with masked phones).
create policy hub_invitations_select on app.hub_invitations
  for select to app_user
  using (invitee_id = (select app.viewer_id()) or hub_id = any ((select app.viewer_active_hub_ids())::uuid[]));

-- Invite links: the hub's admins only. Anyone holding a token previews it through a function.
create policy hub_invite_links_select_admin on app.hub_invite_links
  for select to app_user
  using (hub_id = any ((select app.viewer_admin_hub_ids())::uuid[]));

-- Join requests: the requester sees theirs; the hub's admins see the hub's.
create policy hub_join_requests_select on app.hub_join_requests
  for select to app_user
  using (user_id = (select app.viewer_id()) or hub_id = any ((select app.viewer_admin_hub_ids())::uuid[]));

grant select (id, hub_id, invited_by, masked_phone, invitee_id, requires_admin_approval, status, created_at, expires_at, responded_at)
  on app.hub_invitations to app_user;
grant select on app.hub_invite_links, app.hub_join_requests to app_user;

-- Down Migration
drop policy hub_memberships_select_related on app.hub_memberships;
create policy hub_memberships_select_own on app.hub_memberships
  for select to app_user
  using (user_id = (select app.viewer_id()));
drop function app.viewer_related_hub_ids();
drop table app.hub_join_requests;
drop table app.hub_invite_links;
drop table app.hub_invitations;
drop type app.join_request_status;
drop type app.join_request_source;
drop type app.invitation_status;
