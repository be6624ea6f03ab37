-- Up Migration
-- Creating, reposting, sharing and deleting posts (spec 2.3, 6.1, 6.2; contract section 7).
-- Each function checks, writes and queues its notifications in one transaction.

-- Whether assets may illustrate a media article: completed post_image assets of the viewer.
create function app.post_assets_usable(p_asset_ids uuid[])
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_length(p_asset_ids, 1), 0) = (
    select count(*) from app.assets a
    where a.id = any (p_asset_ids) and a.owner_id = app.viewer_id() and a.purpose = 'post_image')
$$;

-- The level a visibility needs, and the target hubs: public needs level 3 and no hubs; hub
-- visibilities need level 4 and 1-10 hubs where the author is an active member.
create function app_private.check_post_audience(p_visibility app.post_visibility, p_hub_ids uuid[])
  returns void
  language plpgsql stable
  set search_path = pg_catalog
  as $$
declare
  v_hub uuid;
begin
  if p_visibility = 'public' then
    perform app.require_level(3);
    if coalesce(array_length(p_hub_ids, 1), 0) > 0 then
      perform app.fail('VALIDATION_FAILED');
    end if;
    return;
  end if;
  perform app.require_level(4);
  if coalesce(array_length(p_hub_ids, 1), 0) not between 1 and 10 then
    perform app.fail('VALIDATION_FAILED');
  end if;
  foreach v_hub in array p_hub_ids loop
    perform app.require_hub_role(v_hub, '{member,admin,super_admin}');
  end loop;
end
$$;

