-- Posts: writing, deleting, reposting and sharing posts, their hub placements, who may see a post
-- (app.post_visible_to, app.can_see_post), saved posts. What app_user may do with posts and hub posts
-- is in the grants and policies at the end.
-- The locked-post rule, written once: a private_locked_hub post stays in its hubs. It reaches only
-- its author and the active members of its target hubs (app.post_reaches), and it is never reposted,
-- shared, counted in its author's posts, or listed in a follower's or a profile feed. A plain
-- immutable SQL function, inlined wherever it is used (policies and feed functions plan exactly
-- the comparison it holds). The TypeScript asks it (GET /posts/{postId}/share-link).
create or replace function app.post_stays_in_hubs(
  p_visibility app.post_visibility
)
  returns boolean
  language sql
  immutable
  as $$
  select
    p_visibility = 'private_locked_hub'
$$;

comment on function app.post_stays_in_hubs(app.post_visibility) is
  'The locked-post rule: whether a post of this visibility stays in its hubs (private_locked_hub): it reaches only its author and its target hubs'' active members (app.post_reaches), and is never reposted, shared, counted in user_posts or listed in a follower''s or profile feed. Used by app.post_reaches, app.create_repost, app.share_post_to_feed, app.share_post_to_hubs, app.cast_vote, app_private.repost_visible, app_private.counted_by(app.posts), the feed functions and GET /posts/{postId}/share-link.';

grant execute on function app.post_stays_in_hubs(app.post_visibility) to app_anonymous;

-- An active member (app_private.active_member, the one rule: a membership and access level 4,
-- Hub-ready; spec 2.3 rule 14, part 5) of a hub the post was targeted to. Asked only for
-- posts that stay in their hubs, of other authors (app.post_reaches asks for nothing else), never per
-- row of a public list; the level is read only for a user with a membership of a target hub.
create or replace function app.is_member_of_post_target(
  p_post_id uuid,
  p_user_id uuid
)
  returns boolean
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return exists (
    select from app.post_hubs ph
    cross join lateral app_private.active_member(ph.hub_id, p_user_id) m
    where ph.post_id = p_post_id and ph.kind = 'target' and m.active);
end
$$;

comment on function app.is_member_of_post_target(uuid, uuid) is
  'Whether a user is an active member (a membership, at access level 4) of a hub the post was targeted to (spec 2.3 rule 14, part 5; a security-definer probe, so the posts policy reads memberships the viewer may not). Used by app.post_reaches.';

grant execute on function app.is_member_of_post_target(uuid, uuid) to app_anonymous;

-- Whom a post reaches under the locked-post rule (app.post_stays_in_hubs): a post that stays in
-- its hubs, only its author and the active members of a hub it was targeted to
-- (app.is_member_of_post_target, asked for no other post); any other post, everyone. A plain SQL
-- function, inlined where app.post_visible_to is.
create or replace function app.post_reaches(
  p_post app.posts,
  p_viewer uuid
)
  returns boolean
  language sql
  stable
  as $$
  select
    not app.post_stays_in_hubs(p_post.visibility)
    or p_post.author_id = p_viewer
    or app.is_member_of_post_target(p_post.id, p_viewer)
$$;

comment on function app.post_reaches(app.posts, uuid) is
  'Whether a post reaches a viewer under the locked-post rule (app.post_stays_in_hubs): a post that stays in its hubs reaches its author and the active members of its target hubs only, any other post everyone. Used by app.post_visible_to and app.cast_vote (VOTE_NOT_ALLOWED).';

grant execute on function app.post_reaches(app.posts, uuid) to app_anonymous;

-- The one rule of post visibility (spec 2.3 rule 14, 2.8; contract section 5 blocks): not deleted,
-- the author not blocked with the viewer either way, and public or public_hub, or the viewer is the
-- author or an active member of a hub the post was targeted to (app.is_member_of_post_target: a
-- membership and access level 4; an account that falls below level 4, say by losing its phone
-- identity, keeps its membership rows but reads no locked post). A plain SQL function; the
-- planner does not inline it into the policy below, whose viewer argument is a subquery the body
-- uses twice, so the policy calls it per row (PostgreSQL 18, seen in its plans); app.can_see_post
-- applies it to one post inside stored functions.
create or replace function app.post_visible_to(
  p_post app.posts,
  p_viewer uuid,
  p_block_list uuid[]
)
  returns boolean
  language sql
  stable
  as $$
  select
    p_post.deleted_at is null
    and not(p_post.author_id = any(p_block_list))
    and app.post_reaches(p_post, p_viewer)
