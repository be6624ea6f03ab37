-- Up Migration
-- The purge (0264) deletes posts and empty hubs; since 0290 their pending sealed ballots (fewer than
-- k, waiting for the tallier) live in app_private.sealed_ballots, which has no foreign keys. They go
-- with the post or hub: a tallier folding them later would write counters for a post or hub that
-- no longer exists. Otherwise as 0264 wrote them.
create or replace function app_private.delete_posts(p_posts uuid[])
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  if cardinality(p_posts) = 0 then
    return;
  end if;
  delete from app.notifications n
    where n.post_id = any (p_posts) or n.comment_id in (select c.id from app.comments c where c.post_id = any (p_posts));
  delete from app.comments where post_id = any (p_posts);
  delete from app.saved_discussions s using app.hub_discussions d where d.id = s.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussion_stats s using app.hub_discussions d where d.id = s.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussion_messages m using app.hub_discussions d where d.id = m.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussions where post_id = any (p_posts);
  delete from app.saved_posts where post_id = any (p_posts);
  delete from app.post_shares where post_id = any (p_posts);
  delete from app.activity_events where post_id = any (p_posts);
  delete from app.vote_scope_receipts where post_id = any (p_posts);
  delete from app.vote_receipts where post_id = any (p_posts);
  delete from app.vote_counters where post_id = any (p_posts);
  delete from app_private.sealed_ballots where post_id = any (p_posts);
  delete from app.post_hubs where post_id = any (p_posts);
  delete from app_private.removed_posts where post_id = any (p_posts);
  delete from app_private.hidden_rows where kind = 'post' and row_id = any (p_posts);
  delete from app.posts where id = any (p_posts);
end
$$;

create or replace function app_private.delete_hub(p_hub_id uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_photo uuid;
begin
  select h.profile_asset_id into v_photo from app.hubs h where h.id = p_hub_id;
  delete from app.saved_discussions where hub_id = p_hub_id;
  delete from app.hub_discussion_stats where hub_id = p_hub_id;
  delete from app.hub_discussion_messages where hub_id = p_hub_id;
  delete from app.hub_discussions where hub_id = p_hub_id;
  delete from app.hub_join_requests where hub_id = p_hub_id;
  delete from app.hub_invitations where hub_id = p_hub_id;
  delete from app.hub_invite_links where hub_id = p_hub_id;
  delete from app.hub_memberships where hub_id = p_hub_id;
  delete from app.hub_activity where hub_id = p_hub_id;
  delete from app.activity_events where hub_id = p_hub_id;
  delete from app.vote_scope_receipts where hub_id = p_hub_id;
  delete from app.vote_counters where hub_id = p_hub_id;
  delete from app_private.sealed_ballots where hub_id = p_hub_id;
  delete from app.post_hubs where hub_id = p_hub_id;
  delete from app.notifications where hub_id = p_hub_id;
  delete from app.hubs where id = p_hub_id;
  if v_photo is not null then
    perform graphile_worker.add_job('delete_asset', json_build_object('assetId', v_photo), job_key => 'delete_asset:' || v_photo);
  end if;
end
$$;

-- Down Migration
create or replace function app_private.delete_posts(p_posts uuid[])
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  if cardinality(p_posts) = 0 then
    return;
  end if;
  delete from app.notifications n
    where n.post_id = any (p_posts) or n.comment_id in (select c.id from app.comments c where c.post_id = any (p_posts));
  delete from app.comments where post_id = any (p_posts);
  delete from app.saved_discussions s using app.hub_discussions d where d.id = s.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussion_stats s using app.hub_discussions d where d.id = s.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussion_messages m using app.hub_discussions d where d.id = m.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussions where post_id = any (p_posts);
  delete from app.saved_posts where post_id = any (p_posts);
  delete from app.post_shares where post_id = any (p_posts);
  delete from app.activity_events where post_id = any (p_posts);
  delete from app.vote_scope_receipts where post_id = any (p_posts);
  delete from app.vote_receipts where post_id = any (p_posts);
  delete from app.vote_counters where post_id = any (p_posts);
  delete from app.post_hubs where post_id = any (p_posts);
  delete from app_private.removed_posts where post_id = any (p_posts);
  delete from app_private.hidden_rows where kind = 'post' and row_id = any (p_posts);
  delete from app.posts where id = any (p_posts);
end
$$;

create or replace function app_private.delete_hub(p_hub_id uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_photo uuid;
begin
  select h.profile_asset_id into v_photo from app.hubs h where h.id = p_hub_id;
  delete from app.saved_discussions where hub_id = p_hub_id;
  delete from app.hub_discussion_stats where hub_id = p_hub_id;
  delete from app.hub_discussion_messages where hub_id = p_hub_id;
  delete from app.hub_discussions where hub_id = p_hub_id;
  delete from app.hub_join_requests where hub_id = p_hub_id;
  delete from app.hub_invitations where hub_id = p_hub_id;
  delete from app.hub_invite_links where hub_id = p_hub_id;
  delete from app.hub_memberships where hub_id = p_hub_id;
  delete from app.hub_activity where hub_id = p_hub_id;
  delete from app.activity_events where hub_id = p_hub_id;
  delete from app.vote_scope_receipts where hub_id = p_hub_id;
  delete from app.vote_counters where hub_id = p_hub_id;
  delete from app.post_hubs where hub_id = p_hub_id;
  delete from app.notifications where hub_id = p_hub_id;
  delete from app.hubs where id = p_hub_id;
  if v_photo is not null then
    perform graphile_worker.add_job('delete_asset', json_build_object('assetId', v_photo), job_key => 'delete_asset:' || v_photo);
  end if;
end
$$;
