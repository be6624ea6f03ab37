-- Up Migration
-- Hub discussions (spec 2.5; contract section 8): one per hub and post, opened by the transaction
-- that places the post in the hub (app_private.place_post_in_hubs, 0052). This migration backfills
-- placements that lack one, adds the list order, and narrows the grant to columns.

-- Every placement has its discussion, dated from the placement.
insert into app.hub_discussions (hub_id, post_id, created_at, last_activity_at)
  select ph.hub_id, ph.post_id, ph.created_at, ph.created_at from app.post_hubs ph
  on conflict (hub_id, post_id) do nothing;

-- Messages, their counts and saved discussions carry their hub: this key lets them reference
-- (discussion, hub).
alter table app.hub_discussions add constraint hub_discussions_id_hub_key unique (id, hub_id);
-- GET /hubs/{hubId}/discussions: most recent activity first.
create index hub_discussions_activity on app.hub_discussions (hub_id, last_activity_at desc, id desc);

-- Column grants (a user token reads in GraphQL exactly what app_user may select; REST shows no
-- creation time); the policy of 0050 still decides the rows: active members of the discussion's hub.
revoke select on app.hub_discussions from app_user;
grant select (id, hub_id, post_id, last_activity_at) on app.hub_discussions to app_user;

-- Down Migration
revoke select on app.hub_discussions from app_user;
grant select on app.hub_discussions to app_user;
drop index app.hub_discussions_activity;
alter table app.hub_discussions drop constraint hub_discussions_id_hub_key;
