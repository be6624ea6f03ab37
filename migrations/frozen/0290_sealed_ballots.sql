-- Up Migration
-- Sealed ballots (contract 7 "Vote anonymity", design.md "Votes stay anonymous"). Until now a vote
-- added its position to a counter slot row in the voter's own transaction: the row version it left
-- carried the voter's transaction id (the xmin of the voter's receipt), and any earlier copy of
-- the row (a nightly backup, a replica, the WAL) diffed with it gave the position. Now the
-- position never reaches the database in the clear:
-- - the API seals it (AES-256-GCM under BALLOT_KEY, which the database never sees; a fresh nonce
--   per ballot; the post and scope bound as associated data: db/ballots.ts) into one sealed ballot
--   per counted scope, which app.cast_vote writes beside the receipts;
-- - a tallier (worker/tasks/tally-ballots.ts) opens the pending ballots of one post and scope in a
--   batch of at least k, adds their sum to one counter slot and deletes them, in one transaction:
--   every counter row version holds the sum of at least k voters and the tallier's transaction id;
-- - every read shows the counters plus the scope's pending ballots (fewer than k once the tallier
--   has run), opened by the API (app.vote_tally).
-- No SQL function takes a position any more.

create table app_private.sealed_ballots (
  -- Random: an id tells nothing of the order of the votes.
  id uuid primary key default gen_random_uuid(),
  post_id uuid not null,
  -- null: the global pool; else the hub pool the vote counted in.
  hub_id uuid,
  -- Which key of BALLOT_KEY sealed it (keys rotate: old ones stay to open what they sealed).
  key_id text not null check (key_id ~ '^[A-Za-z0-9_-]{1,32}$'),
  nonce bytea not null check (octet_length(nonce) = 12),
  -- One byte of position and the 16-byte tag: every ballot has the same length.
  ciphertext bytea not null check (octet_length(ciphertext) = 17)
);
-- No foreign keys, as 0171 reasons for receipts: written only by app.cast_vote from the post and
-- hubs it has just read (posts and hubs are never deleted), and a key would lock the post's row.
comment on table app_private.sealed_ballots is
  'Positions sealed by the API (AES-256-GCM, BALLOT_KEY), one per counted scope of a vote, until a tallier folds at least k of one post and scope into app.vote_counters (0290).';
create index sealed_ballots_scope on app_private.sealed_ballots (post_id, hub_id);
-- No role but the owner reads or writes it: app.cast_vote writes, app.vote_tally reads for the API,
-- the tallier's two functions below read and delete. No policy: no API role may touch a row.
alter table app_private.sealed_ballots enable row level security;
alter table app_private.sealed_ballots force row level security;

drop function app.cast_vote(uuid, app.vote_position);

-- A scope's tally as the API needs it: the five counter sums (position order) as `c`, and the
-- scope's pending sealed ballots as `b`, each 'keyId:base64(nonce || ciphertext)' (the API opens
-- them with the post and scope as associated data and adds them). Plain SQL: inlined where used.
create function app_private.sealed_tally(p_post_id uuid, p_hub_id uuid)
  returns jsonb
  language sql stable
  set search_path = pg_catalog
  as $$
  select jsonb_build_object(
    'c', (select jsonb_build_array(coalesce(sum(c.strong_left_count), 0), coalesce(sum(c.left_count), 0), coalesce(sum(c.neutral_count), 0),
                                   coalesce(sum(c.right_count), 0), coalesce(sum(c.strong_right_count), 0))
          from app.vote_counters c where c.post_id = p_post_id and c.hub_id is not distinct from p_hub_id),
    'b', coalesce((select jsonb_agg(b.key_id || ':' || encode(b.nonce || b.ciphertext, 'base64'))
                   from app_private.sealed_ballots b where b.post_id = p_post_id and b.hub_id is not distinct from p_hub_id), '[]'))
$$;

