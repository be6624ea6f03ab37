-- Up Migration
-- Feed pages: the per-row tests run inside the page's plan, and the "shown on an earlier page" test
-- only as far as the page needs (issue 14, benchmark).
-- 1. 0140's probes (app_private.is_followee, app_private.is_co_member) and the shown-earlier tests
--    (app_private.home_later, profile_later, hub_later) were scalar SQL functions whose bodies hold an
--    EXISTS. PostgreSQL never inlines such a function, so each row a large-set source scanned paid a
--    function call with its own executor start (10-20 us): a big hub's member read some 800 posts
--    and 900 events per page at the 10x size, 26 of 35 ms. The shown-earlier tests are now
--    set-returning SQL functions used inside EXISTS, inlined into the page's plan. A large set
--    (more than 100 users) is now tested by membership in a hash of the set, built once per page
--    from one index range (app_private.followees_of, app_private.co_members_of: "x in (select ...)",
--    a hashed subplan): a page then costs the set's size once plus a hash lookup per scanned row,
--    where a probe per row made its cost grow with 1 / (the set's share of all activity), that is
--    with the database. A test that is the whole condition of a WHERE is written "(...) is true",
--    which keeps PostgreSQL from turning it into a join (a join reads the set's every post and
--    sorts them, where the scan by time stops after a window).
-- 2. The shown-earlier test ran for every candidate of every source (about 90-250 rows a page, each
--    reading the post's events since the cursor); most candidates never make the page. It now runs
--    on the candidates in page order and stops once the page is full.
-- 3. The viewer's context (id, block list, active hubs) is read once per page by app_private.feed_page
--    and handed to the sources and the test, instead of once by each.
-- The rules do not change and each stays in one function: who is followed (app.follows), who is a
-- co-member (a member of one of the viewer's active hubs other than the viewer:
-- app.viewer_co_member_ids()'s rule), which later event shows a card on an earlier page, and post
-- eligibility (app.post_visible_to, app.viewer_block_list, app.viewer_active_hub_ids).

-- The users p_viewer follows.
create function app_private.followees_of(p_viewer uuid)
  returns setof uuid
  language sql stable
  as $$ select f.followee_id from app.follows f where f.follower_id = p_viewer $$;

-- The co-members of p_viewer, whose active hubs are p_hubs (a user in several of them more than once).
create function app_private.co_members_of(p_hubs uuid[], p_viewer uuid)
  returns setof uuid
  language sql stable
  as $$ select m.user_id from app.hub_memberships m where m.hub_id = any (p_hubs) and m.user_id <> p_viewer $$;

drop function app_private.feed_page(text, uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.home_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.home_later(uuid, app.post_visibility, uuid, uuid[], uuid[], timestamptz, timestamptz, uuid);
drop function app_private.home_sources();
drop function app_private.is_co_member(uuid[], uuid, uuid);
drop function app_private.is_followee(uuid, uuid);
drop function app_private.profile_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.profile_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);
drop function app_private.hub_events(uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.hub_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);

-- The Home sources of the viewer (p_blocks, p_hubs: the viewer's block list and active hubs), by
-- access level (spec 2.8), as in 0140.
create function app_private.home_sources(p_viewer uuid, p_blocks uuid[], p_hubs uuid[],
  out own uuid, out followees uuid[], out many_followees boolean,
  out co_members uuid[], out many_co_members boolean, out friends uuid[], out default_authors uuid[])
  language plpgsql stable
  set search_path = pg_catalog
  as $$
begin
  followees := '{}';
  co_members := '{}';
  default_authors := '{}';
  if app.viewer_has_level(2) then
    followees := array(select f.followee_id from app.follows f where f.follower_id = p_viewer and not (f.followee_id = any (p_blocks)) limit 101);
    -- Membership rows, not users: at most 100 rows hold at most 100 users.
    co_members := array(select m.user_id from app.hub_memberships m
                        where m.hub_id = any (p_hubs) and m.user_id <> p_viewer and not (m.user_id = any (p_blocks)) limit 101);
    if cardinality(followees) > 0 or cardinality(p_hubs) > 0
       or exists (select from app.posts p where p.author_id = p_viewer and p.deleted_at is null) then
      own := p_viewer;
    end if;
  end if;
  many_followees := cardinality(followees) > 100;
  many_co_members := cardinality(co_members) > 100;
  if own is null then
    default_authors := array(select d.user_id from app.default_feed_users d where not (d.user_id = any (p_blocks)));
  end if;
  co_members := case when many_co_members then '{}' else array(select distinct m from unnest(co_members) m) end;
  followees := case when many_followees then '{}' else followees end;
  friends := case when many_followees or many_co_members then '{}' else array(select distinct f from unnest(followees || co_members) f) end;
end
$$;

-- The eligible events of a Home card at or after the cursor (and not after the snapshot): when
-- there is one, an earlier page showed the card (the cursor is the last card's own event). Only
-- interactions and hub shares can follow a post's own creation (hub targeting happens with it).
create function app_private.home_later(p_post_id uuid, p_visibility app.post_visibility, p_viewer uuid, p_hubs uuid[],
  p_blocks uuid[], p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid)
  returns setof app.activity_events
  language sql stable
  rows 1
  as $$
  select e.* from app.activity_events e
  where e.post_id = p_post_id and e.created_at >= p_after_at and e.created_at <= p_snapshot
    and (e.created_at, e.post_id) >= (p_after_at, p_after_id)
    and not (e.actor_id = any (p_blocks))
    and ((e.kind = 'post_shared_to_hub' and e.hub_id = any (p_hubs))
         or (e.kind <> 'post_shared_to_hub' and p_visibility <> 'private_locked_hub'
             and (e.actor_id in (select u from app_private.followees_of(p_viewer) u)
                  or e.actor_id in (select u from app_private.co_members_of(p_hubs, p_viewer) u))))
$$;

-- Home events before the cursor, at most p_window per source, newest first (src numbers the
-- source), as in 0140, with the post's visibility (for the shown-earlier test). A source over a set
-- of users has two branches, per user (small set) and by time with index probes (large set); the
-- unused one is skipped as a one-time filter.
create function app_private.home_events(p_viewer uuid, p_blocks uuid[], p_hubs uuid[], p_after_at timestamptz,
  p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, visibility app.post_visibility)
  language sql stable
  as $$
  select ev.*
  from app_private.home_sources(p_viewer, p_blocks, p_hubs) s
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
     from unnest(p_hubs) hub (id)
     cross join lateral (
       select ph.post_id, ph.created_at, p.visibility
       from app.post_hubs ph join app.posts p on p.id = ph.post_id
       where ph.hub_id = hub.id and ph.kind = 'target' and app.post_visible_to(p, p_viewer, p_blocks)
         and ph.created_at <= p_after_at and (ph.created_at, ph.post_id) < (p_after_at, p_after_id)
       order by ph.created_at desc, ph.post_id desc limit p_window) t
     order by t.created_at desc, t.post_id desc limit p_window)
    union all
    -- shares into the viewer's active hubs (the only hub-scoped activity), per hub
    (select 3, h.post_id, h.created_at, 'shared_to_hub', h.visibility
     from unnest(p_hubs) hub (id)
     cross join lateral (
       select e.post_id, e.created_at, p.visibility
       from app.activity_events e join app.posts p on p.id = e.post_id
       where e.hub_id = hub.id and e.kind = 'post_shared_to_hub' and not (e.actor_id = any (p_blocks))
         and app.post_visible_to(p, p_viewer, p_blocks)
         and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
       order by e.created_at desc, e.post_id desc limit p_window) h
     order by h.created_at desc, h.post_id desc limit p_window)
    union all
    -- followed users' posts (never private_locked_hub: those come through their hubs only)
    (select 4, f.post_id, f.at, 'followed_author', f.visibility
     from app_private.posts_by_authors(s.followees, '{public,public_hub}', p_viewer, p_blocks, p_after_at, p_after_id, p_window) f
     where not s.many_followees)
    union all
    (select 4, p.id, p.created_at, 'followed_author', p.visibility
     from app.posts p
     where s.many_followees and (p.author_id in (select u from app_private.followees_of(p_viewer) u)) is true
       and p.visibility in ('public', 'public_hub') and app.post_visible_to(p, p_viewer, p_blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    -- co-members' public and public_hub posts
    (select 5, c.post_id, c.at, 'hub_co_member_author', c.visibility
     from app_private.posts_by_authors(s.co_members, '{public,public_hub}', p_viewer, p_blocks, p_after_at, p_after_id, p_window) c
     where not s.many_co_members)
    union all
    (select 5, p.id, p.created_at, 'hub_co_member_author', p.visibility
     from app.posts p
     where s.many_co_members and (p.author_id in (select u from app_private.co_members_of(p_hubs, p_viewer) u)) is true
       and p.visibility in ('public', 'public_hub') and app.post_visible_to(p, p_viewer, p_blocks)
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
         and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, p_viewer, p_blocks)
         and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
       order by e.created_at desc, e.post_id desc limit p_window) a
     where not (s.many_followees or s.many_co_members)
     order by a.created_at desc, a.post_id desc limit p_window)
    union all
    (select 6, e.post_id, e.created_at, 'friend_interaction', p.visibility
     from app.activity_events e join app.posts p on p.id = e.post_id
     where (s.many_followees or s.many_co_members) and e.kind <> 'post_shared_to_hub' and not (e.actor_id = any (p_blocks))
       and (e.actor_id in (select u from app_private.followees_of(p_viewer) u)
            or e.actor_id in (select u from app_private.co_members_of(p_hubs, p_viewer) u))
       and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, p_viewer, p_blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window)
    union all
    -- default feed users' public posts (only when the viewer has no personal source)
    (select 7, d.post_id, d.at, 'default_feed_user', d.visibility
     from app_private.posts_by_authors(s.default_authors, '{public}', p_viewer, p_blocks, p_after_at, p_after_id, p_window) d)
  ) ev
$$;

-- Profile feed of p_subject (as in 0071): their original posts and reposts, and their repeatable
-- feed and hub shares (spec 2.8); never private_locked_hub. A hub share counts only for viewers who
-- are active members of that hub now (p_hubs). Cards carry no context (no share-by attribution).
create function app_private.profile_later(p_subject uuid, p_post_id uuid, p_hubs uuid[], p_snapshot timestamptz,
  p_after_at timestamptz, p_after_id uuid)
  returns setof app.activity_events
  language sql stable
  rows 1
  as $$
  select e.* from app.activity_events e
  where e.post_id = p_post_id and e.actor_id = p_subject and e.created_at >= p_after_at and e.created_at <= p_snapshot
    and (e.created_at, e.post_id) >= (p_after_at, p_after_id)
    and (e.kind = 'post_shared_to_feed' or (e.kind = 'post_shared_to_hub' and e.hub_id = any (p_hubs)))
$$;

create function app_private.profile_events(p_subject uuid, p_viewer uuid, p_blocks uuid[], p_hubs uuid[],
  p_after_at timestamptz, p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, visibility app.post_visibility)
  language sql stable
  as $$
  select ev.src, ev.post_id, ev.at, null::app.feed_context, ev.visibility
  from (
    (select 1 as src, p.id as post_id, p.created_at as at, p.visibility
     from app.posts p
     where p.author_id = p_subject and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, p_viewer, p_blocks)
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
    (select 2, e.post_id, e.created_at, p.visibility
     from app.activity_events e join app.posts p on p.id = e.post_id
     where e.actor_id = p_subject and e.kind in ('post_shared_to_feed', 'post_shared_to_hub')
       and (e.kind = 'post_shared_to_feed' or e.hub_id = any (p_hubs))
       and p.visibility <> 'private_locked_hub' and app.post_visible_to(p, p_viewer, p_blocks)
       and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
     order by e.created_at desc, e.post_id desc limit p_window)
  ) ev
  where not (p_subject = any (p_blocks))
$$;

-- Hub feed of p_subject (as in 0071): posts targeted or shared into the hub, newest placement first.
create function app_private.hub_later(p_hub_id uuid, p_post_id uuid, p_blocks uuid[], p_snapshot timestamptz,
  p_after_at timestamptz, p_after_id uuid)
  returns setof app.activity_events
  language sql stable
  rows 1
  as $$
  select e.* from app.activity_events e
  where e.post_id = p_post_id and e.hub_id = p_hub_id and e.kind = 'post_shared_to_hub' and not (e.actor_id = any (p_blocks))
    and e.created_at >= p_after_at and e.created_at <= p_snapshot and (e.created_at, e.post_id) >= (p_after_at, p_after_id)
$$;

create function app_private.hub_events(p_subject uuid, p_viewer uuid, p_blocks uuid[], p_after_at timestamptz,
  p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, visibility app.post_visibility)
  language sql stable
  as $$
  (select 1 as src, ph.post_id, ph.created_at as at, 'joined_hub_post'::app.feed_context as context, p.visibility
   from app.post_hubs ph join app.posts p on p.id = ph.post_id
   where ph.hub_id = p_subject and ph.kind = 'target' and app.post_visible_to(p, p_viewer, p_blocks)
     and ph.created_at <= p_after_at and (ph.created_at, ph.post_id) < (p_after_at, p_after_id)
   order by ph.created_at desc, ph.post_id desc limit p_window)
  union all
  (select 2, e.post_id, e.created_at, 'shared_to_hub', p.visibility
   from app.activity_events e join app.posts p on p.id = e.post_id
   where e.hub_id = p_subject and e.kind = 'post_shared_to_hub' and not (e.actor_id = any (p_blocks))
     and app.post_visible_to(p, p_viewer, p_blocks)
     and e.created_at <= p_after_at and (e.created_at, e.post_id) < (p_after_at, p_after_id)
   order by e.created_at desc, e.post_id desc limit p_window)
$$;

-- One page of a feed (p_feed: home, profile or hub): the newest event of each frame among the
-- sources' windows, skipping frames shown on earlier pages. A source that filled its window may
-- hold older events beyond it, so only candidates at or after the newest such window end are
-- certain; when fewer than a page are certain, the windows double and the query runs again (as in
-- 0140). The shown-earlier test runs last, on the certain candidates in page order, until the page
-- is full (the first page, its cursor id the largest uuid, skips it).
create function app_private.feed_page(p_feed text, p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz,
  p_after_id uuid, p_limit int)
  returns setof app_private.feed_item
  language plpgsql stable
  set search_path = pg_catalog
  -- The window is a parameter, so the planner cannot see how few rows each source needs and would
  -- fetch a source's whole range by bitmap and sort it; without bitmaps every source is an ordered
  -- index range scan that stops after its window.
  set enable_bitmapscan = off
  -- One generic plan per connection (a set's branch is chosen by a one-time filter at run time):
  -- planning the inlined query costs more than running it.
  set plan_cache_mode = force_generic_plan
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_blocks uuid[] := app.viewer_block_list();
  v_hubs uuid[] := app.viewer_active_hub_ids();
  v_first boolean := p_after_id = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
  v_window int := 2 * (p_limit + 1);
  v_items app_private.feed_item[];
  v_truncated boolean;
begin
  loop
    -- Static SQL, so the plan is prepared once per connection; the feeds not asked for are skipped
    -- by one-time filters.
    with ev as materialized (
      select * from app_private.home_events(v_viewer, v_blocks, v_hubs, p_after_at, p_after_id, v_window) where p_feed = 'home'
      union all
      select * from app_private.profile_events(p_subject, v_viewer, v_blocks, v_hubs, p_after_at, p_after_id, v_window) where p_feed = 'profile'
      union all
      select * from app_private.hub_events(p_subject, v_viewer, v_blocks, p_after_at, p_after_id, v_window) where p_feed = 'hub'),
    horizon as (
      select h.at, h.post_id from (
        select e.at, e.post_id, row_number() over (partition by e.src order by e.at desc, e.post_id desc) as n from ev e) h
      where h.n = v_window
      order by h.at desc, h.post_id desc limit 1),
    newest as (
      select distinct on (e.post_id) e.post_id, e.at, e.context, e.visibility from ev e
      order by e.post_id, e.at desc, e.context),
    -- In page order; "offset 0" keeps the shown-earlier test below out of this subquery, so that it
    -- runs row by row as the limit asks for rows.
    certain as (
      select n.* from newest n
      where not exists (select from horizon h where (n.at, n.post_id) < (h.at, h.post_id))
      order by n.at desc, n.post_id desc offset 0)
    select array(
             select row(c.post_id, c.at, c.context)::app_private.feed_item from certain c
             where v_first or not case p_feed
               when 'home' then exists (select from app_private.home_later(c.post_id, c.visibility, v_viewer, v_hubs, v_blocks,
                                                                            p_snapshot, p_after_at, p_after_id))
               when 'profile' then exists (select from app_private.profile_later(p_subject, c.post_id, v_hubs, p_snapshot, p_after_at, p_after_id))
               else exists (select from app_private.hub_later(p_subject, c.post_id, v_blocks, p_snapshot, p_after_at, p_after_id)) end
             limit p_limit + 1),
           exists (select from horizon)
      into v_items, v_truncated;
    exit when not v_truncated or cardinality(v_items) > p_limit;
    v_window := v_window * 2;
  end loop;
  return query select * from unnest(v_items);
end
$$;


-- Down Migration
drop function app_private.feed_page(text, uuid, timestamptz, timestamptz, uuid, int);
drop function app_private.hub_events(uuid, uuid, uuid[], timestamptz, uuid, int);
drop function app_private.hub_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);
drop function app_private.profile_events(uuid, uuid, uuid[], uuid[], timestamptz, uuid, int);
drop function app_private.profile_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);
drop function app_private.home_events(uuid, uuid[], uuid[], timestamptz, uuid, int);
drop function app_private.home_later(uuid, app.post_visibility, uuid, uuid[], uuid[], timestamptz, timestamptz, uuid);
drop function app_private.home_sources(uuid, uuid[], uuid[]);
drop function app_private.co_members_of(uuid[], uuid);
drop function app_private.followees_of(uuid);
-- 0071's profile and hub feed functions, 0140's Home functions and page.
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

create function app_private.is_followee(p_viewer uuid, p_user uuid)
  returns boolean
  language sql stable
  as $$ select exists (select from app.follows f where f.follower_id = p_viewer and f.followee_id = p_user) $$;

create function app_private.is_co_member(p_hubs uuid[], p_viewer uuid, p_user uuid)
  returns boolean
  language sql stable
  as $$ select p_user <> p_viewer and exists (select from app.hub_memberships m where m.user_id = p_user and m.hub_id = any (p_hubs)) $$;

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

create function app_private.home_events(p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz, p_after_id uuid, p_window int)
  returns table (src int, post_id uuid, at timestamptz, context app.feed_context, later boolean)
  language sql stable
  as $$
  select ev.src, ev.post_id, ev.at, ev.context,
         app_private.home_later(ev.post_id, ev.visibility, s.viewer, s.hubs, s.blocks, p_snapshot, p_after_at, p_after_id)
  from app_private.home_sources() s
  cross join lateral (
    (select 1 as src, p.id as post_id, p.created_at as at, 'own_post'::app.feed_context as context, p.visibility
     from app.posts p
     where p.author_id = s.own and p.deleted_at is null
       and p.created_at <= p_after_at and (p.created_at, p.id) < (p_after_at, p_after_id)
     order by p.created_at desc, p.id desc limit p_window)
    union all
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
    (select 7, d.post_id, d.at, 'default_feed_user', d.visibility
     from app_private.posts_by_authors(s.default_authors, '{public}', s.viewer, s.blocks, p_after_at, p_after_id, p_window) d)
  ) ev
$$;

create function app_private.feed_page(p_feed text, p_subject uuid, p_snapshot timestamptz, p_after_at timestamptz,
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
