-- Up Migration
-- Anonymous slider votes (spec 2.4, 4.5; design.md "Votes stay anonymous").
-- The position exists only as an argument of app.cast_vote. Stored: a vote receipt (post, user,
-- time), scope receipts (post, user, scope), and counters (post, scope, position, slot, count)
-- with no user and no time. Counters are slotted: each vote increments one of 16 rows per
-- post/scope/position, chosen at random, and reads sum them, so one popular post does not
-- serialise all its voters on a single row.
create type app.vote_position as enum ('strong_left', 'left', 'neutral', 'right', 'strong_right');

create table app.vote_receipts (
  post_id uuid not null references app.posts (id),
  user_id uuid not null references app.users (id),
  voted_at timestamptz not null default now(),
  -- One vote per frame per user: this key decides, so concurrent repeats give one vote.
  primary key (post_id, user_id)
);
create index vote_receipts_user on app.vote_receipts (user_id, voted_at desc);

-- Which scopes a vote counted in: the global pool (hub_id null) and each eligible hub pool.
create table app.vote_scope_receipts (
  post_id uuid not null,
  user_id uuid not null,
  hub_id uuid references app.hubs (id),
  foreign key (post_id, user_id) references app.vote_receipts (post_id, user_id),
  unique nulls not distinct (post_id, user_id, hub_id)
);

create table app.vote_counters (
  post_id uuid not null references app.posts (id),
  -- null: the global pool; otherwise that hub's pool.
  hub_id uuid references app.hubs (id),
  position app.vote_position not null,
  slot smallint not null check (slot between 0 and 15),
  count bigint not null default 0,
  unique nulls not distinct (post_id, hub_id, position, slot)
);

alter table app.vote_receipts enable row level security;
alter table app.vote_receipts force row level security;
alter table app.vote_scope_receipts enable row level security;
alter table app.vote_scope_receipts force row level security;
alter table app.vote_counters enable row level security;
alter table app.vote_counters force row level security;

-- A user sees their own receipts (vote status), never anyone else's.
create policy vote_receipts_select_own on app.vote_receipts
  for select to app_user
  using (user_id = (select app.viewer_id()));
create policy vote_scope_receipts_select_own on app.vote_scope_receipts
  for select to app_user
  using (user_id = (select app.viewer_id()));
-- Counters are read only through app.vote_tally (aggregates of visible posts); no API role reads
-- the table, and internal tooling never sees positions paired with anything.

grant select on app.vote_receipts, app.vote_scope_receipts to app_user;

-- The tally of one post in one scope (p_hub_id null: global): five positions in order with their
-- counts (zero included). For a post the viewer can see, else no rows.
create function app.vote_tally(p_post_id uuid, p_hub_id uuid)
  returns table (vote_position app.vote_position, votes bigint)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select pos, coalesce(sum(c.count), 0)::bigint
  from unnest(enum_range(null::app.vote_position)) pos
  left join app.vote_counters c on c.post_id = p_post_id and c.hub_id is not distinct from p_hub_id and c.position = pos
  where app.can_see_post(p_post_id)
  group by pos
  order by pos
$$;

grant execute on function app.vote_tally(uuid, uuid) to app_anonymous;

-- POST /posts/{postId}/vote. Checks in contract order: a post the viewer can see
-- (POST_NOT_FOUND), profile basics (PROFILE_BASICS_REQUIRED), for private_locked_hub the author or a
-- Hub-ready active member of a selected hub (VOTE_NOT_ALLOWED), a slider (POST_NOT_VOTABLE), no prior
-- receipt (VOTE_ALREADY_CAST, decided by the receipt's key). Then the receipt, the scope receipts
-- (global + every hub the post is already targeted or shared to where the voter is an active member,
-- evaluated now and never backfilled), the counter increments, post_voted to the author (not for
-- self-votes) and a feed activity event. Returns the time, the hub scopes counted, and the global
-- tally after the vote (five counts in position order).
create function app.cast_vote(p_post_id uuid, p_position app.vote_position,
  out voted_at timestamptz, out hub_ids uuid[], out global_tally bigint[])
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
#variable_conflict use_column
declare
  v_post app.posts;
  v_viewer uuid := app.viewer_id();
begin
  select * into v_post from app.posts p where p.id = p_post_id;
  if not found or not app.can_see_post(p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  perform app.require_level(2);
  if v_post.visibility = 'private_locked_hub' and v_post.author_id <> v_viewer
     and not exists (select from app.post_hubs ph where ph.post_id = p_post_id and ph.kind = 'target'
                     and app.is_active_member(ph.hub_id, v_viewer)) then
    perform app.fail('VOTE_NOT_ALLOWED');
  end if;
  if v_post.slider_text is null then
    perform app.fail('POST_NOT_VOTABLE');
  end if;
  insert into app.vote_receipts (post_id, user_id) values (p_post_id, v_viewer)
    on conflict do nothing
    returning vote_receipts.voted_at into voted_at;
  if voted_at is null then
    perform app.fail('VOTE_ALREADY_CAST');
  end if;
  select coalesce(array_agg(ph.hub_id order by ph.hub_id), '{}') into hub_ids
  from app.post_hubs ph where ph.post_id = p_post_id and app.is_active_member(ph.hub_id, v_viewer);
  insert into app.vote_scope_receipts (post_id, user_id, hub_id)
    select p_post_id, v_viewer, scope from unnest(array[null::uuid] || hub_ids) scope;
  insert into app.vote_counters as c (post_id, hub_id, position, slot, count)
    select p_post_id, scope, p_position, floor(random() * 16)::smallint, 1 from unnest(array[null::uuid] || hub_ids) scope
    on conflict (post_id, hub_id, position, slot) do update set count = c.count + 1;
  if v_post.author_id <> v_viewer then
    insert into app.notifications (recipient_id, type, actor_id, post_id) values (v_post.author_id, 'post_voted', v_viewer, p_post_id);
  end if;
  perform app_private.record_activity(p_post_id, 'post_voted');
  perform app_private.touch_hub_activity(h, v_viewer) from unnest(hub_ids) h;
  select array_agg(t.votes order by t.vote_position) into global_tally from app.vote_tally(p_post_id, null) t;
end
$$;

grant execute on function app.cast_vote(uuid, app.vote_position) to app_user;

-- The position is an argument of one call: keep that call's parameters out of the server log,
-- whatever the logging settings (statements are logged with $1, $2 placeholders only). Needs a
-- superuser migration role; elsewhere the DBA sets the same on the authenticator role.
do $$
begin
  alter role authenticator set log_parameter_max_length = 0;
  alter role authenticator set log_parameter_max_length_on_error = 0;
  alter role authenticator set log_statement = 'none';
  alter role authenticator set log_min_duration_statement = -1;
exception when insufficient_privilege then
  raise notice 'set log_parameter_max_length = 0 (and _on_error), log_statement = none for role authenticator by hand';
end
$$;

-- Down Migration
drop function app.cast_vote(uuid, app.vote_position);
drop function app.vote_tally(uuid, uuid);
drop table app.vote_counters;
drop table app.vote_scope_receipts;
drop table app.vote_receipts;
drop type app.vote_position;