-- Places a post in hubs (targeting at creation, or a share), opens each hub's discussion of it,
-- marks activity, and notifies each hub's active members except the actor and p_also_except
-- (mute applies in the fan-out). Returns nothing; placements that exist already are kept.
create function app_private.place_post_in_hubs(p_post_id uuid, p_hub_ids uuid[], p_kind app.post_hub_kind,
  p_type app.notification_type, p_also_except uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_hub uuid;
begin
  foreach v_hub in array p_hub_ids loop
    insert into app.post_hubs (post_id, hub_id, kind, added_by) values (p_post_id, v_hub, p_kind, app.viewer_id())
      on conflict do nothing;
    insert into app.hub_discussions (hub_id, post_id) values (v_hub, p_post_id)
      on conflict (hub_id, post_id) do update set last_activity_at = now();
    perform app_private.touch_hub_activity(v_hub, app.viewer_id());
    perform app_private.queue_hub_fanout(v_hub, p_type, 'members',
      array_remove(array[app.viewer_id(), p_also_except], null), null, p_post_id);
  end loop;
end
$$;

-- POST /posts: an original frame, with its article when given.
create function app.create_post(p_article jsonb, p_thought text, p_slider_text text, p_left text, p_right text,
  p_visibility app.post_visibility, p_hub_ids uuid[])
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_article uuid;
  v_post uuid;
begin
  perform app_private.check_post_audience(p_visibility, coalesce(p_hub_ids, '{}'));
  if p_article is not null then
    if not app.post_assets_usable(coalesce(array(select jsonb_array_elements_text(p_article -> 'assetIds'))::uuid[], '{}')) then
      perform app.fail('VALIDATION_FAILED');
    end if;
    insert into app.articles (kind, url, title, body, asset_ids, created_by)
      values ((p_article ->> 'kind')::app.article_kind, p_article ->> 'url', p_article ->> 'title', p_article ->> 'text',
              coalesce(array(select jsonb_array_elements_text(p_article -> 'assetIds'))::uuid[], '{}'), app.viewer_id())
      returning id into v_article;
  end if;
  insert into app.posts (author_id, article_id, thought_text, slider_text, slider_left_label, slider_right_label, visibility)
    values (app.viewer_id(), v_article, p_thought, p_slider_text, p_left, p_right, p_visibility)
    returning id into v_post;
  perform app_private.place_post_in_hubs(v_post, coalesce(p_hub_ids, '{}'), 'target', 'hub_post_created', null);
  return v_post;
end
$$;

-- POST /posts/{postId}/reposts: a new frame with its own slider and pools, pointing at a visible
-- original that is neither a repost nor private_locked_hub (REPOST_NOT_ALLOWED).
-- Notifications: the source author (never the reposter) gets post_reposted: one global row for a
-- public or public_hub repost; for a private_locked_hub repost one hub-scoped row per target hub
-- where they are an active member (content mute honoured), and no global row. Target hub members
-- get post_shared_to_hub, except the reposter and the source author.
create function app.create_repost(p_source_id uuid, p_thought text, p_slider_text text, p_left text, p_right text,
  p_visibility app.post_visibility, p_hub_ids uuid[])
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_source app.posts;
  v_repost uuid;
  v_notify_source boolean;
begin
  select * into v_source from app.posts p where p.id = p_source_id;
  if not found or not app.can_see_post(p_source_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if v_source.source_post_id is not null or v_source.visibility = 'private_locked_hub' then
    perform app.fail('REPOST_NOT_ALLOWED');
  end if;
  perform app_private.check_post_audience(p_visibility, coalesce(p_hub_ids, '{}'));
  insert into app.posts (author_id, thought_text, slider_text, slider_left_label, slider_right_label, visibility, source_post_id)
    values (app.viewer_id(), p_thought, p_slider_text, p_left, p_right, p_visibility, p_source_id)
    returning id into v_repost;
  perform app_private.record_activity(p_source_id, 'post_reposted');
  v_notify_source := v_source.author_id <> app.viewer_id();
  if v_notify_source and p_visibility <> 'private_locked_hub' then
    insert into app.notifications (recipient_id, type, actor_id, post_id)
      values (v_source.author_id, 'post_reposted', app.viewer_id(), v_repost);
  elsif v_notify_source then
    insert into app.notifications (recipient_id, type, actor_id, post_id, hub_id)
      select v_source.author_id, 'post_reposted', app.viewer_id(), v_repost, m.hub_id
      from app.hub_memberships m
      where m.user_id = v_source.author_id and m.hub_id = any (p_hub_ids) and not m.content_muted
        and app.is_active_member(m.hub_id, m.user_id);
  end if;
  perform app_private.place_post_in_hubs(v_repost, coalesce(p_hub_ids, '{}'), 'target', 'post_shared_to_hub', v_source.author_id);
  return v_repost;
end
$$;

-- POST /posts/{postId}/share/feed: a repeatable share event pointing at the exact frame given.
-- No new frame. The frame's author gets post_shared_to_feed (not for self-shares).
create function app.share_post_to_feed(p_post_id uuid, out share_id uuid, out shared_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
begin
  select * into v_post from app.posts p where p.id = p_post_id;
  if not found or not app.can_see_post(p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if v_post.visibility = 'private_locked_hub' then
    perform app.fail('SHARE_NOT_ALLOWED');
  end if;
  insert into app.post_shares (post_id, user_id) values (p_post_id, app.viewer_id()) returning id, created_at into share_id, shared_at;
  perform app_private.record_activity(p_post_id, 'post_shared_to_feed');
  if v_post.author_id <> app.viewer_id() then
    insert into app.notifications (recipient_id, type, actor_id, post_id)
      values (v_post.author_id, 'post_shared_to_feed', app.viewer_id(), p_post_id);
  end if;
end
$$;

-- POST /posts/{postId}/share/hubs: places an existing post into hubs the viewer is an active
-- member of (no new frame); not for private_locked_hub posts (SHARE_NOT_ALLOWED).
create function app.share_post_to_hubs(p_post_id uuid, p_hub_ids uuid[])
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
  v_hub uuid;
begin
  select * into v_post from app.posts p where p.id = p_post_id;
  if not found or not app.can_see_post(p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if v_post.visibility = 'private_locked_hub' then
    perform app.fail('SHARE_NOT_ALLOWED');
  end if;
  foreach v_hub in array p_hub_ids loop
    perform app.require_hub_role(v_hub, '{member,admin,super_admin}');
    perform app_private.record_activity(p_post_id, 'post_shared_to_hub', v_hub);
  end loop;
  perform app_private.place_post_in_hubs(p_post_id, p_hub_ids, 'share', 'post_shared_to_hub', null);
end
$$;

-- DELETE /posts/{postId}: the author only (FORBIDDEN), a visible post only (POST_NOT_FOUND).
-- The post disappears everywhere (the policy hides deleted rows) and stops counting as a repost.
create function app.delete_post(p_post_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
begin
  select * into v_post from app.posts p where p.id = p_post_id;
  if not found or not app.can_see_post(p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  if v_post.author_id <> app.viewer_id() then
    perform app.fail('FORBIDDEN');
  end if;
  update app.posts set deleted_at = now() where id = p_post_id;
end
$$;

grant execute on function app.post_assets_usable(uuid[]),
  app.create_post(jsonb, text, text, text, text, app.post_visibility, uuid[]),
  app.create_repost(uuid, text, text, text, text, app.post_visibility, uuid[]),
  app.share_post_to_feed(uuid), app.share_post_to_hubs(uuid, uuid[]), app.delete_post(uuid) to app_user;

-- Down Migration
drop function app.delete_post(uuid);
drop function app.share_post_to_hubs(uuid, uuid[]);
drop function app.share_post_to_feed(uuid);
drop function app.create_repost(uuid, text, text, text, text, app.post_visibility, uuid[]);
drop function app.create_post(jsonb, text, text, text, text, app.post_visibility, uuid[]);
drop function app_private.place_post_in_hubs(uuid, uuid[], app.post_hub_kind, app.notification_type, uuid);
drop function app_private.check_post_audience(app.post_visibility, uuid[]);
drop function app.post_assets_usable(uuid[]);
