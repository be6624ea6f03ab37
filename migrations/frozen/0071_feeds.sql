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

-- Every source below is a range scan of one of these, newest first. A source over a set of users (the
-- followed users, co-members) reads each user's range when the set is small, and the global time
-- ranges (posts_time, activity_events_time) filtered by the set when it is large: either way the
-- rows read are bounded by the page size and the set's share of all activity, not by the table.
-- Each index ends with the tie-breaker of the feed order (time, post id), so that a range scan
-- returns rows already in page order and stops after a window.
create index posts_time on app.posts (created_at desc, id desc);
create index posts_author_time on app.posts (author_id, created_at desc, id desc);
create index post_hubs_hub_targets on app.post_hubs (hub_id, created_at desc, post_id desc) where kind = 'target';
create index activity_events_time on app.activity_events (created_at desc, post_id desc);
create index activity_events_actor_time on app.activity_events (actor_id, created_at desc, post_id desc);
create index activity_events_post_time on app.activity_events (post_id, created_at desc);
create index activity_events_hub_time on app.activity_events (hub_id, created_at desc, post_id desc) where hub_id is not null;
create index activity_events_actor_shares on app.activity_events (actor_id, created_at desc, post_id desc)
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
-- the snapshot): then an earlier page showed it (the cursor is the last card's own event). Only
-- interactions and hub shares can follow a post's own creation (hub targeting happens with it).
-- The first page (its cursor id the largest uuid) has none.
create function app_private.home_later(p_post_id uuid, p_visibility app.post_visibility, p_friends uuid[], p_hubs uuid[],
  p_blocks uuid[], p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid)
  returns boolean
  language sql stable
  as $$
  select p_after_id <> 'ffffffff-ffff-ffff-ffff-ffffffffffff' and exists (
    select from app.activity_events e
    where e.post_id = p_post_id and e.created_at >= p_after_at and e.created_at <= p_snapshot
      and (e.created_at, e.post_id) >= (p_after_at, p_after_id)
      and not (e.actor_id = any (p_blocks))
      and ((e.kind = 'post_shared_to_hub' and e.hub_id = any (p_hubs))
           or (e.kind <> 'post_shared_to_hub' and e.actor_id = any (p_friends) and p_visibility <> 'private_locked_hub')))
$$;

-- Visible posts of a set of authors before the cursor, newest first, at most p_window: per author
-- when the set is small, else one scan of posts by time filtered by the set (the array test is
-- deliberately not indexable, so the planner keeps the time order). The unused branch is skipped
-- as a one-time filter.
create function app_private.posts_by_authors(p_authors uuid[], p_visibilities app.post_visibility[], p_viewer uuid,
  p_blocks uuid[], p_after_at timestamptz, p_after_id uuid, p_window int)
  returns table (post_id uuid, at timestamptz, visibility app.post_visibility)
  language sql stable
  as $$
  (select a.id, a.created_at, a.visibility
   from unnest(p_authors) author (id)
   cross join lateral (
     select p.id, p.created_at, p.visibility from app.posts p
     where p.author_id = author.id and p.visibility = any (p_visibilities) and app.post_visible_to(p, p_viewer, p_blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window) a
   where cardinality(p_authors) <= 100
   order by a.created_at desc, a.id desc limit p_window)
  union all
  (select p.id, p.created_at, p.visibility
   from app.posts p
   where cardinality(p_authors) > 100 and array[p.author_id] <@ p_authors
     and p.visibility = any (p_visibilities) and app.post_visible_to(p, p_viewer, p_blocks)
     and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
   order by p.created_at desc, p.id desc limit p_window)
$$;

-- Public and public_hub posts a set of users voted on, commented on, reposted or shared to their
-- feed, before the cursor, newest event first, at most p_window (per user, or by time for a large
-- set, as above).
create function app_private.interactions_of(p_actors uuid[], p_viewer uuid, p_blocks uuid[], p_after_at timestamptz,
  p_after_id uuid, p_window int)
  returns table (post_id uuid, at timestamptz, visibility app.post_visibility)
  language sql stable
  as $$
  (select a.post_id, a.created_at, a.visibility
   from unnest(p_actors) actor (id)
   cross join lateral (
     select e.post_id, e.created_at, p.visibility
     from app.activity_events e join app.posts p on p.id = e.post_id
     where e.actor_id = actor.id and e.kind <> 'post_shared_to_hub'
       and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, p_viewer, p_blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window) a
   where cardinality(p_actors) <= 100
   order by a.created_at desc, a.post_id desc limit p_window)
  union all
  (select e.post_id, e.created_at, p.visibility
   from app.activity_events e join app.posts p on p.id = e.post_id
   where cardinality(p_actors) > 100 and array[e.actor_id] <@ p_actors and e.kind <> 'post_shared_to_hub'
     and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, p_viewer, p_blocks)
     and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
   order by e.created_at desc, e.post_id desc limit p_window)
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
    -- posts targeted to the viewer's active hubs (private_locked_hub included), per hub
    (select 2, t.post_id, t.created_at, 'joined_hub_post', t.visibility
     from unnest(s.hubs) hub (id)
     cross join lateral (
       select ph.post_id, ph.created_at, p.visibility
       from app.post_hubs ph join app.posts p on p.id = ph.post_id
       where ph.hub_id = hub.id and ph.kind = 'target' and app.post_visible_to(p, s.viewer, s.blocks)
         and ph.created_at <= p_after_at and (ph.created_at, ph.post_id) < (p_after_at, p_after_id)
       order by ph.created_at desc, ph.post_id desc limit p_window) t
     order by t.created_at desc, t.post_id desc limit p_window)
    union all
    -- shares into the viewer's active hubs (the only hub-scoped activity), per hub
    (select 3, h.post_id, h.created_at, 'shared_to_hub', h.visibility
     from unnest(s.hubs) hub (id)
     cross join lateral (
       select e.post_id, e.created_at, p.visibility
       from app.activity_events e join app.posts p on p.id = e.post_id
       where e.hub_id = hub.id and e.kind = 'post_shared_to_hub' and not (e.actor_id = any (s.blocks))
         and app.post_visible_to(p, s.viewer, s.blocks)
         and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
       order by e.created_at desc, e.post_id desc limit p_window) h
     order by h.created_at desc, h.post_id desc limit p_window)
    union all
    -- followed users' posts (never private_locked_hub: those come through their hubs only)
    (select 4, f.post_id, f.at, 'followed_author', f.visibility
     from app_private.posts_by_authors(s.followees, '{public,public_hub}', s.viewer, s.blocks, p_after_at, p_after_id, p_window) f)
    union all
    -- co-members' public and public_hub posts
    (select 5, c.post_id, c.at, 'hub_co_member_author', c.visibility
     from app_private.posts_by_authors(s.co_members, '{public,public_hub}', s.viewer, s.blocks, p_after_at, p_after_id, p_window) c)
    union all
    -- public and public_hub posts followed users or co-members voted on, commented on, reposted or
    -- shared to their feed (global activity)
    (select 6, i.post_id, i.at, 'friend_interaction', i.visibility
     from app_private.interactions_of(s.friends, s.viewer, s.blocks, p_after_at, p_after_id, p_window) i)
    union all
    -- default feed users' public posts (only when the viewer has no personal source)
    (select 7, d.post_id, d.at, 'default_feed_user', d.visibility
     from app_private.posts_by_authors(s.default_authors, '{public}', s.viewer, s.blocks, p_after_at, p_after_id, p_window) d)
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
  select p_after_id <> 'ffffffff-ffff-ffff-ffff-ffffffffffff' and exists (
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
  select p_after_id <> 'ffffffff-ffff-ffff-ffff-ffffffffffff' and exists (
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
  -- The window is a parameter, so the planner cannot see how few rows each source needs and would
  -- fetch a source's whole range by bitmap and sort it; without bitmaps every source is an ordered
  -- index range scan that stops after its window.
  set enable_bitmapscan = off
  as $$
declare
  v_window int := p_limit + 1;
  v_items app_private.feed_item[];
  v_truncated boolean;
begin
  loop
    -- Static SQL, so the plan is prepared once per connection; the feed not asked for is skipped
    -- by a one-time filter.
    with ev as materialized (
      select * from app_private.home_events(p_subject, p_snapshot, p_after_at, p_after_id, v_window) where p_feed = 'home'
      union all
      select * from app_private.profile_events(p_subject, p_snapshot, p_after_at, p_after_id, v_window) where p_feed = 'profile'
      union all
      select * from app_private.hub_events(p_subject, p_snapshot, p_after_at, p_after_id, v_window) where p_feed = 'hub'),
    horizon as (
      select h.at, h.post_id from (
        select e.at, e.post_id, row_number() over (partition by e.src order by e.at desc, e.post_id desc) as n from ev e) h
      where h.n = v_window
      order by h.at desc, h.post_id desc limit 1),
    newest as (
      select distinct on (e.post_id) e.post_id, e.at, e.context from ev e
      where not e.later
      order by e.post_id, e.at desc, e.context)
    select array(
             select row(n.post_id, n.at, n.context)::app_private.feed_item from newest n
             where not exists (select from horizon h where (n.at, n.post_id) < (h.at, h.post_id))
             order by n.at desc, n.post_id desc limit p_limit + 1),
           exists (select from horizon)
      into v_items, v_truncated;
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
drop function app_private.interactions_of(uuid[], uuid, uuid[], timestamptz, uuid, int);
drop function app_private.posts_by_authors(uuid[], app.post_visibility[], uuid, uuid[], timestamptz, uuid, int);
drop function app_private.home_sources();
drop index app.activity_events_actor_shares;
drop index app.activity_events_hub_time;
drop index app.activity_events_post_time;
drop index app.activity_events_time;
drop index app.activity_events_actor_time;
drop index app.post_hubs_hub_targets;
drop index app.posts_author_time;
drop index app.posts_time;
drop type app_private.feed_item;
drop type app.feed_context;
