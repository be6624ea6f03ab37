-- Up Migration
-- The co-member select policies of app.phone_identities and app.hub_profiles (0301) built
-- app.viewer_co_member_ids() per statement: every member of every hub of the viewer (~50 ms per
-- statement for a member of a 100,000-member hub), to test the few rows a page returns. They now
-- ask, per row, whether the viewer and that user share a hub: an EXISTS over the viewer's
-- memberships joined to the other user's membership of the same hub (primary key probes).
-- Same rule as app.viewer_co_member_ids(): a membership of the viewer and one of the other user in
-- one hub, and the viewer at access level 4 (account hiding, 0261, removes a hidden account's
-- memberships, so a hidden account is nobody's co-member here either).
create function app.viewer_shares_hub_with(p_user_id uuid)
  returns boolean
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return app.viewer_has_level(4)
     and exists (select from app.hub_memberships mine
                 join app.hub_memberships other on other.hub_id = mine.hub_id and other.user_id = p_user_id
                 where mine.user_id = app.viewer_id());
end
$$;
comment on function app.viewer_shares_hub_with(uuid) is
  'Whether the viewer (access level 4) and p_user_id are members of one hub: the per-row form of '
  'p_user_id = any (app.viewer_co_member_ids()), for the co-member select policies (0310).';
grant execute on function app.viewer_shares_hub_with(uuid) to app_user;

drop policy phone_identities_select_self_or_co_members on app.phone_identities;
create policy phone_identities_select_self_or_co_members on app.phone_identities
  for select to app_user
  using (user_id = (select app.viewer_id()) or app.viewer_shares_hub_with(user_id));
comment on policy phone_identities_select_self_or_co_members on app.phone_identities is
  'A phone number is shown to its owner (GET /users/me/hub-profile) and to co-members of an active '
  'hub (GET /hubs/{hubId}/members, discussion message authors), never to anyone else. The co-member '
  'test is a per-row probe (app.viewer_shares_hub_with), after the cheap self test.';

drop policy hub_profiles_select_self_or_co_members on app.hub_profiles;
create policy hub_profiles_select_self_or_co_members on app.hub_profiles
  for select to app_user
  using (user_id = (select app.viewer_id()) or app.viewer_shares_hub_with(user_id));
comment on policy hub_profiles_select_self_or_co_members on app.hub_profiles is
  'The Hub identity (display name, image) is shown to its owner (GET and PATCH /users/me/hub-profile) and to '
  'co-members of an active hub (member lists, discussion message authors). The co-member test is a '
  'per-row probe (app.viewer_shares_hub_with), after the cheap self test.';

-- Down Migration
drop policy hub_profiles_select_self_or_co_members on app.hub_profiles;
create policy hub_profiles_select_self_or_co_members on app.hub_profiles
  for select to app_user
  using (user_id = (select app.viewer_id()) or user_id = any ((select app.viewer_co_member_ids())::uuid[]));
comment on policy hub_profiles_select_self_or_co_members on app.hub_profiles is
  'The Hub identity (display name, image) is shown to its owner (GET and PATCH /users/me/hub-profile) and to '
  'co-members of an active hub (member lists, discussion message authors).';

drop policy phone_identities_select_self_or_co_members on app.phone_identities;
create policy phone_identities_select_self_or_co_members on app.phone_identities
  for select to app_user
  using (user_id = (select app.viewer_id()) or user_id = any ((select app.viewer_co_member_ids())::uuid[]));
comment on policy phone_identities_select_self_or_co_members on app.phone_identities is
  'A phone number is shown to its owner (GET /users/me/hub-profile) and to co-members of an active '
  'hub (GET /hubs/{hubId}/members, discussion message authors), never to anyone else.';

drop function app.viewer_shares_hub_with(uuid);
