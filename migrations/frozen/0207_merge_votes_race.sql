-- Up Migration
-- Merging an anonymous caller into a phone identity (0009, 0057) moves the caller's vote receipts
-- to the target user for the posts the target has not voted on. The target was read first and
-- written after: when the target voted on one of those posts meanwhile (a vote committed between
-- the read and the insert, or still open when the insert came), the insert broke
-- vote_receipts_pkey and the sign-in answered 500. The insert now skips a post the target holds a
-- receipt for by then (waiting for an open vote to end), and only the receipts it moved take their
-- scope receipts along and leave the caller: a post both voted on keeps both votes, as when the
-- target had voted before the merge began. A vote of the target that comes after the insert waits
-- for the merge and answers VOTE_ALREADY_CAST (app.cast_vote's own `on conflict do nothing`).
create or replace function app_private.merge_votes(p_source uuid, p_target uuid)
  returns void
  language plpgsql volatile
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

-- Down Migration
create or replace function app_private.merge_votes(p_source uuid, p_target uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  create temporary table merged_votes on commit drop as
    select r.post_id from app.vote_receipts r
    where r.user_id = p_source
      and not exists (select from app.vote_receipts t where t.post_id = r.post_id and t.user_id = p_target);
  insert into app.vote_receipts (post_id, user_id, voted_at)
    select r.post_id, p_target, r.voted_at from app.vote_receipts r join merged_votes m using (post_id) where r.user_id = p_source;
  update app.vote_scope_receipts set user_id = p_target
    where user_id = p_source and post_id in (select post_id from merged_votes);
  delete from app.vote_receipts where user_id = p_source and post_id in (select post_id from merged_votes);
end
$$;
