-- Up Migration
-- A vote in two statements plus its session check (issue 12: sql / floor). Before, app.cast_vote
-- ran a dozen statements of its own behind a separate app.session_gate statement; on PostgreSQL 15
-- every statement pays its own snapshot, executor start and plan-cache check, and the gate was a
-- simple-query statement parsed and planned on every request.
-- 1. The session check moves into the vote: the request sends no gate statement for its deferred
--    session (RequestTransaction.queryAndCommit with gatedAt, server/votes/routes.ts); cast_vote
--    checks the transaction's own session (app.viewer_session_id) with the same two rules as the
--    gate (app.session_access_level, app.session_gate), first, so the answers keep the contract
--    order (401, then 403, then 404/422) and nothing is written for a refused session. The
--    level read that cast_vote made for itself (app.user_access_level) is that same check.
-- 2. All writes are one statement of data-modifying CTEs, each driven by the receipt's row: the
--    receipt, scope receipts, the post_voted notification (actor null, contract 7), the voter's
--    activity event and hub_activity rows, and the counter slot per pool. The rows written are
--    exactly those of before; app_private.record_activity and touch_hub_activity stay the writers
--    for every other caller (a vote wrote through them one call, one statement each).
-- 3. The tally is read in that statement: the global slots as its snapshot saw them, with this
--    vote's slot as the update wrote it (before: one more statement after the update).
create or replace function app.cast_vote(p_post_id uuid, p_position app.vote_position,
  out voted_at timestamptz, out hub_ids uuid[], out global_tally bigint[])
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

-- Down Migration
create or replace function app.cast_vote(p_post_id uuid, p_position app.vote_position,
  out voted_at timestamptz, out hub_ids uuid[], out global_tally bigint[])
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
