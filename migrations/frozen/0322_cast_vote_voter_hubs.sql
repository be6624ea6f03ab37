-- Up Migration
-- app.cast_vote also answers the voter's hubs when there are at most 16 of them (voter_hub_ids;
-- null when more). The API seals a ballot per hub where a vote may count; it learns a post's hubs
-- from cast_vote's answers, so the first vote of a process on a post placed in hubs was answered
-- OBS01 (hubs without a ballot) and voted again: two round trips and two session checks, most of a
-- vote's cost again. Knowing the voter's few hubs from any earlier vote, the API seals for them at
-- once: a vote needs the ballots of the post's hubs where the voter is an active member, which are
-- among the voter's hubs. Ballots for hubs where the vote does not count are dropped as before; the
-- OBS01 answer stays for what the API could not know (a voter with more than 16 hubs, a hub joined
-- since). Otherwise the function is 0290's, unchanged: the rows a vote writes are the same.
drop function app.cast_vote(uuid, text, text, uuid[], text[], int);
create function app.cast_vote(p_post_id uuid, p_key_id text, p_global text, p_hub_ids uuid[], p_hub_ballots text[], p_batch int,
  out voted_at timestamptz, out hub_ids uuid[], out global_tally jsonb, out voter_hub_ids uuid[])
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
  -- The voter's hubs, when few: the API seals the voter's next votes for them at once (one round
  -- trip, where a post it has not seen yet would otherwise cost an OBS01 answer and a second try).
  -- Hubs where a later vote does not count cost only their dropped ballots.
  if v_level >= 4 then  -- (the session's level is the user's: hub membership counts from level 4)
    -- (At most 17 index entries, in no order: a member of many hubs costs no more.)
    voter_hub_ids := array(select m.hub_id from app.hub_memberships m where m.user_id = v_viewer limit 17);
    if cardinality(voter_hub_ids) > 16 then
      voter_hub_ids := null;
    end if;
  else
    voter_hub_ids := '{}';
  end if;
end
$$;
revoke all on function app.cast_vote(uuid, text, text, uuid[], text[], int) from public;
grant execute on function app.cast_vote(uuid, text, text, uuid[], text[], int) to app_user;
