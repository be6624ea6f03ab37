-- Up Migration
-- Feeds (spec 2.8, 6.3 rule 6; contract section 7 "Feeds"): Home, profile and hub feeds are read,
-- not pushed. A page is one keyset query over the events of the viewer's sources, each source an
-- index range scan bounded by the page size; one card per post frame, placed at the newest event
-- of that frame this viewer may see now; nothing is cached across requests. Eligibility uses the
-- policy helpers (app.post_visible_to, app.viewer_block_list, app.viewer_active_hub_ids,
-- app.viewer_co_member_ids, app.viewer_has_level, app.is_active_member), so the feeds and the
-- posts policy apply one rule.
--
-- Paging: a cursor holds the snapshot time of the first page and the (time, post id) of the last
-- card. Events after the snapshot are ignored on later pages, so posts added or bumped meanwhile
-- neither repeat nor push an unseen card past the cursor; a card shown on an earlier page is one
-- whose newest event lies between the cursor and the snapshot ("later" below), and is skipped.

-- Context names in tie order (contract section 7): on equal event times the smallest wins.
create type app.feed_context as enum (
  'own_post', 'joined_hub_post', 'shared_to_hub', 'followed_author', 'hub_co_member_author',
  'friend_interaction', 'default_feed_user');

-- One candidate card of a page.
create type app_private.feed_item as (post_id uuid, at timestamptz, context app.feed_context);

-- Every source below is a range scan of one of these (or of posts_author / post_hubs_hub /
-- activity_events_actor from earlier migrations), newest first.
create index activity_events_post_time on app.activity_events (post_id, created_at desc);
create index activity_events_hub_time on app.activity_events (hub_id, created_at desc) where hub_id is not null;
create index activity_events_actor_shares on app.activity_events (actor_id, created_at desc)
  where kind in ('post_shared_to_feed', 'post_shared_to_hub');

-- The Home sources of the viewer, by access level (spec 2.8):
--   below level 2 (guests, anonymous sessions): default feed users only;
--   level 2+: own posts, followed users, and what followed users interacted with;
--   level 4: also active hubs (targets and hub shares), co-members, and what co-members interacted
--   with (the hub helpers return nothing below level 4).
-- A viewer with no personal source (follows nobody, no post, no active hub) reads the default feed
-- users instead. Blocked users (either way) are no source.
create function app_private.home_sources(
  out viewer uuid, out own uuid, out blocks uuid[], out hubs uuid[], out followees uuid[], out co_members uuid[],
  out friends uuid[], out default_authors uuid[])
  language plpgsql stable
  set search_path = pg_catalog
  as $$
begin
  viewer := app.viewer_id();
  blocks := app.viewer_block_list();
  hubs := '{}';
  followees := '{}';
  co_members := '{}';
  default_authors := '{}';
  if app.viewer_has_level(2) then
    hubs := app.viewer_active_hub_ids();
    followees := array(select f.followee_id from app.follows f where f.follower_id = viewer and not (f.followee_id = any (blocks)));
    co_members := array(select m from unnest(app.viewer_co_member_ids()) m where m <> viewer and not (m = any (blocks)));
    if cardinality(followees) > 0 or cardinality(hubs) > 0
       or exists (select from app.posts p where p.author_id = viewer and p.deleted_at is null) then
      own := viewer;
    end if;
  end if;
  if own is null then
    default_authors := array(select d.user_id from app.default_feed_users d where not (d.user_id = any (blocks)));
  end if;
  friends := array(select distinct f from unnest(followees || co_members) f);
end
$$;