-- The tally of a post the viewer may see, in a scope (null: global); null for a post it may not.
drop function app.vote_tally(uuid, uuid);
create function app.vote_tally(p_post_id uuid, p_hub_id uuid)
  returns jsonb
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  if not app.can_see_post(p_post_id) then
    return null;
  end if;
  return app_private.sealed_tally(p_post_id, p_hub_id);
end
$$;
revoke all on function app.vote_tally(uuid, uuid) from public;
grant execute on function app.vote_tally(uuid, uuid) to app_anonymous;

-- The vote. The API seals the position for the global scope (p_global) and for the hubs it
-- believes the vote may count in (p_hub_ids, p_hub_ballots), each hex(nonce || ciphertext) under
-- key p_key_id. When a hub where this vote counts has no ballot (a placement the API had not
-- seen), nothing is written and SQLSTATE OBS01 is raised with those hubs in its detail: the API
-- seals for them and calls again. Ballots for hubs where the vote does not count are dropped.
-- Answers the receipt's time, the hubs counted and the global tally as the vote's snapshot saw it
-- before the vote (app_private.sealed_tally's shape: the API adds the voter's own position).
-- p_batch: the tallier's batch size k; a scope whose pending ballots reach it queues a tally.
create function app.cast_vote(p_post_id uuid, p_key_id text, p_global text, p_hub_ids uuid[], p_hub_ballots text[], p_batch int,
  out voted_at timestamptz, out hub_ids uuid[], out global_tally jsonb)
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
#variable_conflict use_column
declare
  v_viewer uuid := app.viewer_id();
  v_author uuid;
  v_visibility app.post_visibility;
  v_votable boolean;
  v_visible boolean;
  v_level int;
  v_missing uuid[];
  v_scope uuid;
begin
  -- The session first (contract order 401, 403, then the request), as 0170.
  v_level := app.session_gate(app.session_access_level(app.viewer_session_id(), v_viewer), 2);
  select p.author_id, p.visibility, p.slider_text is not null, app.post_visible_to(p, v_viewer, app.viewer_block_list()),
         (select coalesce(array_agg(ph.hub_id order by ph.hub_id), '{}') from app.post_hubs ph
          where ph.post_id = p.id and app.is_active_member(ph.hub_id, v_viewer))
    into v_author, v_visibility, v_votable, v_visible, hub_ids
    from app.posts p where p.id = p_post_id;
  if not coalesce(v_visible, false) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if v_visibility = 'private_locked_hub' and v_author <> v_viewer
     and not exists (select from app.post_hubs ph where ph.post_id = p_post_id and ph.kind = 'target'
                     and app.is_active_member(ph.hub_id, v_viewer)) then
    perform app.fail('VOTE_NOT_ALLOWED');
  end if;
  if not v_votable then
    perform app.fail('POST_NOT_VOTABLE');
  end if;
  if cardinality(coalesce(p_hub_ids, '{}')) <> cardinality(coalesce(p_hub_ballots, '{}')) then
    raise exception 'cast_vote: one ballot per hub';
  end if;
  v_missing := array(select h from unnest(hub_ids) h where not h = any (coalesce(p_hub_ids, '{}')));
  if cardinality(v_missing) > 0 then
    -- Not an API error (the API seals again and retries): a SQLSTATE of its own, never answered to a client.
    raise exception using errcode = 'OBS01', message = 'cast_vote: hubs without a sealed ballot', detail = array_to_string(v_missing, ',');
  end if;
  -- Every write in one statement, as 0170, with a sealed ballot per pool where the counter slot
  -- update was. The tally is the snapshot's, before this vote.
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
  ), event as (
    insert into app.activity_events (actor_id, post_id, kind)
      select v_viewer, p_post_id, 'post_voted' from receipt
  ), hub_touch as (
    insert into app.hub_activity (hub_id, user_id)
      select h, v_viewer from receipt, unnest(hub_ids) h
      on conflict (hub_id, user_id) do update set last_active_at = now()
  ), sealed as (
    insert into app_private.sealed_ballots (post_id, hub_id, key_id, nonce, ciphertext)
      select p_post_id, s.hub_id, p_key_id, substr(s.sealed, 1, 12), substr(s.sealed, 13)
      from receipt,
           (select null::uuid as hub_id, decode(p_global, 'hex') as sealed
            union all
            select b.hub_id, decode(b.sealed, 'hex') from unnest(p_hub_ids, p_hub_ballots) b (hub_id, sealed) where b.hub_id = any (hub_ids)) s
  )
  select r.voted_at, app_private.sealed_tally(p_post_id, null)
    into voted_at, global_tally
    from receipt r;
  if voted_at is null then
    perform app.fail('VOTE_ALREADY_CAST');
  end if;
  -- A scope whose pending ballots (this one included) reach a multiple of the batch queues its
  -- tally (one job per post and scope: the job key): once per k votes, not on every vote of a post
  -- whose tallier is busy. Concurrent votes may each see another count; the sweep catches them.
  if (jsonb_array_length(global_tally -> 'b') + 1) % p_batch = 0 then
    perform app_private.queue_tally(p_post_id, null);
  end if;
  if cardinality(hub_ids) > 0 then
    -- (This statement sees the ballots the vote just wrote: its own count is in.)
    for v_scope in
      select b.hub_id from app_private.sealed_ballots b where b.post_id = p_post_id and b.hub_id = any (hub_ids)
      group by b.hub_id having count(*) % p_batch = 0
    loop
      perform app_private.queue_tally(p_post_id, v_scope);
    end loop;
  end if;
