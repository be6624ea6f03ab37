-- Up Migration
-- Home feed without reading the viewer's whole follow and co-member sets (issue 14, benchmark).
-- 0071 built arrays of all followed users (up to 5,000) and all co-members (up to 10,000 per hub)
-- on every request, and a large set's source tested each scanned row against the array (linear in
-- the set). Now the sets are read at most 101 rows deep, only to choose how a source is read: a
-- small set (at most 100 users) per user, as before; a large one by one scan of the global time
-- index in which each row's author or actor is tested by an index probe of app.follows or
-- app.hub_memberships (the viewer's active hubs, app.viewer_active_hub_ids()). The rules do not
-- change: a co-member is a member of one of the viewer's active hubs other than the viewer
-- (app.viewer_co_member_ids()), eligibility of every post is app.post_visible_to(...), blocked
-- users are no source, and everything is read at request time.

-- Whether p_viewer follows p_user (the followed-author source and friend interaction).
create function app_private.is_followee(p_viewer uuid, p_user uuid)
  returns boolean
  language sql stable
  as $$ select exists (select from app.follows f where f.follower_id = p_viewer and f.followee_id = p_user) $$;

-- Whether p_user is a co-member of p_viewer, whose active hubs are p_hubs: the per-user test of
-- app.viewer_co_member_ids() (the co-member source and friend interaction).
create function app_private.is_co_member(p_hubs uuid[], p_viewer uuid, p_user uuid)
  returns boolean
  language sql stable
  as $$ select p_user <> p_viewer and exists (select from app.hub_memberships m where m.user_id = p_user and m.hub_id = any (p_hubs)) $$;

drop function app_private.home_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.home_later(uuid, app.post_visibility, uuid[], uuid[], uuid[], timestamptz, timestamptz, uuid);
drop function app_private.interactions_of(uuid[], uuid, uuid[], timestamptz, uuid, int);
drop function app_private.home_sources();

-- The Home sources of the viewer, by access level (spec 2.8), as in 0071; followees and co_members
-- hold the whole set only when it has at most 100 users (many_followees, many_co_members say
-- otherwise), and friends (their union) only when both are small.
create function app_private.home_sources(
  out viewer uuid, out own uuid, out blocks uuid[], out hubs uuid[], out followees uuid[], out many_followees boolean,
  out co_members uuid[], out many_co_members boolean, out friends uuid[], out default_authors uuid[])
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
    followees := array(select f.followee_id from app.follows f where f.follower_id = viewer and not (f.followee_id = any (blocks)) limit 101);
    -- Membership rows, not users: at most 100 rows hold at most 100 users.
    co_members := array(select m.user_id from app.hub_memberships m
                        where m.hub_id = any (hubs) and m.user_id <> viewer and not (m.user_id = any (blocks)) limit 101);
    if cardinality(followees) > 0 or cardinality(hubs) > 0
       or exists (select from app.posts p where p.author_id = viewer and p.deleted_at is null) then
      own := viewer;
    end if;
  end if;
  many_followees := cardinality(followees) > 100;
  many_co_members := cardinality(co_members) > 100;
  if own is null then
    default_authors := array(select d.user_id from app.default_feed_users d where not (d.user_id = any (blocks)));
  end if;
  co_members := case when many_co_members then '{}' else array(select distinct m from unnest(co_members) m) end;
  followees := case when many_followees then '{}' else followees end;
  friends := case when many_followees or many_co_members then '{}' else array(select distinct f from unnest(followees || co_members) f) end;
end
$$;

-- Whether a Home card of this post has an eligible event at or after the cursor (as in 0071), the
-- actor tested as a friend by index probes.
create function app_private.home_later(p_post_id uuid, p_visibility app.post_visibility, p_viewer uuid, p_hubs uuid[],
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
           or (e.kind <> 'post_shared_to_hub' and p_visibility <> 'private_locked_hub'
               and (app_private.is_followee(p_viewer, e.actor_id) or app_private.is_co_member(p_hubs, p_viewer, e.actor_id)))))
$$;

