-- Up Migration
-- Vote anonymity of row versions (contract 7 "Vote anonymity"; design.md "Votes stay anonymous").
-- A counter row per post, scope and position let anyone who can read system columns (the database
-- owner) pair a receipt with a position: the counter row a vote updates carries the voter's
-- transaction as its xmin, and so does the receipt. Now one row per post, scope and slot holds all
-- five counts and every vote rewrites that whole row, so the row version a vote writes says which
-- slot (chosen at random) it landed in and nothing of the position.
-- A slot that holds a single vote (most slots of a post with few votes) would still show that
-- vote's position next to its voter's xmin. So the 16 slot rows of a post and scope are created
-- together, seeded with random counts that add up to zero per position (cyclic differences of
-- random numbers): the sums over the 16 slots are the exact tallies, and a single row, or any set
-- of rows short of all 16, shows noise. What remains is stated in README (live watching with exact
-- timing; WAL and dead row versions before vacuum).
alter table app.vote_counters rename to vote_counters_by_position;

create table app.vote_counters (
  post_id uuid not null references app.posts (id),
  -- null: the global pool; otherwise that hub's pool.
  hub_id uuid references app.hubs (id),
  slot smallint not null check (slot between 0 and 15),
  strong_left_count bigint not null default 0,
  left_count bigint not null default 0,
  neutral_count bigint not null default 0,
  right_count bigint not null default 0,
  strong_right_count bigint not null default 0,
  unique nulls not distinct (post_id, hub_id, slot)
);
alter table app.vote_counters enable row level security;
alter table app.vote_counters force row level security;
-- No policy and no grant: counters are read only through app.vote_tally (aggregates of visible
-- posts) and written only by app.cast_vote and the seeding triggers below.

