-- Up Migration
-- The member list (GET /hubs/{hubId}/members, /admins) read app.hub_member_roster, which returns
-- every membership of the hub (a security definer function is not inlined: its whole result is
-- built before the page is cut), then sorted them by join time: 100,000 members, 100,000 rows per
-- page. app.hub_member_page returns one page, in the order of an index on (hub_id, joined_at,
-- user_id), so a page reads about a page of memberships whatever the hub's size: admins and the
-- super_admin from a partial index of their own (a hub has few among many members).
create index hub_memberships_joined on app.hub_memberships (hub_id, joined_at, user_id);
create index hub_memberships_admins_joined on app.hub_memberships (hub_id, joined_at, user_id) where role in ('admin', 'super_admin');
drop index app.hub_memberships_admins;

-- One page of a hub's members as hub_memberships_select_related shows them (the viewer's own row,
-- or every row of a hub the viewer is related to), in join order after (p_after_at, p_after_id)
-- (null: from the first), with a role in p_roles (null: any), at most p_limit rows.
create function app.hub_member_page(p_hub_id uuid, p_after_at timestamptz, p_after_id uuid, p_roles app.hub_role[], p_limit integer)
  returns table (user_id uuid, role app.hub_role, joined_at timestamptz)
  language plpgsql stable security definer
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
begin
  if p_roles is not null and p_roles <@ array['admin', 'super_admin']::app.hub_role[] then
    return query
      select m.user_id, m.role, m.joined_at
      from app.hub_memberships m
      where m.hub_id = p_hub_id and m.role in ('admin', 'super_admin') and m.role = any (p_roles)
        and (m.joined_at, m.user_id) > (v_at, v_id)
        and (v_all or m.user_id = v_viewer)
      order by m.joined_at, m.user_id
      limit p_limit;
  else
    return query
      select m.user_id, m.role, m.joined_at
      from app.hub_memberships m
      where m.hub_id = p_hub_id and (p_roles is null or m.role = any (p_roles))
        and (m.joined_at, m.user_id) > (v_at, v_id)
        and (v_all or m.user_id = v_viewer)
      order by m.joined_at, m.user_id
      limit p_limit;
  end if;
end
$$;

grant execute on function app.hub_member_page(uuid, timestamptz, uuid, app.hub_role[], integer) to app_user;

-- Down Migration
drop function app.hub_member_page(uuid, timestamptz, uuid, app.hub_role[], integer);
create index hub_memberships_admins on app.hub_memberships (hub_id) where role in ('admin', 'super_admin');
drop index app.hub_memberships_admins_joined;
drop index app.hub_memberships_joined;