end
$$;
revoke all on function app.cast_vote(uuid, text, text, uuid[], text[], int) from public;
grant execute on function app.cast_vote(uuid, text, text, uuid[], text[], int) to app_user;

-- Queues the tally of one post and scope: the payload names the post and scope, nothing else; one
-- queued job per post and scope (its job key keeps the earliest run time).
create function app_private.queue_tally(p_post_id uuid, p_hub_id uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  select graphile_worker.add_job('tally_ballots', json_build_object('postId', p_post_id, 'hubId', p_hub_id),
    job_key => 'tally_ballots:' || p_post_id || ':' || coalesce(p_hub_id::text, 'global'), job_key_mode => 'preserve_run_at');
$$;

-- The tallier's first step, in its transaction: one tallier at a time per post and scope (a
-- transaction-level advisory lock), then the scope's pending ballots, locked. Answers no row when
-- there are fewer than p_batch: they are never tallied alone.
create function app_private.ballots_to_tally(p_post_id uuid, p_hub_id uuid, p_batch int)
  returns table (id uuid, key_id text, sealed text)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('tally_ballots:' || p_post_id || ':' || coalesce(p_hub_id::text, 'global'), 0));
  return query
    with pending as (
      select b.id, b.key_id, encode(b.nonce || b.ciphertext, 'base64') as sealed
      from app_private.sealed_ballots b
      where b.post_id = p_post_id and b.hub_id is not distinct from p_hub_id
      for update
    )
    select p.id, p.key_id, p.sealed from pending p where (select count(*) from pending) >= greatest(p_batch, 2);
end
$$;

-- The tallier's second step, in the same transaction: deletes exactly the ballots it opened and
-- adds their sum (p_counts, position order) to one random counter slot of the scope. Refuses a
-- batch smaller than p_batch, a sum that is not one vote per ballot, or ballots already gone.
create function app_private.tally_ballots(p_post_id uuid, p_hub_id uuid, p_ids uuid[], p_counts bigint[], p_batch int)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_deleted int;
  v_slot smallint := floor(random() * 16)::smallint;