-- The 16 slot rows of one post and scope, seeded so that each position's counts add up to zero.
-- They are made with the scope (a slider post's insert; its placement in a hub), never by a vote:
-- a vote only rewrites one existing row, and the seed rows carry the author's transaction.
create function app_private.seed_vote_counters(p_post_id uuid, p_hub_id uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  insert into app.vote_counters as c (post_id, hub_id, slot, strong_left_count, left_count, neutral_count, right_count, strong_right_count)
    select p_post_id, p_hub_id, r.slot,
           r.a - coalesce(lead(r.a) over w, first_value(r.a) over w), r.b - coalesce(lead(r.b) over w, first_value(r.b) over w),
           r.c - coalesce(lead(r.c) over w, first_value(r.c) over w), r.d - coalesce(lead(r.d) over w, first_value(r.d) over w),
           r.e - coalesce(lead(r.e) over w, first_value(r.e) over w)
    from (select slot::smallint, (random() * 1e12)::bigint a, (random() * 1e12)::bigint b, (random() * 1e12)::bigint c,
                 (random() * 1e12)::bigint d, (random() * 1e12)::bigint e
          from generate_series(0, 15) slot) r
    window w as (order by r.slot)
    on conflict (post_id, hub_id, slot) do nothing;
end
$$;

create function app_private.posts_seed_vote_counters() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.seed_vote_counters(new.id, null);
  return null;
end
$$;

create trigger posts_seed_vote_counters
  after insert on app.posts
  for each row when (new.slider_text is not null)
  execute function app_private.posts_seed_vote_counters();

create function app_private.post_hubs_seed_vote_counters() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if exists (select from app.posts p where p.id = new.post_id and p.slider_text is not null) then
    perform app_private.seed_vote_counters(new.post_id, new.hub_id);
  end if;
  return null;
end
$$;

create trigger post_hubs_seed_vote_counters
  after insert on app.post_hubs
  for each row execute function app_private.post_hubs_seed_vote_counters();

-- Every existing slider post and hub placement gets its seeded set; counts so far are added onto
-- it (their sums per position are unchanged).
select app_private.seed_vote_counters(p.id, null) from app.posts p where p.slider_text is not null;
select app_private.seed_vote_counters(ph.post_id, ph.hub_id)
  from app.post_hubs ph join app.posts p on p.id = ph.post_id where p.slider_text is not null;
update app.vote_counters c
  set strong_left_count = c.strong_left_count + o.sl, left_count = c.left_count + o.l, neutral_count = c.neutral_count + o.n,
      right_count = c.right_count + o.r, strong_right_count = c.strong_right_count + o.sr
  from (select post_id, hub_id, slot,
               coalesce(sum(count) filter (where position = 'strong_left'), 0) sl, coalesce(sum(count) filter (where position = 'left'), 0) l,
               coalesce(sum(count) filter (where position = 'neutral'), 0) n, coalesce(sum(count) filter (where position = 'right'), 0) r,
               coalesce(sum(count) filter (where position = 'strong_right'), 0) sr
        from app.vote_counters_by_position group by post_id, hub_id, slot) o
  where c.post_id = o.post_id and c.hub_id is not distinct from o.hub_id and c.slot = o.slot;
drop table app.vote_counters_by_position;


-- The tally of one post in one scope (p_hub_id null: global): five positions in order with their
-- counts (zero included). For a post the viewer can see, else no rows. PL/pgSQL: its plan is kept.
create or replace function app.vote_tally(p_post_id uuid, p_hub_id uuid)
  returns table (vote_position app.vote_position, votes bigint)
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  if not app.can_see_post(p_post_id) then
    return;
  end if;
  return query
  select t.pos, t.n
  from (select coalesce(sum(c.strong_left_count), 0)::bigint sl, coalesce(sum(c.left_count), 0)::bigint l,
               coalesce(sum(c.neutral_count), 0)::bigint n, coalesce(sum(c.right_count), 0)::bigint r,
               coalesce(sum(c.strong_right_count), 0)::bigint sr
        from app.vote_counters c where c.post_id = p_post_id and c.hub_id is not distinct from p_hub_id) s
  cross join lateral (values ('strong_left'::app.vote_position, s.sl), ('left', s.l), ('neutral', s.n),
                             ('right', s.r), ('strong_right', s.sr)) t (pos, n);
end
$$;

-- POST /posts/{postId}/vote. Checks in contract order: a post the viewer can see
-- (POST_NOT_FOUND), profile basics (PROFILE_BASICS_REQUIRED), for private_locked_hub the author or a
-- Hub-ready active member of a selected hub (VOTE_NOT_ALLOWED), a slider (POST_NOT_VOTABLE), no prior
-- receipt (VOTE_ALREADY_CAST, decided by the receipt's key). Then the receipt, the scope receipts
-- (global + every hub the post is already targeted or shared to where the voter is an active member,
-- evaluated now and never backfilled), post_voted to the author (not for self-votes) with no actor,
-- a feed activity event, hub activity, and last the counter rows: in each scope the same random
-- one of its 16 seeded slot rows, all five counts rewritten in one statement (the row version shows no position; the row
-- lock, the only one voters of a popular post share, is held from here to commit). Returns the time, the hub
-- scopes counted, and the global tally after the vote (five counts in position order).
-- Each check is one statement with a cached plan: visibility, level and slider are read together.
create or replace function app.cast_vote(p_post_id uuid, p_position app.vote_position,
  out voted_at timestamptz, out hub_ids uuid[], out global_tally bigint[])
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
#variable_conflict use_column
declare
  v_viewer uuid := app.viewer_id();
  v_author uuid;
  v_visibility app.post_visibility;
  v_votable boolean;
  v_visible boolean;
  v_slot smallint := floor(random() * 16)::smallint;
  v_rows int;
  v_level int;
begin
  -- One statement reads what every check needs: visibility, the viewer's level, the post, and the
  -- hubs where this vote would count (read-only; used only once the checks pass).
  select p.author_id, p.visibility, p.slider_text is not null, app.post_visible_to(p, v_viewer, app.viewer_block_list()),
         app.user_access_level(v_viewer),
         (select coalesce(array_agg(ph.hub_id order by ph.hub_id), '{}') from app.post_hubs ph
          where ph.post_id = p.id and app.is_active_member(ph.hub_id, v_viewer))
    into v_author, v_visibility, v_votable, v_visible, v_level, hub_ids
    from app.posts p where p.id = p_post_id;
  if not coalesce(v_visible, false) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if coalesce(v_level, 0) < 2 then
    perform app.require_level(2);
  end if;
  if v_visibility = 'private_locked_hub' and v_author <> v_viewer
     and not exists (select from app.post_hubs ph where ph.post_id = p_post_id and ph.kind = 'target'
                     and app.is_active_member(ph.hub_id, v_viewer)) then
    perform app.fail('VOTE_NOT_ALLOWED');
  end if;
  if not v_votable then
    perform app.fail('POST_NOT_VOTABLE');
  end if;
  insert into app.vote_receipts (post_id, user_id) values (p_post_id, v_viewer)
    on conflict do nothing
    returning vote_receipts.voted_at into voted_at;
  if voted_at is null then
    perform app.fail('VOTE_ALREADY_CAST');
  end if;
  insert into app.vote_scope_receipts (post_id, user_id, hub_id)
    select p_post_id, v_viewer, scope from unnest(array[null::uuid] || hub_ids) scope;
  if v_author <> v_viewer then
    insert into app.notifications (recipient_id, type, actor_id, post_id) values (v_author, 'post_voted', null, p_post_id);
  end if;
  perform app_private.record_activity(p_post_id, 'post_voted');
  if cardinality(hub_ids) > 0 then
    perform app_private.touch_hub_activity(h, v_viewer) from unnest(hub_ids) h;
  end if;
  update app.vote_counters c
    set strong_left_count = c.strong_left_count + (p_position = 'strong_left')::int,
        left_count = c.left_count + (p_position = 'left')::int,
        neutral_count = c.neutral_count + (p_position = 'neutral')::int,
        right_count = c.right_count + (p_position = 'right')::int,
        strong_right_count = c.strong_right_count + (p_position = 'strong_right')::int
    where c.post_id = p_post_id and c.slot = v_slot and (c.hub_id is null or c.hub_id = any (hub_ids));
  get diagnostics v_rows = row_count;
  if v_rows <> 1 + cardinality(hub_ids) then
    raise exception 'vote counters missing for a scope of post %', p_post_id;
  end if;
  select array[coalesce(sum(c.strong_left_count), 0), coalesce(sum(c.left_count), 0), coalesce(sum(c.neutral_count), 0),
               coalesce(sum(c.right_count), 0), coalesce(sum(c.strong_right_count), 0)]::bigint[]
    into global_tally
    from app.vote_counters c where c.post_id = p_post_id and c.hub_id is null;
end
$$;

-- Down Migration
alter table app.vote_counters rename to vote_counters_by_slot;
create table app.vote_counters (
  post_id uuid not null references app.posts (id),
  hub_id uuid references app.hubs (id),
  position app.vote_position not null,
  slot smallint not null check (slot between 0 and 15),
  count bigint not null default 0,
  unique nulls not distinct (post_id, hub_id, position, slot)
);
alter table app.vote_counters enable row level security;
alter table app.vote_counters force row level security;
insert into app.vote_counters (post_id, hub_id, position, slot, count)
  select c.post_id, c.hub_id, p.position, 0, sum(p.count)
  from app.vote_counters_by_slot c
  cross join lateral (values ('strong_left'::app.vote_position, c.strong_left_count), ('left', c.left_count),
    ('neutral', c.neutral_count), ('right', c.right_count), ('strong_right', c.strong_right_count)) p (position, count)
  group by c.post_id, c.hub_id, p.position
  having sum(p.count) > 0;
drop table app.vote_counters_by_slot;
drop trigger post_hubs_seed_vote_counters on app.post_hubs;
drop trigger posts_seed_vote_counters on app.posts;
drop function app_private.post_hubs_seed_vote_counters();
drop function app_private.posts_seed_vote_counters();
drop function app_private.seed_vote_counters(uuid, uuid);

create or replace function app.vote_tally(p_post_id uuid, p_hub_id uuid)
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

create or replace function app.cast_vote(p_post_id uuid, p_position app.vote_position,
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