$$;

comment on function app.post_visible_to(app.posts, uuid, uuid[]) is
  'The one rule of post visibility: not deleted, the author not blocked with the viewer either way, and the post reaches the viewer (app.post_reaches: a post that stays in its hubs only its author and its target hubs'' members). Inlined into the policy posts_select_visible and the feed functions (GET /posts, GET /users/{userId}/feed, GET /hubs/{hubId}/feed); app.can_see_post applies it to one post.';

grant execute on function app.post_visible_to(app.posts, uuid, uuid[]) to app_anonymous;

create or replace function app.can_see_post(
  p_post_id uuid
)
  returns boolean
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return coalesce((select app.post_visible_to(p, app.viewer_id(), app.viewer_block_list()) from app.posts p where p.id = p_post_id), false);
end
$$;

comment on function app.can_see_post(uuid) is
  'Whether the viewer may see one post (app.post_visible_to), for stored functions that test a post by id: votes (app.cast_vote, app.vote_tally), app.delete_comment, discussion threads, post reports; and the policies saved_posts_insert_own and comments_select_visible. Functions that read the post itself call app_private.visible_post.';

grant execute on function app.can_see_post(uuid) to app_anonymous;

-- A post the viewer may see, by id, or POST_NOT_FOUND: what the functions acting on one post read
-- first (repost, shares, deletion, comments).
create or replace function app_private.visible_post(
  p_post_id uuid
)
  returns app.posts
  language plpgsql
  stable
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
begin
  select * into v_post from app.posts p where p.id = p_post_id and app.post_visible_to(p, app.viewer_id(), app.viewer_block_list());
  if not found then
    perform app.fail('POST_NOT_FOUND');
  end if;
  return v_post;
end
$$;

comment on function app_private.visible_post(uuid) is
  'A post the viewer may see (app.post_visible_to), by id, else POST_NOT_FOUND. Read first by app.create_repost, app.share_post_to_feed, app.share_post_to_hubs, app.delete_post and app.create_comment.';

-- The level a visibility needs, and the target hubs: public needs level 3 and no hubs; hub
-- visibilities need level 4 and 1-10 hubs where the author is an active member. The SQL form of
-- the audience table of server/posts/fields.ts (audiences), from which the request validator and
-- the OpenAPI document are made; test/sql/posts/post-policies.test.ts holds the two equal.
create or replace function app_private.check_post_audience(
  p_visibility app.post_visibility,
  p_hub_ids uuid[]
)
  returns void
  language plpgsql
  stable
  set search_path = pg_catalog
  as $$
declare
  v_hub uuid;
begin
  if p_visibility = 'public' then
    perform app.require_level(app.access_level('phone'));
    if coalesce(array_length(p_hub_ids, 1), 0) > 0 then
      perform app.fail('VALIDATION_FAILED');
    end if;
    return;
  end if;
  perform app.require_level(app.access_level('hub_ready'));
  if coalesce(array_length(p_hub_ids, 1), 0) not between 1 and 10 then
    perform app.fail('VALIDATION_FAILED');
  end if;
  foreach v_hub in array p_hub_ids loop
    perform app.require_hub_role(v_hub, '{member,admin,super_admin}');
  end loop;
end
$$;

comment on function app_private.check_post_audience(app.post_visibility, uuid[]) is
  'The audience rule of a new post: public needs access level 3 and no hubs; a hub visibility needs level 4 and 1 to 10 hubs where the author is an active member. Called by app.create_post and app.create_repost.';

-- Places a post in hubs (targeting at creation, or a share), opens each hub's discussion of it,
-- marks activity, and notifies each hub's active members except the actor and p_also_except
-- (mute applies in the fan-out). Returns nothing; placements that exist already are kept.
create or replace function app_private.place_post_in_hubs(
  p_post_id uuid,
  p_hub_ids uuid[],
  p_kind app.post_hub_kind,
  p_type app.notification_type,
  p_also_except uuid
)
  returns void
  language plpgsql
  volatile
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
    perform app_private.touch_hub_activity(array[v_hub], app.viewer_id());
    perform app_private.queue_hub_fanout(v_hub, p_type, 'members',
      array_remove(array[app.viewer_id(), p_also_except], null), null, p_post_id);
  end loop;
