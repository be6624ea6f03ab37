-- Up Migration
-- The indexes the feeds read hold the columns the feeds test (issue 14, benchmark), so their scans
-- are index-only (the tables are append-mostly; vacuum keeps their pages all-visible) and a table
-- row is read only when it is kept.
-- A viewer following more than 100 users, or in hubs with more than 100 other members, reads posts
-- and interactions by time and keeps those of the set: at the 10x size a big hub's member tests
-- some 800 posts and 900 events per page, and each test fetched the row only to read its author (or
-- actor and kind) and visibility. On pages after the first, the test of whether a candidate card
-- was shown earlier reads the post's events since the cursor (a hot post has dozens) for their
-- actor, kind and hub.
create index posts_time_covering on app.posts (created_at desc, id desc) include (author_id, visibility, deleted_at);
drop index app.posts_time;
alter index app.posts_time_covering rename to posts_time;

create index activity_events_time_covering on app.activity_events (created_at desc, post_id desc) include (actor_id, kind);
drop index app.activity_events_time;
alter index app.activity_events_time_covering rename to activity_events_time;

create index activity_events_post_time_covering on app.activity_events (post_id, created_at desc) include (actor_id, kind, hub_id);
drop index app.activity_events_post_time;
alter index app.activity_events_post_time_covering rename to activity_events_post_time;

-- The per-user sources (own, followed users', co-members' and default feed users' posts, friends'
-- interactions) read up to a window of rows per user (a light follower some 700 posts and 1,000
-- events a page, at either size) for their visibility and kind.
create index posts_author_time_covering on app.posts (author_id, created_at desc, id desc) include (visibility, deleted_at);
drop index app.posts_author_time;
alter index app.posts_author_time_covering rename to posts_author_time;

create index activity_events_actor_time_covering on app.activity_events (actor_id, created_at desc, post_id desc) include (kind);
drop index app.activity_events_actor_time;
alter index app.activity_events_actor_time_covering rename to activity_events_actor_time;


-- Down Migration
create index activity_events_actor_time_plain on app.activity_events (actor_id, created_at desc, post_id desc);
drop index app.activity_events_actor_time;
alter index app.activity_events_actor_time_plain rename to activity_events_actor_time;

create index posts_author_time_plain on app.posts (author_id, created_at desc, id desc);
drop index app.posts_author_time;
alter index app.posts_author_time_plain rename to posts_author_time;

create index activity_events_post_time_plain on app.activity_events (post_id, created_at desc);
drop index app.activity_events_post_time;
alter index app.activity_events_post_time_plain rename to activity_events_post_time;

create index activity_events_time_plain on app.activity_events (created_at desc, post_id desc);
drop index app.activity_events_time;
alter index app.activity_events_time_plain rename to activity_events_time;

create index posts_time_plain on app.posts (created_at desc, id desc);
drop index app.posts_time;
alter index app.posts_time_plain rename to posts_time;
