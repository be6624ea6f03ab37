-- Up Migration
-- Phone-verification merge (0009) of post activity: votes on frames the target has not voted on
-- (receipts move; counters already count them), comments, and saved posts.
create function app_private.merge_votes(p_source uuid, p_target uuid)
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

create function app_private.merge_comments(p_source uuid, p_target uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$ update app.comments set author_id = p_target where author_id = p_source $$;

create function app_private.merge_saved_posts(p_source uuid, p_target uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  insert into app.saved_posts (user_id, post_id, saved_at)
    select p_target, s.post_id, s.saved_at from app.saved_posts s where s.user_id = p_source
    on conflict do nothing;
  delete from app.saved_posts where user_id = p_source;
$$;

insert into app_private.user_merge_steps (position, step) values
  (30, 'app_private.merge_votes(uuid, uuid)'),
  (40, 'app_private.merge_comments(uuid, uuid)'),
  (50, 'app_private.merge_saved_posts(uuid, uuid)');

-- Down Migration
delete from app_private.user_merge_steps where position in (30, 40, 50);
drop function app_private.merge_saved_posts(uuid, uuid);
drop function app_private.merge_comments(uuid, uuid);
drop function app_private.merge_votes(uuid, uuid);
