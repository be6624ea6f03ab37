-- Up Migration
-- The global time indexes read by the Home feed's large-set sources hold the columns those sources
-- test (issue 14, benchmark). A viewer following more than 100 users, or in hubs with more than
-- 100 other members, reads posts and interactions by time and keeps those of the set: at the 10x
-- size a big hub's member tests some 800 posts and 900 events per page, and each test fetched the
-- row from the table only to read its author (or actor and kind) and visibility. With those columns
-- in the index the scan is index-only (the tables are append-mostly, so vacuum keeps their pages
-- all-visible) and the table is read only for the rows kept. The same for the test, on pages after
-- the first, of whether a candidate card was shown earlier: it reads the post's events since the
-- cursor (a hot post has dozens) for their actor, kind and hub.
create index posts_time_covering on app.posts (created_at desc, id desc) include (author_id, visibility, deleted_at);
drop index app.posts_time;
alter index app.posts_time_covering rename to posts_time;

create index activity_events_time_covering on app.activity_events (created_at desc, post_id desc) include (actor_id, kind);
drop index app.activity_events_time;
alter index app.activity_events_time_covering rename to activity_events_time;

create index activity_events_post_time_covering on app.activity_events (post_id, created_at desc) include (actor_id, kind, hub_id);
drop index app.activity_events_post_time;
alter index app.activity_events_post_time_covering rename to activity_events_post_time;


-- Down Migration
create index activity_events_post_time_plain on app.activity_events (post_id, created_at desc);
drop index app.activity_events_post_time;
alter index app.activity_events_post_time_plain rename to activity_events_post_time;

create index activity_events_time_plain on app.activity_events (created_at desc, post_id desc);
drop index app.activity_events_time;
alter index app.activity_events_time_plain rename to activity_events_time;

create index posts_time_plain on app.posts (created_at desc, id desc);
drop index app.posts_time;
alter index app.posts_time_plain rename to posts_time;
