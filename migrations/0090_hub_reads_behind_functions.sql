-- Up Migration
-- Hub facts REST needs for some rows but a user token must not read column by column (contract
-- section 10): members' join times (the order and cursor of the member list), the viewer's own
-- mute setting, the viewer's own open invitations (found by invitee, a column that would map
-- invited phones to accounts) and the last activity of the viewer's hubs (not every signed-in
-- user's to read for every hub). 0091 takes these columns away from app_user; each function below
-- reads them as the owner and returns only the viewer's rows, or the rows the table's policy shows
-- the viewer. None is listed in server/graphql/exposure.ts, so none appears in GraphQL.

-- The members of a hub as hub_memberships_select_related shows them (the viewer's own row, or any
-- hub the viewer is related to), with join time and role. The member list (GET /hubs/{id}/members
-- and its admins page) selects from this instead of the table.
create function app.hub_member_roster(p_hub_id uuid)
  returns table (user_id uuid, role app.hub_role, joined_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select m.user_id, m.role, m.joined_at
  from app.hub_memberships m
  where m.hub_id = p_hub_id
    and (m.user_id = app.viewer_id() or m.hub_id = any (app.viewer_related_hub_ids()))
$$;

-- The viewer's own notification setting for a hub (false when not a member).
create function app.viewer_hub_content_muted(p_hub_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce((select m.content_muted from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = app.viewer_id()), false)
$$;

-- The viewer's hubs (GET /users/me/hubs), one row per hub: an active membership wins over a pending
-- join request, which wins over an open invitation; with the hub's last activity.
create function app.viewer_hub_relations()
  returns table (hub_id uuid, status text, role app.hub_role, invitation_id uuid, last_activity_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select distinct on (rel.hub_id) rel.hub_id, rel.status, rel.role, rel.invitation_id, h.last_activity_at
  from (
    select m.hub_id, 'member' as status, m.role, null::uuid as invitation_id, 1 as rank
      from app.hub_memberships m where m.user_id = app.viewer_id()
    union all
    select r.hub_id, 'pending_admin_approval', null, null, 2
      from app.hub_join_requests r where r.user_id = app.viewer_id() and r.status = 'pending'
    union all
    select i.hub_id, 'invited', null, i.id, 3
      from app.hub_invitations i where i.invitee_id = app.viewer_id() and i.status = 'invited' and i.expires_at > now()
  ) rel
  join app.hubs h on h.id = rel.hub_id
  order by rel.hub_id, rel.rank
$$;

grant execute on function app.hub_member_roster(uuid), app.viewer_hub_content_muted(uuid), app.viewer_hub_relations() to app_user;

-- Down Migration
drop function app.viewer_hub_relations();
drop function app.viewer_hub_content_muted(uuid);
drop function app.hub_member_roster(uuid);
