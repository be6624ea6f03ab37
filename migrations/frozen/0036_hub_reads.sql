-- Up Migration
-- The viewer's relationship to a hub (viewerStatus of spec 2.5): 'member', 'pending_admin_approval'
-- or 'invited' (an unexpired pending invitation), or null; null below level 4 too.
-- HUB_NOT_FOUND for an unknown hub.
create function app.viewer_hub_status(p_hub_id uuid)
  returns text
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.hubs h where h.id = p_hub_id) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  if not app.viewer_has_level(4) then
    return null;
  end if;
  return case
    when exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = app.viewer_id()) then 'member'
    when exists (select from app.hub_join_requests r where r.hub_id = p_hub_id and r.user_id = app.viewer_id() and r.status = 'pending')
      then 'pending_admin_approval'
    when exists (select from app.hub_invitations i where i.hub_id = p_hub_id and i.invitee_id = app.viewer_id()
                   and i.status = 'invited' and i.expires_at > now()) then 'invited'
  end;
end
$$;

grant execute on function app.viewer_hub_status(uuid) to app_user;

-- Down Migration
drop function app.viewer_hub_status(uuid);
