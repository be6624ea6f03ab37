-- Up Migration
-- A scope's counter rows and pending ballots were selected with `hub_id is not distinct from
-- p_hub_id` (0290), which the (post_id, hub_id, slot) unique index of app.vote_counters and the
-- (post_id, hub_id) index of app_private.sealed_ballots cannot serve past post_id: each tally of a
-- post in many hubs (GET /posts/{postId}/vote/hubs: one per hub) read every counter row of the
-- post, 16 per scope. The global scope is now `hub_id is null` and a hub scope `hub_id = p_hub_id`,
-- each an index range of its own; the results are the same. What app.cast_vote writes is unchanged.

-- Two branches, one per kind of scope; the one that does not apply is cut off by its constant
-- test (a hub branch with a null p_hub_id matches nothing). Plain SQL: still inlined where used.
create or replace function app_private.sealed_tally(p_post_id uuid, p_hub_id uuid)
  returns jsonb
  language sql stable
  set search_path = pg_catalog
  as $$
  select jsonb_build_object(
    'c', (select jsonb_build_array(coalesce(sum(c.strong_left_count), 0), coalesce(sum(c.left_count), 0), coalesce(sum(c.neutral_count), 0),
                                   coalesce(sum(c.right_count), 0), coalesce(sum(c.strong_right_count), 0))
          from (select c.* from app.vote_counters c where p_hub_id is null and c.post_id = p_post_id and c.hub_id is null
                union all
                select c.* from app.vote_counters c where c.post_id = p_post_id and c.hub_id = p_hub_id) c),
    'b', coalesce((select jsonb_agg(b.key_id || ':' || encode(b.nonce || b.ciphertext, 'base64'))
                   from (select b.* from app_private.sealed_ballots b where p_hub_id is null and b.post_id = p_post_id and b.hub_id is null
                         union all
                         select b.* from app_private.sealed_ballots b where b.post_id = p_post_id and b.hub_id = p_hub_id) b), '[]'))
$$;

create or replace function app_private.ballots_to_tally(p_post_id uuid, p_hub_id uuid, p_batch int)
  returns table (id uuid, key_id text, sealed text)
  language plpgsql volatile security definer
  set search_path = pg_catalog
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
      select p.id, p.key_id, p.sealed from pending p where (select count(*) from pending) >= greatest(p_batch, 2);
  else
    return query
      with pending as (
        select b.id, b.key_id, encode(b.nonce || b.ciphertext, 'base64') as sealed
        from app_private.sealed_ballots b
        where b.post_id = p_post_id and b.hub_id = p_hub_id
        for update
      )
      select p.id, p.key_id, p.sealed from pending p where (select count(*) from pending) >= greatest(p_batch, 2);
  end if;
end
$$;

create or replace function app_private.tally_ballots(p_post_id uuid, p_hub_id uuid, p_ids uuid[], p_counts bigint[], p_batch int)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_deleted int;
  v_updated int;
  v_slot smallint := floor(random() * 16)::smallint;
begin
  if cardinality(p_ids) < greatest(p_batch, 2) or cardinality(p_counts) <> 5
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

-- Down Migration
create or replace function app_private.tally_ballots(p_post_id uuid, p_hub_id uuid, p_ids uuid[], p_counts bigint[], p_batch int)
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

create or replace function app_private.ballots_to_tally(p_post_id uuid, p_hub_id uuid, p_batch int)
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

create or replace function app_private.sealed_tally(p_post_id uuid, p_hub_id uuid)
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