begin
  if cardinality(p_ids) < greatest(p_batch, 2) or cardinality(p_counts) <> 5
     or (select sum(n) from unnest(p_counts) n) <> cardinality(p_ids) or exists (select from unnest(p_counts) n where n < 0) then
    raise exception 'tally_ballots: not a batch of at least % ballots', greatest(p_batch, 2);
  end if;
  delete from app_private.sealed_ballots b
    where b.id = any (p_ids) and b.post_id = p_post_id and b.hub_id is not distinct from p_hub_id;
  get diagnostics v_deleted = row_count;
  if v_deleted <> cardinality(p_ids) then
    raise exception 'tally_ballots: % of % ballots were still pending', v_deleted, cardinality(p_ids);
  end if;
  update app.vote_counters c
    set strong_left_count = c.strong_left_count + p_counts[1], left_count = c.left_count + p_counts[2],
        neutral_count = c.neutral_count + p_counts[3], right_count = c.right_count + p_counts[4],
        strong_right_count = c.strong_right_count + p_counts[5]
    where c.post_id = p_post_id and c.hub_id is not distinct from p_hub_id and c.slot = v_slot;
  if not found then
    raise exception 'vote counters missing for a scope of post %', p_post_id;
  end if;
  return v_deleted;
end
$$;

-- The sweep (every minute): queues the tally of every scope holding a batch of pending ballots
-- that no vote queued (concurrent votes each saw fewer; a tallier that died).
create function app_private.queue_due_tallies(p_batch int)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_queued int := 0;
  v_scope record;
begin
  for v_scope in
    select b.post_id, b.hub_id from app_private.sealed_ballots b group by b.post_id, b.hub_id having count(*) >= greatest(p_batch, 2)
  loop
    perform app_private.queue_tally(v_scope.post_id, v_scope.hub_id);
    v_queued := v_queued + 1;
  end loop;
  return v_queued;
end
$$;

revoke all on function app_private.sealed_tally(uuid, uuid), app_private.queue_tally(uuid, uuid),
  app_private.ballots_to_tally(uuid, uuid, int), app_private.tally_ballots(uuid, uuid, uuid[], bigint[], int),
  app_private.queue_due_tallies(int) from public;
grant execute on function app_private.ballots_to_tally(uuid, uuid, int), app_private.tally_ballots(uuid, uuid, uuid[], bigint[], int),
  app_private.queue_due_tallies(int), app_private.queue_tally(uuid, uuid) to app_worker;

-- Down Migration
-- Pending ballots cannot be opened here (the database never had the key): run the tallier with a
-- batch of 1 before going down, or their votes are lost from the counters.
drop function app_private.queue_due_tallies(int), app_private.tally_ballots(uuid, uuid, uuid[], bigint[], int),
  app_private.ballots_to_tally(uuid, uuid, int);
drop function app.cast_vote(uuid, text, text, uuid[], text[], int);
drop function app_private.queue_tally(uuid, uuid);
drop function app.vote_tally(uuid, uuid);
drop function app_private.sealed_tally(uuid, uuid);
drop table app_private.sealed_ballots;

create function app.vote_tally(p_post_id uuid, p_hub_id uuid)
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
revoke all on function app.vote_tally(uuid, uuid) from public;
grant execute on function app.vote_tally(uuid, uuid) to app_anonymous;