-- Whether a Home card of this post has an eligible event at or after the cursor (and not after
-- the snapshot): then an earlier page showed it (the cursor is the last card's own event). Only interactions and hub shares can follow a post's
-- own creation (hub targeting happens with it).
create function app_private.home_later(p_post_id uuid, p_visibility app.post_visibility, p_friends uuid[], p_hubs uuid[],
  p_blocks uuid[], p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid)
  returns boolean
  language sql stable
  as $$
  select exists (
    select from app.activity_events e
    where e.post_id = p_post_id and e.created_at >= p_after_at and e.created_at <= p_snapshot
      and (e.created_at, e.post_id) >= (p_after_at, p_after_id)
      and not (e.actor_id = any (p_blocks))
      and ((e.kind = 'post_shared_to_hub' and e.hub_id = any (p_hubs))
           or (e.kind <> 'post_shared_to_hub' and e.actor_id = any (p_friends) and p_visibility <> 'private_locked_hub')))
$$;

-- Home events before the cursor, at most p_window per source, newest first (src numbers the
-- source). These SQL functions carry no SET clause so that the planner inlines them.
create function app_private.home_events(p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, later boolean)
  language sql stable
  as $$
  select ev.src, ev.post_id, ev.at, ev.context,
         app_private.home_later(ev.post_id, ev.visibility, s.friends, s.hubs, s.blocks, p_snapshot, p_after_at, p_after_id)
  from app_private.home_sources() s
  cross join lateral (
    -- own posts, any visibility (a private_locked_hub post reaches its author as own_post)
    (select 1 as src, p.id as post_id, p.created_at as at, 'own_post'::app.feed_context as context, p.visibility
     from app.posts p
     where p.author_id = s.own and p.deleted_at is null
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    -- posts targeted to the viewer's active hubs (private_locked_hub included)
    (select 2, ph.post_id, ph.created_at, 'joined_hub_post', p.visibility
     from app.post_hubs ph join app.posts p on p.id = ph.post_id
     where ph.hub_id = any (s.hubs) and ph.kind = 'target' and app.post_visible_to(p, s.viewer, s.blocks)
       and ph.created_at <= p_after_at and (ph.created_at, ph.post_id) < (p_after_at, p_after_id)
     order by ph.created_at desc, ph.post_id desc limit p_window)
    union all
    -- shares into the viewer's active hubs (the only hub-scoped activity)
    (select 3, e.post_id, e.created_at, 'shared_to_hub', p.visibility
     from app.activity_events e join app.posts p on p.id = e.post_id
     where e.hub_id = any (s.hubs) and e.kind = 'post_shared_to_hub' and not (e.actor_id = any (s.blocks))
       and app.post_visible_to(p, s.viewer, s.blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window)
    union all
    -- followed users' posts (never private_locked_hub: those come through their hubs only)
    (select 4, p.id, p.created_at, 'followed_author', p.visibility
     from app.posts p
     where p.author_id = any (s.followees) and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, s.viewer, s.blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    -- co-members' public and public_hub posts
    (select 5, p.id, p.created_at, 'hub_co_member_author', p.visibility
     from app.posts p
     where p.author_id = any (s.co_members) and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, s.viewer, s.blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    -- public and public_hub posts followed users or co-members voted on, commented on, reposted or
    -- shared to their feed (global activity)
    (select 6, e.post_id, e.created_at, 'friend_interaction', p.visibility
     from app.activity_events e join app.posts p on p.id = e.post_id
     where e.actor_id = any (s.friends) and e.kind <> 'post_shared_to_hub'
       and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, s.viewer, s.blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window)
    union all
    -- default feed users' public posts (only when the viewer has no personal source)
    (select 7, p.id, p.created_at, 'default_feed_user', p.visibility
     from app.posts p
     where p.author_id = any (s.default_authors) and p.visibility = 'public' and app.post_visible_to(p, s.viewer, s.blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
  ) ev
$$;

-- Profile feed of p_subject: their original posts and reposts, and their repeatable feed and hub
-- shares (spec 2.8); never private_locked_hub. A hub share counts only for viewers who are active
-- members of that hub now. Cards carry no context (no share-by attribution).
create function app_private.profile_later(p_subject uuid, p_post_id uuid, p_hubs uuid[], p_snapshot timestamptz,
  p_after_at timestamptz, p_after_id uuid)
  returns boolean
  language sql stable
  as $$
  select exists (
    select from app.activity_events e
    where e.post_id = p_post_id and e.actor_id = p_subject and e.created_at >= p_after_at and e.created_at <= p_snapshot
      and (e.created_at, e.post_id) >= (p_after_at, p_after_id)
      and (e.kind = 'post_shared_to_feed' or (e.kind = 'post_shared_to_hub' and e.hub_id = any (p_hubs))))
$$;

create function app_private.profile_events(p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, later boolean)
  language sql stable
  as $$
  select ev.src, ev.post_id, ev.at, null::app.feed_context,
         app_private.profile_later(p_subject, ev.post_id, s.hubs, p_snapshot, p_after_at, p_after_id)
  from (select app.viewer_id() as viewer, app.viewer_block_list() as blocks, app.viewer_active_hub_ids() as hubs) s
  cross join lateral (
    (select 1 as src, p.id as post_id, p.created_at as at
     from app.posts p
     where p.author_id = p_subject and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, s.viewer, s.blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    (select 2, e.post_id, e.created_at
     from app.activity_events e join app.posts p on p.id = e.post_id
     where e.actor_id = p_subject and e.kind in ('post_shared_to_feed', 'post_shared_to_hub')
       and (e.kind = 'post_shared_to_feed' or e.hub_id = any (s.hubs))
       and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, s.viewer, s.blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window)
  ) ev
  where not (p_subject = any (s.blocks))
$$;

-- Hub feed of p_subject: posts targeted or shared into the hub, newest placement first.
create function app_private.hub_later(p_hub_id uuid, p_post_id uuid, p_blocks uuid[], p_snapshot timestamptz,
  p_after_at timestamptz, p_after_id uuid)
  returns boolean
  language sql stable
  as $$
  select exists (
    select from app.activity_events e
    where e.post_id = p_post_id and e.hub_id = p_hub_id and e.kind = 'post_shared_to_hub' and not (e.actor_id = any (p_blocks))
      and e.created_at >= p_after_at and e.created_at <= p_snapshot and (e.created_at, e.post_id) >= (p_after_at, p_after_id))
$$;

create function app_private.hub_events(p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, later boolean)
  language sql stable
  as $$
  select ev.src, ev.post_id, ev.at, ev.context,
         app_private.hub_later(p_subject, ev.post_id, s.blocks, p_snapshot, p_after_at, p_after_id)
  from (select app.viewer_id() as viewer, app.viewer_block_list() as blocks) s
  cross join lateral (
    (select 1 as src, ph.post_id, ph.created_at as at, 'joined_hub_post'::app.feed_context as context
     from app.post_hubs ph join app.posts p on p.id = ph.post_id
     where ph.hub_id = p_subject and ph.kind = 'target' and app.post_visible_to(p, s.viewer, s.blocks)
       and ph.created_at <= p_after_at and (ph.created_at, ph.post_id) < (p_after_at, p_after_id)
     order by ph.created_at desc, ph.post_id desc limit p_window)
    union all
    (select 2, e.post_id, e.created_at, 'shared_to_hub'
     from app.activity_events e join app.posts p on p.id = e.post_id
     where e.hub_id = p_subject and e.kind = 'post_shared_to_hub' and not (e.actor_id = any (s.blocks))
       and app.post_visible_to(p, s.viewer, s.blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window)
  ) ev
$$;

-- One page of a feed (p_feed: home, profile or hub): the newest event of each frame among the
-- sources' windows, skipping frames shown on earlier pages. A source that filled its window may
-- hold older events beyond it, so only candidates at or after the newest such window end are
-- certain; when fewer than a page are certain, the windows grow and the query runs again.
create function app_private.feed_page(p_feed text, p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz,
  p_after_id uuid, p_limit int)
  returns setof app_private.feed_item
  language plpgsql stable
  set search_path = pg_catalog
  as $$
declare
  v_window int := p_limit + 1;
  v_items app_private.feed_item[];
  v_truncated boolean;
begin
  loop
    execute format($q$
      with ev as materialized (select * from app_private.%I($1, $2, $3, $4, $5)),
      horizon as (
        select h.at, h.post_id from (
          select e.at, e.post_id, row_number() over (partition by e.src order by e.at desc, e.post_id desc) as n from ev e) h
        where h.n = $5
        order by h.at desc, h.post_id desc limit 1),
      newest as (
        select distinct on (e.post_id) e.post_id, e.at, e.context from ev e
        where not e.later
        order by e.post_id, e.at desc, e.context)
      select array(
               select row(n.post_id, n.at, n.context)::app_private.feed_item from newest n
               where not exists (select from horizon h where (n.at, n.post_id) < (h.at, h.post_id))
               order by n.at desc, n.post_id desc limit $6),
             exists (select from horizon)
      $q$, p_feed || '_events')
      into v_items, v_truncated
      using p_subject, p_snapshot, p_after_at, p_after_id, v_window, p_limit + 1;
    exit when not v_truncated or cardinality(v_items) > p_limit;
    v_window := v_window * 4;
  end loop;
  return query select * from unnest(v_items);
end
$$;

-- GET /posts (Home), for any viewer: p_limit + 1 cards after the cursor (p_after_at, p_after_id),
-- at or before the snapshot. The first page passes the snapshot itself and the largest uuid.
create function app.home_feed(p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_limit int)
  returns table (post_id uuid, at timestamptz, context app.feed_context)
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select * from app_private.feed_page('home', null, p_snapshot, p_after_at, p_after_id, p_limit) $$;

-- GET /users/{userId}/feed; the caller has checked that the viewer may see the user.
create function app.profile_feed(p_user_id uuid, p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_limit int)
  returns table (post_id uuid, at timestamptz, context app.feed_context)
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select * from app_private.feed_page('profile', p_user_id, p_snapshot, p_after_at, p_after_id, p_limit) $$;

-- GET /hubs/{hubId}/feed: active members only (HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED).
create function app.hub_feed(p_hub_id uuid, p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_limit int)
  returns table (post_id uuid, at timestamptz, context app.feed_context)
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.hubs h where h.id = p_hub_id) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  if not app.is_active_member(p_hub_id, app.viewer_id()) then
    perform app.fail('HUB_MEMBERSHIP_REQUIRED');
  end if;
  return query select i.post_id, i.at, i.context from app_private.feed_page('hub', p_hub_id, p_snapshot, p_after_at, p_after_id, p_limit) i;
end
$$;

grant execute on function app.home_feed(timestamptz, timestamptz, uuid, int),
  app.profile_feed(uuid, timestamptz, timestamptz, uuid, int) to app_anonymous;
grant execute on function app.hub_feed(uuid, timestamptz, timestamptz, uuid, int) to app_user;

-- Down Migration
drop function app.hub_feed(uuid, timestamptz, timestamptz, uuid, int);
drop function app.profile_feed(uuid, timestamptz, timestamptz, uuid, int);
drop function app.home_feed(timestamptz, timestamptz, uuid, int);
drop function app_private.feed_page(text, uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.hub_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.hub_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);
drop function app_private.profile_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.profile_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);
drop function app_private.home_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.home_later(uuid, app.post_visibility, uuid[], uuid[], uuid[], timestamptz, timestamptz, uuid);
drop function app_private.home_sources();
drop index app.activity_events_actor_shares;
drop index app.activity_events_hub_time;
drop index app.activity_events_post_time;
drop type app_private.feed_item;
drop type app.feed_context;