-- Home events before the cursor, at most p_window per source, newest first (src numbers the
-- source), as in 0071. A source over a set of users has two branches, per user (small set) and by
-- time with index probes (large set); the unused one is skipped as a one-time filter.
create function app_private.home_events(p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, later boolean)
  language sql stable
  as $$
  select ev.src, ev.post_id, ev.at, ev.context,
         app_private.home_later(ev.post_id, ev.visibility, s.viewer, s.hubs, s.blocks, p_snapshot, p_after_at, p_after_id)
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
     from app_private.posts_by_authors(s.followees, '{public,public_hub}', s.viewer, s.blocks, p_after_at, p_after_id, p_window) f
     where not s.many_followees)
    union all
    (select 4, p.id, p.created_at, 'followed_author', p.visibility
     from app.posts p
     where s.many_followees and app_private.is_followee(s.viewer, p.author_id)
       and p.visibility in ('public', 'public_hub') and app.post_visible_to(p, s.viewer, s.blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    -- co-members' public and public_hub posts
    (select 5, c.post_id, c.at, 'hub_co_member_author', c.visibility
     from app_private.posts_by_authors(s.co_members, '{public,public_hub}', s.viewer, s.blocks, p_after_at, p_after_id, p_window) c
     where not s.many_co_members)
    union all
    (select 5, p.id, p.created_at, 'hub_co_member_author', p.visibility
     from app.posts p
     where s.many_co_members and app_private.is_co_member(s.hubs, s.viewer, p.author_id)
       and p.visibility in ('public', 'public_hub') and app.post_visible_to(p, s.viewer, s.blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    -- public and public_hub posts followed users or co-members voted on, commented on, reposted or
    -- shared to their feed (global activity): per friend, or by time when either set is large
    (select 6, a.post_id, a.created_at, 'friend_interaction', a.visibility
     from unnest(s.friends) actor (id)
     cross join lateral (
       select e.post_id, e.created_at, p.visibility
       from app.activity_events e join app.posts p on p.id = e.post_id
       where e.actor_id = actor.id and e.kind <> 'post_shared_to_hub'
         and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, s.viewer, s.blocks)
         and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
       order by e.created_at desc, e.post_id desc limit p_window) a
     where not (s.many_followees or s.many_co_members)
     order by a.created_at desc, a.post_id desc limit p_window)
    union all
    (select 6, e.post_id, e.created_at, 'friend_interaction', p.visibility
     from app.activity_events e join app.posts p on p.id = e.post_id
     where (s.many_followees or s.many_co_members) and e.kind <> 'post_shared_to_hub' and not (e.actor_id = any (s.blocks))
       and (app_private.is_followee(s.viewer, e.actor_id) or app_private.is_co_member(s.hubs, s.viewer, e.actor_id))
       and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, s.viewer, s.blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window)
    union all
    -- default feed users' public posts (only when the viewer has no personal source)
    (select 7, d.post_id, d.at, 'default_feed_user', d.visibility
     from app_private.posts_by_authors(s.default_authors, '{public}', s.viewer, s.blocks, p_after_at, p_after_id, p_window) d)
  ) ev
$$;

-- The first windows hold two pages' worth of rows per source. The densest source (often friends'
-- interactions) bounds the certain part of the candidates, and a window of one page of its rows
-- rarely holds a page of distinct frames (several friends interact with one post; frames shown on
-- earlier pages are skipped), so one-page windows nearly always ran twice, the second time four
-- times as deep. A window that is too small now doubles. The page's plan is now generic.
create or replace function app_private.feed_page(p_feed text, p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz,
  p_after_id uuid, p_limit int)
  returns setof app_private.feed_item
  language plpgsql stable
  set search_path = pg_catalog
  -- The window is a parameter, so the planner cannot see how few rows each source needs and would
  -- fetch a source's whole range by bitmap and sort it; without bitmaps every source is an ordered
  -- index range scan that stops after its window.
  set enable_bitmapscan = off
  -- Planning the static query (every source inlined) costs several times more than running it, and
  -- the plan cache kept choosing custom plans; the generic plan is index-driven for every viewer
  -- (a set's branch is chosen by a one-time filter at run time), so it is prepared once per connection.
  set plan_cache_mode = force_generic_plan
  as $$
declare
  v_window int := 2 * (p_limit + 1);
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
    v_window := v_window * 2;
  end loop;
  return query select * from unnest(v_items);
end
$$;


-- Down Migration
create or replace function app_private.feed_page(p_feed text, p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz,
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

drop function app_private.home_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.home_later(uuid, app.post_visibility, uuid, uuid[], uuid[], timestamptz, timestamptz, uuid);
drop function app_private.home_sources();
drop function app_private.is_co_member(uuid[], uuid, uuid);
drop function app_private.is_followee(uuid, uuid);
-- 0071's definitions.
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
