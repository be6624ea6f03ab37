-- Up Migration
-- Feed activity events (spec 2.8, 6.3 rule 6): who interacted with which post, and how, for
-- friend-interaction discovery. Never a vote position: a vote event says only that a vote happened.
-- Only post_shared_to_hub activity is hub-scoped (hub_id); everything else is global.
create type app.activity_kind as enum ('post_voted', 'post_commented', 'post_reposted', 'post_shared_to_feed', 'post_shared_to_hub');

create table app.activity_events (
  id bigint generated always as identity primary key,
  actor_id uuid not null references app.users (id),
  post_id uuid not null references app.posts (id),
  kind app.activity_kind not null,
  hub_id uuid references app.hubs (id),
  created_at timestamptz not null default now(),
  constraint activity_events_hub_scope check ((kind = 'post_shared_to_hub') = (hub_id is not null))
);
create index activity_events_actor on app.activity_events (actor_id, created_at desc);
create index activity_events_post on app.activity_events (post_id);

alter table app.activity_events enable row level security;
alter table app.activity_events force row level security;
-- No API role reads events directly: feeds read them through functions that apply post visibility
-- and hub membership at read time.

create function app_private.record_activity(p_post_id uuid, p_kind app.activity_kind, p_hub_id uuid default null)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$ insert into app.activity_events (actor_id, post_id, kind, hub_id) values (app.viewer_id(), p_post_id, p_kind, p_hub_id) $$;

-- Down Migration
drop function app_private.record_activity(uuid, app.activity_kind, uuid);
drop table app.activity_events;
drop type app.activity_kind;