-- The vote of 0170, adding the position to a counter slot in the voter's transaction.
create function app.cast_vote(p_post_id uuid, p_position app.vote_position, out voted_at timestamptz, out hub_ids uuid[], out global_tally bigint[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
#variable_conflict use_column
declare
  v_viewer uuid := app.viewer_id();
  v_author uuid;
  v_visibility app.post_visibility;
  v_votable boolean;
  v_visible boolean;
  v_slot smallint := floor(random() * 16)::smallint;
  v_level int;
  v_counted int;
begin
  -- The session first (contract order 401, 403, then the request): the request's own session,
  -- live and at profile basics, by the one session rule and the one gate (a simple expression:
  -- no statement of its own).
  v_level := app.session_gate(app.session_access_level(app.viewer_session_id(), v_viewer), 2);
  -- One statement reads what the checks need: visibility, the post, and the hubs where this vote
  -- would count (read-only; used only once the checks pass).
  select p.author_id, p.visibility, p.slider_text is not null, app.post_visible_to(p, v_viewer, app.viewer_block_list()),
         (select coalesce(array_agg(ph.hub_id order by ph.hub_id), '{}') from app.post_hubs ph
          where ph.post_id = p.id and app.is_active_member(ph.hub_id, v_viewer))
    into v_author, v_visibility, v_votable, v_visible, hub_ids
    from app.posts p where p.id = p_post_id;
  if not coalesce(v_visible, false) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if v_visibility = 'private_locked_hub' and v_author <> v_viewer
     and not exists (select from app.post_hubs ph where ph.post_id = p_post_id and ph.kind = 'target'
                     and app.is_active_member(ph.hub_id, v_viewer)) then
    perform app.fail('VOTE_NOT_ALLOWED');
  end if;
  if not v_votable then
    perform app.fail('POST_NOT_VOTABLE');
  end if;
  -- Every write in one statement. Each write reads the receipt's row, so a second vote (receipt
  -- already there: no row) writes nothing and fails below. The rows are those of 0107-0109: the
  -- receipt, a scope receipt per pool, the author's post_voted notification (no actor), the
  -- voter's activity event (as app_private.record_activity writes it), the voter's hub_activity
  -- row per hub (as app_private.touch_hub_activity writes it), and the one counter slot per pool.
  -- The tally sums the global slots as this statement's snapshot saw them, with this vote's slot
  -- as written.
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
  ), event as (
    insert into app.activity_events (actor_id, post_id, kind)
      select v_viewer, p_post_id, 'post_voted' from receipt
  ), hub_touch as (
    insert into app.hub_activity (hub_id, user_id)
      select h, v_viewer from receipt, unnest(hub_ids) h
      on conflict (hub_id, user_id) do update set last_active_at = now()
  ), counted as (
    update app.vote_counters c
      set strong_left_count = c.strong_left_count + (p_position = 'strong_left')::int,
          left_count = c.left_count + (p_position = 'left')::int,
          neutral_count = c.neutral_count + (p_position = 'neutral')::int,
          right_count = c.right_count + (p_position = 'right')::int,
          strong_right_count = c.strong_right_count + (p_position = 'strong_right')::int
      from receipt
      where c.post_id = p_post_id and c.slot = v_slot and (c.hub_id is null or c.hub_id = any (hub_ids))
      returning c.hub_id, c.strong_left_count, c.left_count, c.neutral_count, c.right_count, c.strong_right_count
  )
  select r.voted_at, (select count(*) from counted),
         (select array[coalesce(sum(t.strong_left_count), 0), coalesce(sum(t.left_count), 0), coalesce(sum(t.neutral_count), 0),
                       coalesce(sum(t.right_count), 0), coalesce(sum(t.strong_right_count), 0)]::bigint[]
          from (select c.strong_left_count, c.left_count, c.neutral_count, c.right_count, c.strong_right_count
                from app.vote_counters c where c.post_id = p_post_id and c.hub_id is null and c.slot <> v_slot
                union all
                select n.strong_left_count, n.left_count, n.neutral_count, n.right_count, n.strong_right_count
                from counted n where n.hub_id is null) t)
    into voted_at, v_counted, global_tally
    from receipt r;
  if voted_at is null then
    perform app.fail('VOTE_ALREADY_CAST');
  end if;
  if v_counted <> 1 + cardinality(hub_ids) then
    raise exception 'vote counters missing for a scope of post %', p_post_id;
  end if;
end
$$;

revoke all on function app.cast_vote(uuid, app.vote_position) from public;
grant execute on function app.cast_vote(uuid, app.vote_position) to app_user;
