-- Up Migration
-- Indexes whose columns are the leading columns of another index on the same table (issues 12 and
-- 14). Since 0071 every read they served is served by the longer index (the planner uses a
-- leading prefix of a btree as well as the whole), yet every write paid for both: each vote writes
-- an activity event, so two index entries per vote were pure cost.
--   posts_author (author_id, created_at desc)           -> posts_author_time (author_id, created_at desc, id desc)
--   activity_events_actor (actor_id, created_at desc)   -> activity_events_actor_time (actor_id, created_at desc, post_id desc)
--   activity_events_post (post_id)                      -> activity_events_post_time (post_id, created_at desc)
drop index app.posts_author;
drop index app.activity_events_actor;
drop index app.activity_events_post;


-- Down Migration
create index activity_events_post on app.activity_events (post_id);
create index activity_events_actor on app.activity_events (actor_id, created_at desc);
create index posts_author on app.posts (author_id, created_at desc);
