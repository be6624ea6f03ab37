-- Votes: the vote (app.cast_vote: every row a vote writes), the sealed ballots and their tallies, and the
-- vote counters.
create or replace function app.vote_tally(
  p_post_id uuid,
  p_hub_id uuid
)
  returns jsonb
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  if not app.can_see_post(p_post_id) then
    return null;
  end if;
  return app_private.sealed_tally(p_post_id, p_hub_id);
end
$$;

comment on function app.vote_tally(uuid, uuid) is
  'A post''s tally in one scope (global when p_hub_id is null, else that hub): the counter sums and the pending sealed ballots, null when the viewer may not see the post. Read by GET /posts/{postId}/vote/summary, /vote/distribution and /vote/hubs (server/votes/summary.ts opens the ballots).';

grant execute on function app.vote_tally(uuid, uuid) to app_anonymous;

-- POST /posts/{postId}/vote. What a vote does, in order (the names are the code's):
--   1. app.viewer_session_gate(app.access_level('profile')): the session first (401, then 403);
--   2. the rules: the post visible to the voter (app.post_visible_to, else POST_NOT_FOUND), the
--      locked-post rule (app.post_reaches, else VOTE_NOT_ALLOWED), a slider post (POST_NOT_VOTABLE),
--      a sealed ballot for every hub where the voter is an active member (else OBS01: the API seals
--      again and retries);
--   3. one statement writes, once for a new receipt (none when the vote was already cast):
--      - app.vote_receipts: the receipt (on conflict do nothing: VOTE_ALREADY_CAST after it);
--      - app.vote_scope_receipts: a scope receipt per pool (global, each of those hubs);
--      - app.notifications: the author's post_voted, without actor (not for a self-vote);
--      - app_private.sealed_ballots: a sealed ballot per pool;
--      - app_private.record_activity: the voter's activity event (post_voted);
--      - app_private.touch_hub_activity: the voter's activity in those hubs;
--      and reads the global tally before this vote (app_private.sealed_tally);
--      when that statement ends, the triggers of the rows it wrote, which hold whoever writes them:
--      - app.vote_receipts _490_lock_posts_insert (app_private.lock_receipt_posts: the post's
--        votes-received lock), then _500_count_insert (app_private.count_vote_receipts: user_votes_cast of
--        the voter, user_votes_received of the author);
--      - app.notifications _500_count_unread_insert (app_private.count_unread: the author's badge);
--      - app.hub_activity _300_hub_lists_insert and _300_hub_lists_update
--        (app_private.hub_activity_moved: the voter's rows of the hub list, the hub marked for the
--        list sweep);
--   4. app_private.queue_tally: the tally job of each scope whose pending ballots fill a batch
--      (app_private.vote_fills_batch);
--   5. the voter's hubs when few (voter_hub_ids), for the API to seal their next votes at once.
create or replace function app.cast_vote(
  p_post_id uuid,
  p_key_id text,
  p_global text,
  p_hub_ids uuid[],
  p_hub_ballots text[],
  p_batch int,
  out voted_at timestamptz,
  out hub_ids uuid[],
  out global_tally jsonb,
  out voter_hub_ids uuid[]
)
language plpgsql
security definer
set search_path = pg_catalog
as $$
#variable_conflict use_column
declare
  v_viewer uuid := app.viewer_id();
  v_author uuid;
  v_votable boolean;
  v_visible boolean;
  v_reaches boolean;
  v_level int;
  v_missing uuid[];
  v_scope uuid;
begin
  -- One statement reads what the vote is checked against: the session first (contract order 401,
  -- 403, then the request: app.viewer_session_gate, in a subquery of its own that runs before the
  -- post is read; a volatile call keeps it from being pulled up), then the post, the hubs where the
  -- vote counts, and the voter's hubs (at most 17 index entries, in no order: a member of many
  -- hubs costs no more; from Hub-ready, the level hub membership counts from). The API seals the
  -- voter's next votes for those hubs at once: one round trip, where a post it has not seen yet
  -- would otherwise cost an OBS01 answer and a second try; hubs where a later vote does not count
  -- cost only their dropped ballots. (A post that stays in its hubs takes votes from whom it
  -- reaches: app.post_reaches, the locked-post rule, which app.post_visible_to applies too; the
  -- contract answers VOTE_NOT_ALLOWED.) One statement where there were four: measured 20 µs a
  -- vote on PostgreSQL 18.
  select g.level, p.author_id, p.slider_text is not null,
         app.post_visible_to(p, v_viewer, (select b.ids from app_private.block_list(v_viewer) b)), app.post_reaches(p, v_viewer),
         (select coalesce(array_agg(ph.hub_id order by ph.hub_id), '{}') from app.post_hubs ph
          where ph.post_id = p.id and app.is_active_member(ph.hub_id, v_viewer)),
         case when g.level >= app.access_level('hub_ready')
              then array(select m.hub_id from app.hub_memberships m where m.user_id = v_viewer limit 17)
              else '{}' end
    into v_level, v_author, v_votable, v_visible, v_reaches, hub_ids, voter_hub_ids
    from (select app.viewer_session_gate(app.access_level('profile')) as level) g
    left join app.posts p on p.id = p_post_id;
  if not coalesce(v_visible, false) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if not v_reaches then
    perform app.fail('VOTE_NOT_ALLOWED');
  end if;
  if not v_votable then
    perform app.fail('POST_NOT_VOTABLE');
  end if;
  if cardinality(coalesce(p_hub_ids, '{}')) <> cardinality(coalesce(p_hub_ballots, '{}')) then
    raise exception 'cast_vote: one ballot per hub';
  end if;
  if cardinality(hub_ids) > 0 then
    v_missing := array(select h from unnest(hub_ids) h where not h = any (coalesce(p_hub_ids, '{}')));
  end if;
  if cardinality(v_missing) > 0 then
    -- Not an API error (the API seals again and retries): a SQLSTATE of its own, never answered to a client.
    raise exception using errcode = 'OBS01', message = 'cast_vote: hubs without a sealed ballot', detail = array_to_string(v_missing, ',');
  end if;
  -- Every write in one statement: the receipt, a scope receipt and a sealed ballot per pool, the
  -- author's notification. The tally is the snapshot's, before this vote.
  with receipt as (
    insert into app.vote_receipts (post_id, user_id) values (p_post_id, v_viewer)
      on conflict do nothing
      returning vote_receipts.voted_at
  ), scopes as (
    insert into app.vote_scope_receipts (post_id, user_id, hub_id)
      select p_post_id, v_viewer, scope from receipt, unnest(array[null::uuid] || hub_ids) scope
  ), notification as (
    insert into app.notifications (recipient_id, type, actor_id, post_id)
      select v_author, 'post_voted', null, p_post_id from receipt where v_author <> v_viewer
  ), sealed as (
    insert into app_private.sealed_ballots (post_id, hub_id, key_id, nonce, ciphertext)
      select p_post_id, s.hub_id, p_key_id, substr(s.sealed, 1, 12), substr(s.sealed, 13)
      from receipt,
           (select null::uuid as hub_id, decode(p_global, 'hex') as sealed
            union all
            select b.hub_id, decode(b.sealed, 'hex') from unnest(p_hub_ids, p_hub_ballots) b (hub_id, sealed) where b.hub_id = any (hub_ids)) s
  )
  -- The voter's activity event and hub activity are written by their one writers (db/sql/hubs/activity.sql),
  -- once for the receipt's row (none when the vote was already cast): plain SQL functions, called
  -- inside this statement.
  select r.voted_at, app_private.sealed_tally(p_post_id, null)
    into voted_at, global_tally
    from receipt r
    cross join lateral (select app_private.record_activity(p_post_id, 'post_voted'),
                               case when cardinality(hub_ids) > 0 then app_private.touch_hub_activity(hub_ids, v_viewer) end
                        where r.voted_at is not null) written;
  if voted_at is null then
    perform app.fail('VOTE_ALREADY_CAST');
  end if;
  -- A scope whose pending ballots (this one included) reach a multiple of the batch queues its
  -- tally (one job per post and scope: the job key): once per k votes, not on every vote of a post
  -- whose tallier is busy. Concurrent votes may each see another count; the sweep catches them.
  if app_private.vote_fills_batch(jsonb_array_length(global_tally -> 'b') + 1, p_batch) then
    perform app_private.queue_tally(p_post_id, null);
  end if;
  if cardinality(hub_ids) > 0 then
    -- (This statement sees the ballots the vote just wrote: its own count is in.)
    for v_scope in
      select p.hub_id from app_private.pending_ballots(p_post_id, hub_ids) p where app_private.vote_fills_batch(p.pending, p_batch)
    loop
      perform app_private.queue_tally(p_post_id, v_scope);
    end loop;
  end if;
  if cardinality(voter_hub_ids) > 16 then
    voter_hub_ids := null;
  end if;
end
$$;

comment on function app.cast_vote(uuid, text, text, uuid[], text[], integer) is
  'The vote, and every row it writes, in one statement: the receipt and a scope receipt per pool (global and each hub where the voter is an active member), a sealed ballot per pool, the author''s post_voted notification without actor, and through the one activity writers the voter''s activity event and hub activity; queues a scope''s tally when its pending ballots fill a batch. Checks the session first (app.viewer_session_gate, level 2). POST /posts/{postId}/vote.';

grant execute on function app.cast_vote(uuid, text, text, uuid[], text[], integer) to app_user;

-- Merging an anonymous caller into a phone identity moves the caller's vote receipts to the target
-- user for the posts the target has not voted on. The target may vote on one of those posts while
-- the merge runs (a vote committed between the read and the insert, or still open when the insert
-- comes), so the insert skips a post the target holds a receipt for by then (waiting for an open
-- vote to end) rather than break vote_receipts_pkey, and only the receipts it moved take their
-- scope receipts along and leave the caller: a post both voted on keeps both votes, as when the
-- target had voted before the merge began. A vote of the target that comes after the insert waits
-- for the merge and answers VOTE_ALREADY_CAST (app.cast_vote's own `on conflict do nothing`).
create or replace function app_private.merge_votes(
  p_source uuid,
  p_target uuid
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_moved uuid[];
begin
  with moved as (
    insert into app.vote_receipts (post_id, user_id, voted_at)
      select r.post_id, p_target, r.voted_at from app.vote_receipts r where r.user_id = p_source
      on conflict (post_id, user_id) do nothing
      returning post_id
  )
  select coalesce(array_agg(m.post_id), '{}') into v_moved from moved m;
  update app.vote_scope_receipts set user_id = p_target where user_id = p_source and post_id = any (v_moved);
  delete from app.vote_receipts where user_id = p_source and post_id = any (v_moved);
end
$$;

comment on function app_private.merge_votes(uuid, uuid) is
  'A user merge''s vote step (app_private.user_merge_steps): moves the source account''s receipts and scope receipts to the target, keeping both votes of a post voted by both. Run by app_private.merge_user when POST /auth/otp/verify signs in to a second account.';

-- The 16 slot rows of one post and scope, seeded so that each position's counts add up to zero.
-- They are made with the scope (a slider post's insert; its placement in a hub), never by a vote:
-- a vote only rewrites one existing row, and the seed rows carry the author's transaction.
create or replace function app_private.seed_vote_counters(
  p_post_id uuid,
  p_hub_id uuid
)
  returns void
  language plpgsql
  volatile
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

comment on function app_private.seed_vote_counters(uuid, uuid) is
  'Makes the 16 counter slot rows of a post and scope, seeded to sum to zero, when the scope is created (a slider post, its placement in a hub); a vote never inserts a counter row. Called by the triggers _300_seed_vote_counters on app.posts and app.post_hubs (POST /posts, POST /posts/{postId}/share/hubs).';

create or replace function app_private.posts_seed_vote_counters()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.seed_vote_counters(new.id, null);
  return null;
end
$$;

comment on function app_private.posts_seed_vote_counters() is
  'Trigger function: the global counter rows of a new slider post (trigger _300_seed_vote_counters on app.posts; POST /posts).';

create or replace function app_private.post_hubs_seed_vote_counters()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  if exists (select from app.posts p where p.id = new.post_id and p.slider_text is not null) then
    perform app_private.seed_vote_counters(new.post_id, new.hub_id);
  end if;
  return null;
end
$$;

comment on function app_private.post_hubs_seed_vote_counters() is
  'Trigger function: the hub counter rows of a slider post placed in a hub (trigger _300_seed_vote_counters on app.post_hubs; POST /posts with hubs, POST /posts/{postId}/share/hubs).';

-- The counts are the five counter columns in the order of app.vote_position, the one list of the
-- positions in SQL (server/votes/ballots.ts ballotPositions in TypeScript; test/sql/database/enums.test.ts holds the
-- enum, the columns and the list equal).
-- One branch per kind of scope, so that each reads its scope by the scope index (a null hub is
-- the global pool): PL/pgSQL plans and starts only the branch it runs, where one SQL statement
-- for both kinds started both (measured: 36 µs a call against 23 µs on PostgreSQL 18, a read every
-- vote and summary pays). Its plans are cached per connection, and the pending ballots come and
-- go: planned while app_private.sealed_ballots was empty or a page, a read took the whole table on
-- every later call (a sequential scan, the cheapest plan of an empty table) until the table's
-- statistics next changed, so a vote cost more with every ballot pending anywhere.
-- enable_seqscan = off keeps both scopes on the scope index (sealed_ballots_scope and the
-- counters' key) whatever the table held when the plan was made.
create or replace function app_private.sealed_tally(
  p_post_id uuid,
  p_hub_id uuid
)
  returns jsonb
  language plpgsql
  stable
  set search_path = pg_catalog
  set enable_seqscan = off
  as $$
declare
  v_counts jsonb;
  v_ballots jsonb;
begin
  if p_hub_id is null then
    select jsonb_build_array(coalesce(sum(c.strong_left_count), 0), coalesce(sum(c.left_count), 0), coalesce(sum(c.neutral_count), 0),
                             coalesce(sum(c.right_count), 0), coalesce(sum(c.strong_right_count), 0))
      into v_counts
      from app.vote_counters c
      where c.post_id = p_post_id and c.hub_id is null;
    select jsonb_agg(b.key_id || ':' || encode(b.nonce || b.ciphertext, 'base64'))
      into v_ballots
      from app_private.sealed_ballots b
      where b.post_id = p_post_id and b.hub_id is null;
  else
    select jsonb_build_array(coalesce(sum(c.strong_left_count), 0), coalesce(sum(c.left_count), 0), coalesce(sum(c.neutral_count), 0),
                             coalesce(sum(c.right_count), 0), coalesce(sum(c.strong_right_count), 0))
      into v_counts
      from app.vote_counters c
      where c.post_id = p_post_id and c.hub_id = p_hub_id;
    select jsonb_agg(b.key_id || ':' || encode(b.nonce || b.ciphertext, 'base64'))
      into v_ballots
      from app_private.sealed_ballots b
      where b.post_id = p_post_id and b.hub_id = p_hub_id;
  end if;
  return jsonb_build_object('c', v_counts, 'b', coalesce(v_ballots, '[]'));
end
$$;

comment on function app_private.sealed_tally(uuid, uuid) is
  'A scope''s tally as stored: counter sums and the pending ballots still sealed (the API opens them). Called by app.cast_vote (the tally before the vote) and app.vote_tally.';

-- When a scope's pending ballots are a batch for the tallier: at least p_batch of them, and never
-- fewer than two (one ballot alone would be its voter's position). The tallier reads and deletes
-- only such a batch (ballots_to_tally, tally_ballots); the minute sweep queues every scope that
-- holds one (queue_due_tallies). Plain SQL, inlined where it is used.
create or replace function app_private.batch_ready(
  p_pending bigint,
  p_batch int
)
  returns boolean
  language sql
  immutable
  as $$
  select
    p_pending >= greatest(p_batch, 2)
$$;

comment on function app_private.batch_ready(bigint, integer) is
  'The tallier''s batch rule: a scope''s pending ballots are a batch when there are at least p_batch of them and never fewer than two. Used by ballots_to_tally, tally_ballots and queue_due_tallies (worker task tally_ballots and its minute sweep).';

-- The pending ballots of a post in each of the hub scopes p_hub_ids that holds any (the hub
-- scopes a vote just wrote to). Planned without sequential scans, as app_private.sealed_tally is:
-- a plan cached while the table was nearly empty would otherwise read every pending ballot.
create or replace function app_private.pending_ballots(
  p_post_id uuid,
  p_hub_ids uuid[]
)
  returns table(
      hub_id uuid,
      pending bigint
)
  language sql
  stable
  set search_path = pg_catalog
  set enable_seqscan = off
  as $$
  select
    b.hub_id,
    count(*)
  from
    app_private.sealed_ballots b
  where
    b.post_id = p_post_id
    and b.hub_id = any(p_hub_ids)
  group by
    b.hub_id
$$;

comment on function app_private.pending_ballots(uuid, uuid[]) is
  'The pending ballots of a post per hub scope among p_hub_ids (scopes holding none are left out), read on the scope index. Called by app.cast_vote to queue the tally of each hub scope its vote filled to a batch.';

-- Whether the vote that brought a scope's pending ballots to p_pending queues its tally: once per
-- p_batch votes, so a post whose tallier is busy does not queue a job on every vote (concurrent
-- votes may each see another count; the minute sweep catches what they miss).
create or replace function app_private.vote_fills_batch(
  p_pending bigint,
  p_batch int
)
  returns boolean
  language sql
  immutable
  as $$
  select
    p_pending % p_batch = 0
$$;

comment on function app_private.vote_fills_batch(bigint, integer) is
  'Whether the vote that brought a scope''s pending ballots to p_pending queues its tally: once per p_batch votes. Used by app.cast_vote (POST /posts/{postId}/vote).';

-- Queues the tally of one post and scope: the payload names the post and scope, nothing else; one
-- queued job per post and scope (its job key keeps the earliest run time).
create or replace function app_private.queue_tally(
  p_post_id uuid,
  p_hub_id uuid
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    graphile_worker.add_job('tally_ballots', json_build_object('postId', p_post_id, 'hubId', p_hub_id), job_key =>
      'tally_ballots:' || p_post_id || ':' || coalesce(p_hub_id::text, 'global'), job_key_mode => 'preserve_run_at');
$$;

comment on function app_private.queue_tally(uuid, uuid) is
  'Queues the worker task tally_ballots for one post and scope (one job per scope: its job key). Called by app.cast_vote and app_private.queue_due_tallies.';

grant execute on function app_private.queue_tally(uuid, uuid) to app_worker;

-- The tallier's two steps read and delete the ballots of one scope, on the worker's long-lived
-- connections: without sequential scans, as app_private.sealed_tally (a plan cached while the
-- table was nearly empty would read every pending ballot on each run).
create or replace function app_private.ballots_to_tally(
  p_post_id uuid,
  p_hub_id uuid,
  p_batch int
)
  returns table(
      id uuid,
      key_id text,
      sealed text
)
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  set enable_seqscan = off
  as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('tally_ballots:' || p_post_id || ':' || coalesce(p_hub_id::text, 'global'), 0));
  if p_hub_id is null then
    return query
      with pending as (
        select b.id, b.key_id, encode(b.nonce || b.ciphertext, 'base64') as sealed
        from app_private.sealed_ballots b
        where b.post_id = p_post_id and b.hub_id is null
        for update
      )
      select p.id, p.key_id, p.sealed from pending p where app_private.batch_ready((select count(*) from pending), p_batch);
  else
    return query
      with pending as (
        select b.id, b.key_id, encode(b.nonce || b.ciphertext, 'base64') as sealed
        from app_private.sealed_ballots b
        where b.post_id = p_post_id and b.hub_id = p_hub_id
        for update
      )
      select p.id, p.key_id, p.sealed from pending p where app_private.batch_ready((select count(*) from pending), p_batch);
  end if;
end
$$;

comment on function app_private.ballots_to_tally(uuid, uuid, integer) is
  'The worker task tally_ballots, step one: locks the scope and answers its pending ballots, sealed, when they are a batch (else nothing). worker/tasks/votes/tally-ballots.ts.';

grant execute on function app_private.ballots_to_tally(uuid, uuid, integer) to app_worker;

create or replace function app_private.tally_ballots(
  p_post_id uuid,
  p_hub_id uuid,
  p_ids uuid[],
  p_counts bigint[],
  p_batch int
)
  returns int
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  set enable_seqscan = off
  as $$
declare
  v_deleted int;
  v_updated int;
  v_slot smallint := floor(random() * 16)::smallint;
begin
  if not app_private.batch_ready(cardinality(p_ids), p_batch) or cardinality(p_counts) <> cardinality(enum_range(null::app.vote_position))
     or (select sum(n) from unnest(p_counts) n) <> cardinality(p_ids) or exists (select from unnest(p_counts) n where n < 0) then
    raise exception 'tally_ballots: not a batch of at least % ballots', greatest(p_batch, 2);
  end if;
  -- By id (primary key); the scope test only refuses ballots of another post or scope.
  delete from app_private.sealed_ballots b
    where b.id = any (p_ids) and b.post_id = p_post_id and b.hub_id is not distinct from p_hub_id;
  get diagnostics v_deleted = row_count;
  if v_deleted <> cardinality(p_ids) then
    raise exception 'tally_ballots: % of % ballots were still pending', v_deleted, cardinality(p_ids);
  end if;
  if p_hub_id is null then
    update app.vote_counters c
      set strong_left_count = c.strong_left_count + p_counts[1], left_count = c.left_count + p_counts[2],
          neutral_count = c.neutral_count + p_counts[3], right_count = c.right_count + p_counts[4],
          strong_right_count = c.strong_right_count + p_counts[5]
      where c.post_id = p_post_id and c.hub_id is null and c.slot = v_slot;
  else
    update app.vote_counters c
      set strong_left_count = c.strong_left_count + p_counts[1], left_count = c.left_count + p_counts[2],
          neutral_count = c.neutral_count + p_counts[3], right_count = c.right_count + p_counts[4],
          strong_right_count = c.strong_right_count + p_counts[5]
      where c.post_id = p_post_id and c.hub_id = p_hub_id and c.slot = v_slot;
  end if;
  get diagnostics v_updated = row_count;
  if v_updated = 0 then
    raise exception 'vote counters missing for a scope of post %', p_post_id;
  end if;
  return v_deleted;
end
$$;

comment on function app_private.tally_ballots(uuid, uuid, uuid[], bigint[], integer) is
  'The worker task tally_ballots, step two: deletes the batch''s ballots by id and adds their opened counts to one counter slot, or refuses a batch that is not exactly what is pending. worker/tasks/votes/tally-ballots.ts.';

grant execute on function app_private.tally_ballots(uuid, uuid, uuid[], bigint[], integer) to app_worker;

-- The sweep (every minute): queues the tally of every scope holding a batch of pending ballots
-- that no vote queued (concurrent votes each saw fewer; a tallier that died).
create or replace function app_private.queue_due_tallies(
  p_batch int
)
  returns int
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_queued int := 0;
  v_scope record;
begin
  for v_scope in
    select b.post_id, b.hub_id from app_private.sealed_ballots b group by b.post_id, b.hub_id having app_private.batch_ready(count(*), p_batch)
  loop
    perform app_private.queue_tally(v_scope.post_id, v_scope.hub_id);
    v_queued := v_queued + 1;
  end loop;
  return v_queued;
end
$$;

comment on function app_private.queue_due_tallies(integer) is
  'The minute sweep (worker cron tally_sweep): queues the tally of every scope holding a batch that no vote queued (concurrent votes, a tallier that died).';

grant execute on function app_private.queue_due_tallies(integer) to app_worker;

-- Takes the locks described above for the posts `p_posts` (shared: a receipt writer; exclusive: a
-- writer of the posts themselves).
create or replace function app_private.lock_votes_received(
  p_posts uuid[],
  p_exclusive boolean
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_whole bigint := hashtextextended('votes_received', 0);
begin
  if cardinality(p_posts) = 0 then
    return;
  end if;
  if cardinality(p_posts) > 32 then
    perform pg_advisory_xact_lock(v_whole);
    return;
  end if;
  perform pg_advisory_xact_lock_shared(v_whole);
  -- In post order: two writers locking several posts exclusively never wait for each other in a circle.
  if p_exclusive then
    perform pg_advisory_xact_lock(hashtextextended('votes_received:' || p, 0)) from unnest(p_posts) p order by p;
  else
    perform pg_advisory_xact_lock_shared(hashtextextended('votes_received:' || p, 0)) from unnest(p_posts) p order by p;
  end if;
end
$$;

comment on function app_private.lock_votes_received(uuid[], boolean) is
  'The advisory locks that order a receipt writer (shared) against a writer of posts whose votes change author or counting (exclusive), so votesReceived is never counted twice or missed. Called by the votes-received triggers (counters.sql, votes.sql).';

-- Posts: a post whose votes start or stop counting (deleted, restored, purged, or moved to another
-- author by an account merge) moves its receipts' number between authors. Only posts whose author
-- or counting changed are locked and counted; the count reads the post's receipts through their
-- primary key, once, on this rare write.
create or replace function app_private.move_votes_received()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_changed uuid[];
begin
  if tg_op = 'DELETE' then
    v_changed := array(select o.id from old_rows o where app_private.post_counts_votes(o));
  else
    v_changed := array(
      select n.id from new_rows n join old_rows o on o.id = n.id
      where app_private.post_counts_votes(n) is distinct from app_private.post_counts_votes(o)
         or (app_private.post_counts_votes(n) and n.author_id is distinct from o.author_id));
  end if;
  if cardinality(v_changed) = 0 then
    return null;
  end if;
  perform app_private.lock_votes_received(v_changed, true);
  if tg_op = 'DELETE' then
    perform app_private.add_counts(array(
      select ('user_votes_received', o.author_id, -(select count(*) from app.vote_receipts r where r.post_id = o.id))::app_private.counter_change
      from old_rows o where o.id = any (v_changed)));
  else
    perform app_private.add_counts(array(
      select ('user_votes_received', x.author_id, x.sign * (select count(*) from app.vote_receipts r where r.post_id = x.id))::app_private.counter_change
      from (select n.id, n.author_id, 1 as sign from new_rows n where n.id = any (v_changed) and app_private.post_counts_votes(n)
            union all
            select o.id, o.author_id, -1 from old_rows o where o.id = any (v_changed) and app_private.post_counts_votes(o)) x));
  end if;
  return null;
end
$$;

comment on function app_private.move_votes_received() is
  'Trigger function: a post whose votes start or stop counting (deleted, restored, purged, moved by an account merge) moves its receipts'' number between authors'' votesReceived. Triggers _510_move_votes_received_delete and _510_move_votes_received_update on app.posts.';

-- A user sees their own receipts (vote status), never anyone else's.
create policy vote_receipts_select_own on app.vote_receipts
  for select to app_user
    using (user_id =(
      select
        app.viewer_id()));

comment on policy vote_receipts_select_own on app.vote_receipts is
  'A user reads only their own receipts (whether and when they voted, never the position): GET /posts/{postId}/vote/me, and the voted state of post cards.';

grant select (post_id, user_id, voted_at) on app.vote_receipts to app_user;

create policy vote_scope_receipts_select_own on app.vote_scope_receipts
  for select to app_user
    using (user_id =(
      select
        app.viewer_id()));

comment on policy vote_scope_receipts_select_own on app.vote_scope_receipts is
  'A user reads only their own scope receipts (which pools their vote counted in), never anyone else''s. No endpoint reads them today; app.cast_vote writes them and the purge and moderation functions delete them.';

grant select (post_id, user_id, hub_id) on app.vote_scope_receipts to app_user;

create trigger _300_seed_vote_counters
  after insert on app.post_hubs for each row
  execute function app_private.post_hubs_seed_vote_counters();

comment on trigger _300_seed_vote_counters on app.post_hubs is 'Seeds the hub counter rows of a slider post when it is placed in a hub.';

create trigger _300_seed_vote_counters
  after insert on app.posts for each row
  when(new.slider_text is not null)
  execute function app_private.posts_seed_vote_counters();

comment on trigger _300_seed_vote_counters on app.posts is 'Seeds the global counter rows of a new slider post.';

create trigger _510_move_votes_received_delete
  after delete on app.posts referencing old table as old_rows for each statement
  execute function app_private.move_votes_received();

comment on trigger _510_move_votes_received_delete on app.posts is 'Keeps authors'' votesReceived when posts are purged.';

create trigger _510_move_votes_received_update
  after update on app.posts referencing old table as old_rows new table as new_rows for each statement
  execute function app_private.move_votes_received();

comment on trigger _510_move_votes_received_update on app.posts is
  'Keeps authors'' votesReceived when posts are deleted, restored or move to another author.';