end
$$;

comment on function app_private.place_post_in_hubs(uuid, uuid[], app.post_hub_kind, app.notification_type, uuid) is
  'Places a post in hubs (its targets, or a share), opens or touches each hub''s discussion of it, records hub activity and queues the hub members'' fan-out (except the actor and p_also_except). Called by app.create_post, app.create_repost and app.share_post_to_hubs.';

-- POST /posts: an original frame, with its article when given. What it does, in order (the names
-- are the code's):
--   1. app_private.check_post_audience: the level the visibility needs (app.require_level) and the
--      target hubs where the author is an active member (app.require_hub_role);
--   2. app.articles: the article, when given, whose assets must be the viewer's post images
--      (app.post_assets_usable, else VALIDATION_FAILED);
--   3. app.posts: the post; when that insert ends, its triggers, which hold whoever inserts a post:
--      _300_seed_vote_counters (app_private.posts_seed_vote_counters: the global counter rows of a
--      slider post), then _500_count_insert (app_private.count_posts: the author's user_posts unless
--      the post stays in its hubs, app.post_stays_in_hubs);
--   4. app_private.place_post_in_hubs, hub by hub: app.post_hubs (its trigger
--      _300_seed_vote_counters: the hub's counter rows of a slider post), the hub's discussion of
--      the post (app.hub_discussions), app_private.touch_hub_activity (app.hub_activity's triggers
--      _300_hub_lists_insert and _300_hub_lists_update: the hub list), then
--      app_private.queue_hub_fanout: the hub_post_created fan-out job for the hub's members.
create or replace function app.create_post(
  p_article jsonb,
  p_thought text,
  p_slider_text text,
  p_left text,
  p_right text,
  p_visibility app.post_visibility,
  p_hub_ids uuid[]
)
  returns uuid
  language plpgsql
  volatile
  security definer
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

comment on function app.create_post(jsonb, text, text, text, text, app.post_visibility, uuid[]) is
  'Publishes an original frame, with its article when given (the article''s assets must be the viewer''s post images), for its audience. Called by POST /posts.';

grant execute on function app.create_post(jsonb, text, text, text, text, app.post_visibility, uuid[]) to app_user;

-- POST /posts/{postId}/reposts: a new frame with its own slider and pools, pointing at a visible
-- original that is neither a repost nor private_locked_hub (REPOST_NOT_ALLOWED).
-- Notifications: the source author (never the reposter) gets post_reposted: one global row for a
-- public or public_hub repost; for a private_locked_hub repost one hub-scoped row per target hub
-- where they are an active member (content mute honoured), and no global row. Target hub members
-- get post_shared_to_hub, except the reposter and the source author.
-- In order: app_private.visible_post and the repost rule (REPOST_NOT_ALLOWED),
-- app_private.check_post_audience, app.posts (its triggers _300_seed_vote_counters, then
-- _500_count_insert: user_posts and the source's post_reposts), app_private.record_activity
-- (post_reposted), app.notifications (their trigger _500_count_unread_insert), then
-- app_private.place_post_in_hubs as for app.create_post (post_shared_to_hub fan-out).
create or replace function app.create_repost(
  p_source_id uuid,
  p_thought text,
  p_slider_text text,
  p_left text,
  p_right text,
  p_visibility app.post_visibility,
  p_hub_ids uuid[]
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_source app.posts;
  v_repost uuid;
  v_notify_source boolean;
begin
  v_source := app_private.visible_post(p_source_id);
  if v_source.source_post_id is not null or app.post_stays_in_hubs(v_source.visibility) then
    perform app.fail('REPOST_NOT_ALLOWED');
  end if;
  perform app_private.check_post_audience(p_visibility, coalesce(p_hub_ids, '{}'));
  insert into app.posts (author_id, thought_text, slider_text, slider_left_label, slider_right_label, visibility, source_post_id)
    values (app.viewer_id(), p_thought, p_slider_text, p_left, p_right, p_visibility, p_source_id)
    returning id into v_repost;
  perform app_private.record_activity(p_source_id, 'post_reposted');
  v_notify_source := v_source.author_id <> app.viewer_id();
  if v_notify_source and not app.post_stays_in_hubs(p_visibility) then
    insert into app.notifications (recipient_id, type, actor_id, post_id)
      values (v_source.author_id, 'post_reposted', app.viewer_id(), v_repost);
  elsif v_notify_source then
    insert into app.notifications (recipient_id, type, actor_id, post_id, hub_id)
      select v_source.author_id, 'post_reposted', app.viewer_id(), v_repost, m.hub_id
      from app.hub_memberships m
      where m.user_id = v_source.author_id and m.hub_id = any (p_hub_ids) and not app_private.content_mute_silences(m.content_muted, 'post_reposted')
        and app.is_active_member(m.hub_id, m.user_id);
  end if;
  perform app_private.place_post_in_hubs(v_repost, coalesce(p_hub_ids, '{}'), 'target', 'post_shared_to_hub', v_source.author_id);
  return v_repost;
end
$$;

comment on function app.create_repost(uuid, text, text, text, text, app.post_visibility, uuid[]) is
  'Reposts a visible original that is neither a repost nor private_locked_hub (REPOST_NOT_ALLOWED) as a new frame; notifies the source author (post_reposted) and the target hubs'' members (post_shared_to_hub). Called by POST /posts/{postId}/reposts.';

grant execute on function app.create_repost(uuid, text, text, text, text, app.post_visibility, uuid[]) to app_user;

-- POST /posts/{postId}/share/feed: a repeatable share event pointing at the exact frame given.
-- No new frame. The frame's author gets post_shared_to_feed (not for self-shares).
create or replace function app.share_post_to_feed(
  p_post_id uuid,
  out share_id uuid,
  out shared_at timestamptz
)
language plpgsql
volatile
security definer
set search_path = pg_catalog
as $$
declare
  v_post app.posts;
begin
  v_post := app_private.visible_post(p_post_id);
  if app.post_stays_in_hubs(v_post.visibility) then
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

comment on function app.share_post_to_feed(uuid) is
  'A repeatable share of a visible post to the viewer''s feed (not private_locked_hub: SHARE_NOT_ALLOWED), no new frame; the author is notified (post_shared_to_feed) unless sharing their own. Called by POST /posts/{postId}/share/feed.';

grant execute on function app.share_post_to_feed(uuid) to app_user;

-- POST /posts/{postId}/share/hubs: places an existing post into hubs the viewer is an active
-- member of (no new frame); not for private_locked_hub posts (SHARE_NOT_ALLOWED).
create or replace function app.share_post_to_hubs(
  p_post_id uuid,
  p_hub_ids uuid[]
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
  v_hub uuid;
begin
  v_post := app_private.visible_post(p_post_id);
  if app.post_stays_in_hubs(v_post.visibility) then
    perform app.fail('SHARE_NOT_ALLOWED');
  end if;
  foreach v_hub in array p_hub_ids loop
    perform app.require_hub_role(v_hub, '{member,admin,super_admin}');
    perform app_private.record_activity(p_post_id, 'post_shared_to_hub', v_hub);
  end loop;
  perform app_private.place_post_in_hubs(p_post_id, p_hub_ids, 'share', 'post_shared_to_hub', null);
end
$$;

comment on function app.share_post_to_hubs(uuid, uuid[]) is
  'Places a visible post into hubs the viewer is an active member of (not private_locked_hub: SHARE_NOT_ALLOWED), no new frame. Called by POST /posts/{postId}/share/hubs.';

grant execute on function app.share_post_to_hubs(uuid, uuid[]) to app_user;

-- DELETE /posts/{postId}: the author only (FORBIDDEN), a visible post only (POST_NOT_FOUND).
-- The post disappears everywhere (the policy hides deleted rows) and stops counting as a repost.
create or replace function app.delete_post(
  p_post_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
begin
  v_post := app_private.visible_post(p_post_id);
  if v_post.author_id <> app.viewer_id() then
    perform app.fail('FORBIDDEN');
  end if;
  update app.posts set deleted_at = now() where id = p_post_id;
end
$$;

comment on function app.delete_post(uuid) is
  'Deletes a visible post of the viewer''s (FORBIDDEN for anyone else''s): it disappears everywhere through the posts policy. Called by DELETE /posts/{postId}.';

grant execute on function app.delete_post(uuid) to app_user;

-- A missing repost (or a null id) fails closed.
create or replace function app_private.repost_row_visible(
  p_repost_id uuid,
  p_user_id uuid
)
  returns boolean
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    coalesce((
      select
        app_private.repost_visible(p, p_user_id)
      from app.posts p
      where
        p.id = p_repost_id), false)
$$;

comment on function app_private.repost_row_visible(uuid, uuid) is
  'The repost rule (app_private.repost_visible) for a repost by id; a missing repost fails closed. Used by app_private.scope_visible and app_private.unread_bucket (notification scopes).';

create or replace function app_private.merge_saved_posts(
  p_source uuid,
  p_target uuid
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  insert into app.saved_posts(user_id, post_id, saved_at)
  select
    p_target,
    s.post_id,
    s.saved_at
  from
    app.saved_posts s
  where
    s.user_id = p_source
  on conflict
    do nothing;
    delete from app.saved_posts
    where user_id = p_source;
$$;

comment on function app_private.merge_saved_posts(uuid, uuid) is
  'User merge step: the source account''s saved posts move to the target. Run by app_private.merge_user (listed in app_private.user_merge_steps).';

-- Rule 4 of spec 6.3 for one repost: a public or public_hub repost is global; a private_locked_hub
-- one (legacy rows) needs a Hub-ready active member of one of its current target hubs; a deleted
-- repost, or any other visibility, fails closed.
create or replace function app_private.repost_visible(
  p_repost app.posts,
  p_user_id uuid
)
  returns boolean
  language sql
  stable
  as $$
  select
    p_repost.deleted_at is null
    and case when app.post_stays_in_hubs(p_repost.visibility) then
      exists(
        select
        from
          app.post_hubs ph
        where
          ph.post_id = p_repost.id
          and ph.kind = 'target'
          and app.is_active_member(ph.hub_id, p_user_id))
    else
      p_repost.visibility is not null
    end
$$;

comment on function app_private.repost_visible(app.posts, uuid) is
  'Whether notifications about a repost are visible to a user: public and public_hub reposts to everyone, a private_locked_hub one to active members of its target hubs; a deleted repost fails closed. Used by app_private.repost_row_visible and the trigger function app_private.move_repost_unread.';

-- Whether p_user_id may see the rows of a scope now (p_scope: the hub for 'h', the repost for 'r').
create or replace function app_private.scope_visible(
  p_kind "char",
  p_scope uuid,
  p_user_id uuid
)
  returns boolean
  language sql
  stable
  as $$
  select
    case p_kind
    when 'h' then
      app.is_active_member(p_scope, p_user_id)
    when 'r' then
      app_private.repost_row_visible(p_scope, p_user_id)
    else
      true
    end
$$;

comment on function app_private.scope_visible("char", uuid, uuid) is
  'Whether a user may see the rows of a notification scope now (a hub: active membership; a repost: app_private.repost_row_visible). Used by app_private.notification_visible, app_private.unread_counts and app_private.notification_page_rows (GET /notifications, GET /notifications/unread-count, push badges).';

-- The triggers below add signed changes (+1 a row counted unread, -1 a row no longer counted)
-- grouped by user and bucket, in one statement, in key order (two fan-outs to overlapping members
-- take the counter rows' locks in the same order), into one random slot. Rows about a repost first
-- take a share lock on it, so that the repost's visibility cannot change between reading it for the
-- bucket and committing (app_private.move_repost_unread, below, moves only committed rows).
create or replace function app_private.lock_reposts(
  p_post_ids uuid[]
)
  returns void
  language sql
  volatile
  as $$
  select
  from
    app.posts p
  where
    p.id = any(p_post_ids)
  order by
    p.id for share
$$;

comment on function app_private.lock_reposts(uuid[]) is
  'Share-locks reposts, in id order, so a repost''s visibility cannot change between reading it for an unread bucket and committing. Called by app_private.count_unread (the unread counting triggers on app.notifications).';

-- Deletes posts with every row that refers to them (the account purge). The pending sealed ballots
-- (fewer than k, waiting for the tallier) live in app_private.sealed_ballots, which has no foreign
-- keys, so they are deleted here too (and with a deleted hub, app_private.delete_hub): a tallier
-- folding them later would write counters for a post or hub that does not exist.
create or replace function app_private.delete_posts(
  p_posts uuid[]
)
  returns void
  language plpgsql
  volatile
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

comment on function app_private.delete_posts(uuid[]) is
  'Deletes posts with everything that refers to them (notifications, comments, discussions, saves, shares, activity, vote rows and pending sealed ballots, placements). Called by app_private.purge_account_content (worker task purge_account).';

-- Internal GraphQL keeps the counts it showed, read from the counters. Posts, comments and hubs have
-- columns a user token may not read, so a function of the whole row (a computed field) would fail
-- for it: their counts come as views of their own, keyed like the row, whose rows are the rows the
-- caller may see (security_invoker: the table's policy decides): PostStat, CommentStat and HubStat
-- (HubDiscussionStat keeps the discussion counts, which stay in their rows: app.hub_discussion_stats).
-- (Each reads its counts in a lateral subquery: a view over two relations is printed alike by every
-- PostgreSQL major, which db/schema.sql's test compares.)
create or replace view app.post_stats with ( security_invoker = true
) as
select
  p.id as post_id,
  c.comment_count,
  c.repost_count
from
  app.posts p
  cross join lateral (
    select
      app.post_comment_count(
        p.id
) as comment_count,
      app.post_repost_count(
        p.id
) as repost_count) c;

comment on view app.post_stats is '@primaryKey post_id
@foreignKey (post_id) references app.posts (id)';

create policy articles_select_admin on app.articles
  for select to app_admin
    using (true);

comment on policy articles_select_admin on app.articles is 'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every article.';

-- Articles are read through their posts: visible when a visible post carries them.
create policy articles_select_visible on app.articles
  for select to app_anonymous
    using (exists (
      select
      from
        app.posts p
      where
        p.article_id = articles.id));

comment on policy articles_select_visible on app.articles is
  'An article is visible when a post the viewer can see carries it (the posts policy decides inside the subquery). Serves the cards of GET /posts/{postId}, the feeds and the saved posts.';

grant select on app.articles to app_admin;

grant select (id, kind, url, title, body, asset_ids) on app.articles to app_anonymous;

-- Hub placements of visible posts are visible to active members of that hub.
create policy post_hubs_select_members on app.post_hubs
  for select to app_user
    using (hub_id = any ((
      select
        app.viewer_active_hub_ids())::uuid[]));

comment on policy post_hubs_select_members on app.post_hubs is
  'A post''s hub placements are visible to the active members of that hub. Serves GET /posts/{postId}/vote/hubs and GET /posts/{postId}/vote/summary with a hubId.';

grant select (post_id, hub_id, kind, created_at) on app.post_hubs to app_user;

grant select (post_id, comment_count, repost_count) on app.post_stats to app_anonymous;

grant select (post_id, comment_count, repost_count) on app.post_stats to app_admin;

create policy posts_select_admin on app.posts
  for select to app_admin
    using (true);

comment on policy posts_select_admin on app.posts is
  'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every post, deleted ones too.';

-- Every read path (REST, GraphQL, SQL) sees posts through this policy.
create policy posts_select_visible on app.posts
  for select to app_anonymous
    using (app.post_visible_to(posts,(
      select
        app.viewer_id()),(
          select
            app.viewer_block_list())));

comment on policy posts_select_visible on app.posts is
  'Every read of posts (REST, GraphQL, web pages, SQL) sees them through app.post_visible_to: GET /posts/{postId}, the feeds, frames, saved posts and the share page /p/{postId}.';

grant select on app.posts to app_admin;

grant select (id, author_id, article_id, thought_text, slider_text, slider_left_label, slider_right_label, visibility, source_post_id,
  created_at) on app.posts to app_anonymous;

create policy saved_posts_delete_own on app.saved_posts
  for delete to app_user
    using (user_id =( select app.viewer_id()));

comment on policy saved_posts_delete_own on app.saved_posts is 'A user removes only their own bookmarks (DELETE /posts/{postId}/save).';

create policy saved_posts_insert_own on app.saved_posts
  for insert
    to app_user
    with check (user_id =( select app.viewer_id())
      and app.can_see_post(post_id));

comment on policy saved_posts_insert_own on app.saved_posts is
  'A user saves only for themselves, and only posts they can see (POST /posts/{postId}/save).';

-- A user reads and changes only their own bookmarks, and saves only posts they can see.
create policy saved_posts_select_own on app.saved_posts
  for select to app_user
    using (user_id =(
      select
        app.viewer_id()));

comment on policy saved_posts_select_own on app.saved_posts is
  'A user reads only their own bookmarks (GET /users/me/saved-posts, the saved flag of cards).';

grant delete on app.saved_posts to app_user;

grant select (user_id, post_id, saved_at) on app.saved_posts to app_user;

grant insert (user_id, post_id) on app.saved_posts to app_user;
