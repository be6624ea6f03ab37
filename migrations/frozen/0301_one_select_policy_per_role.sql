-- Up Migration
-- One permissive select policy per role on a table (test/sql/catalog-lints.test.ts): a signed-in
-- user's own phone identity and Hub identity, and those of co-members of an active hub, were two
-- policies each, which PostgreSQL ORs on every row and a reader had to find twice. Each pair is
-- now one policy with the same two tests, in the same order (the cheap self test first).
drop policy phone_identities_select_self on app.phone_identities;
drop policy phone_identities_select_co_members on app.phone_identities;
create policy phone_identities_select_self_or_co_members on app.phone_identities
  for select to app_user
  using (user_id = (select app.viewer_id()) or user_id = any ((select app.viewer_co_member_ids())::uuid[]));
comment on policy phone_identities_select_self_or_co_members on app.phone_identities is
  'A phone number is shown to its owner (GET /users/me/hub-profile) and to co-members of an active '
  'hub (GET /hubs/{hubId}/members, discussion message authors), never to anyone else.';

drop policy hub_profiles_select_self on app.hub_profiles;
drop policy hub_profiles_select_co_members on app.hub_profiles;
create policy hub_profiles_select_self_or_co_members on app.hub_profiles
  for select to app_user
  using (user_id = (select app.viewer_id()) or user_id = any ((select app.viewer_co_member_ids())::uuid[]));
comment on policy hub_profiles_select_self_or_co_members on app.hub_profiles is
  'The Hub identity (display name, image) is shown to its owner (GET and PATCH /users/me/hub-profile) and to '
  'co-members of an active hub (member lists, discussion message authors).';
