-- Up Migration
-- Phone numbers and Hub identities (display name, image) are visible between users who share a hub
-- (0033). The policies tested each row against app.viewer_co_member_ids(): every member of every
-- hub of the viewer, built as an array on every statement that reads either table. A member of a
-- hub of 100,000 paid for 100,000 ids on each member list, message page and thread page (over 100
-- ms of a 480 ms message page). Now each row read is one probe: does the viewer share a hub with
-- this user (the two (user_id) and (hub_id, user_id) indexes of hub_memberships), whose cost is
-- bounded by the rows the statement returns, not by the size of the viewer's hubs. The rule is
-- the same: members of a common hub, for a viewer at level 4.
create function app.viewer_shares_hub_with(p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return exists (
    select from app.hub_memberships mine
    join app.hub_memberships other on other.hub_id = mine.hub_id and other.user_id = p_user_id
    where mine.user_id = app.viewer_id());
end
$$;
grant execute on function app.viewer_shares_hub_with(uuid) to app_user;

drop policy phone_identities_select_co_members on app.phone_identities;
drop policy hub_profiles_select_co_members on app.hub_profiles;
-- Phone numbers: also visible between Hub-ready users who share an active hub (spec 2.2, 2.5).
create policy phone_identities_select_co_members on app.phone_identities
  for select to app_user
  using ((select app.viewer_has_level(4)) and app.viewer_shares_hub_with(user_id));
-- The Hub identity (display name, image): visible to co-members of an active hub.
create policy hub_profiles_select_co_members on app.hub_profiles
  for select to app_user
  using ((select app.viewer_has_level(4)) and app.viewer_shares_hub_with(user_id));

-- Down Migration
drop policy phone_identities_select_co_members on app.phone_identities;
drop policy hub_profiles_select_co_members on app.hub_profiles;
create policy phone_identities_select_co_members on app.phone_identities
  for select to app_user
  using (user_id = any ((select app.viewer_co_member_ids())::uuid[]));
create policy hub_profiles_select_co_members on app.hub_profiles
  for select to app_user
  using (user_id = any ((select app.viewer_co_member_ids())::uuid[]));
drop function app.viewer_shares_hub_with(uuid);
