-- Up Migration
-- Hub facts REST needs for some rows but a user token must not read column by column (contract
-- section 10): members' join times (the order and cursor of the member list), the viewer's own
-- mute setting, and the viewer's own pending invitations (found by invitee, a column that would map
-- invited phones to accounts). 0091 takes these columns away from app_user; each function below
-- reads them as the owner and returns only the rows the table's policy shows the viewer. None is
-- listed in server/graphql/exposure.ts, so none appears in GraphQL.

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

-- The viewer's own invitations that can still be answered (GET /users/me/hubs).
create function app.viewer_open_invitations()
  returns table (id uuid, hub_id uuid)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select i.id, i.hub_id
  from app.hub_invitations i
  where i.invitee_id = app.viewer_id() and i.status = 'invited' and i.expires_at > now()
$$;

grant execute on function app.hub_member_roster(uuid), app.viewer_hub_content_muted(uuid), app.viewer_open_invitations() to app_user;

-- Down Migration
drop function app.viewer_open_invitations();
drop function app.viewer_hub_content_muted(uuid);
drop function app.hub_member_roster(uuid);
