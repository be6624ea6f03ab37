-- Feeds: the home, hub and profile feeds (pages of posts read under the viewer's rules) and the
-- default feed users.
-- Adds a default feed user by handle (a no-op when already one); returns the row.
create or replace function app.add_default_feed_user(
  username text
)
  returns app.default_feed_users
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_user uuid := app.user_id_by_handle(add_default_feed_user.username);
  v_row app.default_feed_users;
begin
  insert into app.default_feed_users (user_id) values (v_user) on conflict do nothing;
  select * into v_row from app.default_feed_users d where d.user_id = v_user;
  return v_row;
end
$$;

comment on function app.add_default_feed_user(text) is
  'Makes a user (by handle) a default feed user, whose public posts fill the Home of a viewer with no personal source. Admin only: `npm run admin -- default-feed-users add` and internal GraphQL (app_admin).';

grant execute on function app.add_default_feed_user(text) to app_admin;

-- Removes a default feed user by handle; true when one was removed.
create or replace function app.remove_default_feed_user(
  username text
)
  returns boolean
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  delete from app.default_feed_users d where d.user_id = app.user_id_by_handle(remove_default_feed_user.username);
  return found;
end
$$;

comment on function app.remove_default_feed_user(text) is
  'Takes a user (by handle) off the default feed users; true when one was removed. Admin only: `npm run admin -- default-feed-users remove` and internal GraphQL (app_admin).';

grant execute on function app.remove_default_feed_user(text) to app_admin;

-- The Home sources of the viewer (p_blocks, p_hubs: the viewer's block list and active hubs), by
-- access level (spec 2.8).
create or replace function app_private.home_sources(
  p_viewer uuid,
  p_blocks uuid[],
  p_hubs uuid[],
  out own uuid,
  out followees uuid[],
  out many_followees boolean,
  out co_members uuid[],
  out many_co_members boolean,
  out friends uuid[],
  out default_authors uuid[]
)
language plpgsql
stable
set search_path = pg_catalog
as $$
begin
  followees := '{}';
  co_members := '{}';
  default_authors := '{}';
  if app.viewer_has_level(app.access_level('profile')) then
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

comment on function app_private.home_sources(uuid, uuid[], uuid[]) is
  'The viewer''s Home sources by access level (own posts, followees, co-members, active hubs, default feed users when there is no personal source), with the size switches the readers use. Read by app_private.home_events (GET /posts).';

-- The eligible events of a Home card at or after the cursor (and not after the snapshot): when
-- there is one, an earlier page showed the card (the cursor is the last card's own event). Only
-- interactions and hub shares can follow a post's own creation (hub targeting happens with it).
create or replace function app_private.home_card_events_since_cursor(
  p_post_id uuid,
  p_visibility app.post_visibility,
  p_viewer uuid,
  p_hubs uuid[],
  p_blocks uuid[],
  p_snapshot timestamptz,
  p_after_at timestamptz,
  p_after_id uuid
)
  returns setof app.activity_events
  language sql
  stable rows 1
  as $$
  select
    e.*
  from
    app.activity_events e
  where
    e.post_id = p_post_id
    and e.created_at >= p_after_at
    and e.created_at <= p_snapshot
    and(e.created_at,
      e.post_id) >=(p_after_at,
      p_after_id)
    and not(e.actor_id = any(p_blocks))
    and((e.kind = 'post_shared_to_hub'
        and e.hub_id = any(p_hubs))
      or(e.kind <> 'post_shared_to_hub'
        and not app.post_stays_in_hubs(p_visibility)
        and(e.actor_id in(
            select
              u
            from
              app_private.followees_of(p_viewer) u)
            or e.actor_id in(
              select
                u
              from
                app_private.co_members_of(p_hubs, p_viewer) u))))
$$;

comment on function app_private.home_card_events_since_cursor(uuid, app.post_visibility, uuid, uuid[], uuid[], timestamp with time zone,
  timestamp with time zone, uuid) is 'The events of one Home card at or after the cursor and not after the snapshot: when there is one, an earlier page showed the card. Used by app_private.feed_page for GET /posts.';

-- Visible posts of a set of authors before the cursor, newest first, at most p_window: per author
-- when the set is small, else one scan of posts by time filtered by the set (the array test is
-- deliberately not indexable, so the planner keeps the time order). The unused branch is skipped
-- as a one-time filter.
create or replace function app_private.posts_by_authors(
  p_authors uuid[],
  p_visibilities app.post_visibility[],
  p_viewer uuid,
  p_blocks uuid[],
  p_after_at timestamptz,
  p_after_id uuid,
  p_window int
)
  returns table(
      post_id uuid,
      at timestamptz,
      visibility app.post_visibility
)
  language sql
  stable
  as $$
(
    select
      a.id,
      a.created_at,
      a.visibility
    from
      unnest(p_authors) author(id)
      cross join lateral(
        select
          p.id,
          p.created_at,
          p.visibility
        from
          app.posts p
        where
          p.author_id = author.id
          and p.visibility = any(p_visibilities)
          and app.post_visible_to(p, p_viewer, p_blocks)
          and p.created_at <= p_after_at
          and(p.created_at,
            p.id) <(p_after_at,
            p_after_id)
        order by
          p.created_at desc,
          p.id desc
        limit p_window) a
    where
      cardinality(p_authors) <= 100
    order by
      a.created_at desc,
      a.id desc
    limit p_window)
union all(
  select
    p.id,
    p.created_at,
    p.visibility
  from
    app.posts p
  where
    cardinality(p_authors) > 100
    and array[p.author_id] <@ p_authors
    and p.visibility = any(p_visibilities)
    and app.post_visible_to(p, p_viewer, p_blocks)
    and p.created_at <= p_after_at
    and(p.created_at,
      p.id) <(p_after_at,
      p_after_id)
  order by
    p.created_at desc,
    p.id desc
  limit p_window)
$$;

comment on function app_private.posts_by_authors(uuid[], app.post_visibility[], uuid, uuid[], timestamp with time zone, uuid, integer) is
  'Visible posts of a set of authors before the cursor, newest first, at most p_window (per author for a small set, one time-ordered scan for a large one). Used by app_private.home_events (GET /posts).';

-- Home events before the cursor, at most p_window per source, newest first (src numbers the
-- source), with the post's visibility (for the shown-earlier test). A source over a set
-- of users has two branches, per user (small set) and by time with index probes (large set); the
-- unused one is skipped as a one-time filter.
create or replace function app_private.home_events(
  p_viewer uuid,
  p_blocks uuid[],
  p_hubs uuid[],
  p_after_at timestamptz,
  p_after_id uuid,
  p_window int
)
  returns table(
      src int,
      post_id uuid,
      at timestamptz,
      context app.feed_context,
      visibility app.post_visibility
)
  language sql
  stable
  as $$
  select
    ev.*
  from
    app_private.home_sources(p_viewer, p_blocks, p_hubs) s
  cross join lateral(
    -- own posts, any visibility (a private_locked_hub post reaches its author as own_post)
(
      select
        1 as src,
        p.id as post_id,
        p.created_at as at,
        'own_post'::app.feed_context as context,
        p.visibility
      from
        app.posts p
      where
        p.author_id = s.own
        and p.deleted_at is null
        and p.created_at <= p_after_at
        and(p.created_at,
          p.id) <(p_after_at,
          p_after_id)
      order by
        p.created_at desc,
        p.id desc
      limit p_window)
  union all
  -- posts targeted to the viewer's active hubs (private_locked_hub included), per hub
(
    select
      2,
      t.post_id,
      t.created_at,
      'joined_hub_post',
      t.visibility
    from
      unnest(p_hubs) hub(id)
      cross join lateral(
        select
          ph.post_id,
          ph.created_at,
          p.visibility
        from
          app.post_hubs ph
          join app.posts p on p.id = ph.post_id
        where
          ph.hub_id = hub.id
          and ph.kind = 'target'
          and app.post_visible_to(p, p_viewer, p_blocks)
          and ph.created_at <= p_after_at
          and(ph.created_at,
            ph.post_id) <(p_after_at,
            p_after_id)
        order by
          ph.created_at desc,
          ph.post_id desc
        limit p_window) t
    order by
      t.created_at desc,
      t.post_id desc
    limit p_window)
union all
-- shares into the viewer's active hubs (the only hub-scoped activity), per hub
(
  select
    3,
    h.post_id,
    h.created_at,
    'shared_to_hub',
    h.visibility
  from
    unnest(p_hubs) hub(id)
    cross join lateral(
      select
        e.post_id,
        e.created_at,
        p.visibility
      from
        app.activity_events e
        join app.posts p on p.id = e.post_id
      where
        e.hub_id = hub.id
        and e.kind = 'post_shared_to_hub'
        and not(e.actor_id = any(p_blocks))
        and app.post_visible_to(p, p_viewer, p_blocks)
        and e.created_at <= p_after_at
        and(e.created_at,
          e.post_id) <(p_after_at,
          p_after_id)
      order by
        e.created_at desc,
        e.post_id desc
      limit p_window) h
  order by
    h.created_at desc,
    h.post_id desc
  limit p_window)
union all
-- followed users' posts (never private_locked_hub: those come through their hubs only)
(
  select
    4,
    f.post_id,
    f.at,
    'followed_author',
    f.visibility
  from
    app_private.posts_by_authors(s.followees, '{public,public_hub}', p_viewer, p_blocks, p_after_at, p_after_id, p_window) f
  where
    not s.many_followees)
union all(
  select
    4,
    p.id,
    p.created_at,
    'followed_author',
    p.visibility
  from
    app.posts p
  where
    s.many_followees
    and(p.author_id in(
        select
          u
        from
          app_private.followees_of(p_viewer) u)) is true
      and not app.post_stays_in_hubs(p.visibility)
      and app.post_visible_to(p, p_viewer, p_blocks)
      and p.created_at <= p_after_at
      and(p.created_at,
        p.id) <(p_after_at,
        p_after_id)
    order by
      p.created_at desc,
      p.id desc
    limit p_window)
union all
-- co-members' public and public_hub posts
(
  select
    5,
    c.post_id,
    c.at,
    'hub_co_member_author',
    c.visibility
  from
    app_private.posts_by_authors(s.co_members, '{public,public_hub}', p_viewer, p_blocks, p_after_at, p_after_id, p_window) c
  where
    not s.many_co_members)
union all(
  select
    5,
    p.id,
    p.created_at,
    'hub_co_member_author',
    p.visibility
  from
    app.posts p
  where
    s.many_co_members
    and(p.author_id in(
        select
          u
        from
          app_private.co_members_of(p_hubs, p_viewer) u)) is true
      and not app.post_stays_in_hubs(p.visibility)
      and app.post_visible_to(p, p_viewer, p_blocks)
      and p.created_at <= p_after_at
      and(p.created_at,
        p.id) <(p_after_at,
        p_after_id)
    order by
      p.created_at desc,
      p.id desc
    limit p_window)
union all
-- public and public_hub posts followed users or co-members voted on, commented on, reposted or
-- shared to their feed (global activity): per friend, or by time when either set is large
(
  select
    6,
    a.post_id,
    a.created_at,
    'friend_interaction',
    a.visibility
  from
    unnest(s.friends) actor(id)
    cross join lateral(
      select
        e.post_id,
        e.created_at,
        p.visibility
      from
        app.activity_events e
        join app.posts p on p.id = e.post_id
      where
        e.actor_id = actor.id
        and e.kind <> 'post_shared_to_hub'
        and not app.post_stays_in_hubs(p.visibility)
        and app.post_visible_to(p, p_viewer, p_blocks)
        and e.created_at <= p_after_at
        and(e.created_at,
          e.post_id) <(p_after_at,
          p_after_id)
      order by
        e.created_at desc,
        e.post_id desc
      limit p_window) a
  where
    not(s.many_followees
      or s.many_co_members)
  order by
    a.created_at desc,
    a.post_id desc
  limit p_window)
union all(
  select
    6,
    e.post_id,
    e.created_at,
    'friend_interaction',
    p.visibility
  from
    app.activity_events e
    join app.posts p on p.id = e.post_id
  where(s.many_followees
    or s.many_co_members)
  and e.kind <> 'post_shared_to_hub'
  and not(e.actor_id = any(p_blocks))
  and(e.actor_id in(
      select
        u
      from
        app_private.followees_of(p_viewer) u)
      or e.actor_id in(
        select
          u
        from
          app_private.co_members_of(p_hubs, p_viewer) u))
      and not app.post_stays_in_hubs(p.visibility)
      and app.post_visible_to(p, p_viewer, p_blocks)
      and e.created_at <= p_after_at
      and(e.created_at,
        e.post_id) <(p_after_at,
        p_after_id)
    order by
      e.created_at desc,
      e.post_id desc
    limit p_window)
union all
-- default feed users' public posts (only when the viewer has no personal source)
(
  select
    7,
    d.post_id,
    d.at,
    'default_feed_user',
    d.visibility
  from
    app_private.posts_by_authors(s.default_authors, '{public}', p_viewer, p_blocks, p_after_at, p_after_id, p_window) d)) ev
$$;

comment on function app_private.home_events(uuid, uuid[], uuid[], timestamp with time zone, uuid, integer) is
  'The Home candidates before the cursor, at most p_window per source, newest first, with each post''s visibility. Used by app_private.feed_page for GET /posts.';

-- Profile feed of p_subject: their original posts and reposts, and their repeatable
-- feed and hub shares (spec 2.8); never private_locked_hub. A hub share counts only for viewers who
-- are active members of that hub now (p_hubs). Cards carry no context (no share-by attribution).
create or replace function app_private.profile_card_events_since_cursor(
  p_subject uuid,
  p_post_id uuid,
  p_hubs uuid[],
  p_snapshot timestamptz,
  p_after_at timestamptz,
  p_after_id uuid
)
  returns setof app.activity_events
  language sql
  stable rows 1
  as $$
  select
    e.*
  from
    app.activity_events e
  where
    e.post_id = p_post_id
    and e.actor_id = p_subject
    and e.created_at >= p_after_at
    and e.created_at <= p_snapshot
    and(e.created_at,
      e.post_id) >=(p_after_at,
      p_after_id)
    and(e.kind = 'post_shared_to_feed'
      or(e.kind = 'post_shared_to_hub'
        and e.hub_id = any(p_hubs)))
$$;

comment on function app_private.profile_card_events_since_cursor(uuid, uuid, uuid[], timestamp with time zone, timestamp with time zone,
  uuid) is 'The events of one profile-feed card at or after the cursor: feed shares, and hub shares in hubs the viewer is an active member of. Used by app_private.feed_page for GET /users/{userId}/feed.';

create or replace function app_private.profile_events(
  p_subject uuid,
  p_viewer uuid,
  p_blocks uuid[],
  p_hubs uuid[],
  p_after_at timestamptz,
  p_after_id uuid,
  p_window int
)
  returns table(
      src int,
      post_id uuid,
      at timestamptz,
      context app.feed_context,
      visibility app.post_visibility
)
  language sql
  stable
  as $$
  select
    ev.src,
    ev.post_id,
    ev.at,
    null::app.feed_context,
    ev.visibility
  from((
      select
        1 as src,
        p.id as post_id,
        p.created_at as at,
        p.visibility
      from
        app.posts p
      where
        p.author_id = p_subject
        and not app.post_stays_in_hubs(p.visibility)
        and app.post_visible_to(p, p_viewer, p_blocks)
        and p.created_at <= p_after_at
        and(p.created_at,
          p.id) <(p_after_at,
          p_after_id)
      order by
        p.created_at desc,
        p.id desc
      limit p_window)
  union all(
    select
      2,
      e.post_id,
      e.created_at,
      p.visibility
    from
      app.activity_events e
      join app.posts p on p.id = e.post_id
    where
      e.actor_id = p_subject
      and e.kind in('post_shared_to_feed', 'post_shared_to_hub')
      and(e.kind = 'post_shared_to_feed'
        or e.hub_id = any(p_hubs))
      and not app.post_stays_in_hubs(p.visibility)
      and app.post_visible_to(p, p_viewer, p_blocks)
      and e.created_at <= p_after_at
      and(e.created_at,
        e.post_id) <(p_after_at,
        p_after_id)
    order by
      e.created_at desc,
      e.post_id desc
    limit p_window)) ev
where
  not(p_subject = any(p_blocks))
$$;

comment on function app_private.profile_events(uuid, uuid, uuid[], uuid[], timestamp with time zone, uuid, integer) is
  'A user''s profile-feed candidates before the cursor: their own posts and reposts and their feed and hub shares, never private_locked_hub. Used by app_private.feed_page for GET /users/{userId}/feed.';

create or replace function app_private.hub_card_events_since_cursor(
  p_hub_id uuid,
  p_post_id uuid,
  p_blocks uuid[],
  p_snapshot timestamptz,
  p_after_at timestamptz,
  p_after_id uuid
)
  returns setof app.activity_events
  language sql
  stable rows 1
  as $$
  select
    e.*
  from
    app.activity_events e
  where
    e.post_id = p_post_id
    and e.hub_id = p_hub_id
    and e.kind = 'post_shared_to_hub'
    and not(e.actor_id = any(p_blocks))
    and e.created_at >= p_after_at
    and e.created_at <= p_snapshot
    and(e.created_at,
      e.post_id) >=(p_after_at,
      p_after_id)
$$;

comment on function app_private.hub_card_events_since_cursor(uuid, uuid, uuid[], timestamp with time zone, timestamp with time zone, uuid) is
  'The hub shares of one hub-feed card at or after the cursor. Used by app_private.feed_page for GET /hubs/{hubId}/feed.';

-- Hub feed of p_subject: posts targeted or shared into the hub, newest placement first.
create or replace function app_private.hub_events(
  p_subject uuid,
  p_viewer uuid,
  p_blocks uuid[],
  p_after_at timestamptz,
  p_after_id uuid,
  p_window int
)
  returns table(
      src int,
      post_id uuid,
      at timestamptz,
      context app.feed_context,
      visibility app.post_visibility
)
  language sql
  stable
  as $$
(
    select
      1 as src,
      ph.post_id,
      ph.created_at as at,
      'joined_hub_post'::app.feed_context as context,
      p.visibility
    from
      app.post_hubs ph
      join app.posts p on p.id = ph.post_id
    where
      ph.hub_id = p_subject
      and ph.kind = 'target'
      and app.post_visible_to(p, p_viewer, p_blocks)
      and ph.created_at <= p_after_at
      and(ph.created_at,
        ph.post_id) <(p_after_at,
        p_after_id)
    order by
      ph.created_at desc,
      ph.post_id desc
    limit p_window)
union all(
  select
    2,
    e.post_id,
    e.created_at,
    'shared_to_hub',
    p.visibility
  from
    app.activity_events e
    join app.posts p on p.id = e.post_id
  where
    e.hub_id = p_subject
    and e.kind = 'post_shared_to_hub'
    and not(e.actor_id = any(p_blocks))
    and app.post_visible_to(p, p_viewer, p_blocks)
    and e.created_at <= p_after_at
    and(e.created_at,
      e.post_id) <(p_after_at,
      p_after_id)
  order by
    e.created_at desc,
    e.post_id desc
  limit p_window)
$$;

comment on function app_private.hub_events(uuid, uuid, uuid[], timestamp with time zone, uuid, integer) is
  'A hub''s feed candidates before the cursor: posts targeted or shared into it, newest placement first. Used by app_private.feed_page for GET /hubs/{hubId}/feed.';

-- One page of a feed (p_feed: home, profile or hub): the newest event of each frame among the
-- sources' windows, skipping frames shown on earlier pages. A source that filled its window may
-- hold older events beyond it, so only candidates at or after the newest such window end are
-- certain; when fewer than a page are certain, the windows double and the query runs again. The
-- shown-earlier test runs last, on the certain candidates in page order, until the page
-- is full (the first page, its cursor id the largest uuid, skips it).
create or replace function app_private.feed_page(
  p_feed text,
  p_subject uuid,
  p_snapshot timestamptz,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit int
)
  returns setof app_private.feed_item
  language plpgsql
  stable
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
               when 'home' then exists (select from app_private.home_card_events_since_cursor(c.post_id, c.visibility, v_viewer, v_hubs, v_blocks,
                                                                            p_snapshot, p_after_at, p_after_id))
               when 'profile' then exists (select from app_private.profile_card_events_since_cursor(p_subject, c.post_id, v_hubs, p_snapshot, p_after_at, p_after_id))
               else exists (select from app_private.hub_card_events_since_cursor(p_subject, c.post_id, v_blocks, p_snapshot, p_after_at, p_after_id)) end
             limit p_limit + 1),
           exists (select from horizon)
      into v_items, v_truncated;
    exit when not v_truncated or cardinality(v_items) > p_limit;
    v_window := v_window * 2;
  end loop;
  return query select * from unnest(v_items);
end
$$;

comment on function app_private.feed_page(text, uuid, timestamp with time zone, timestamp with time zone, uuid, integer) is
  'One page of a feed (home, profile or hub): the newest event of each frame among the sources'' windows, skipping frames shown on earlier pages, widening the windows until the page is certain. Called by app.home_feed, app.profile_feed and app.hub_feed.';

-- GET /posts (Home), for any viewer: p_limit + 1 cards after the cursor (p_after_at, p_after_id),
-- at or before the snapshot. The first page passes the snapshot itself and the largest uuid.
create or replace function app.home_feed(
  p_snapshot timestamptz,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit int
)
  returns table(
      post_id uuid,
      at timestamptz,
      context app.feed_context
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    *
  from
    app_private.feed_page('home', null, p_snapshot, p_after_at, p_after_id, p_limit)
$$;

comment on function app.home_feed(timestamp with time zone, timestamp with time zone, uuid, integer) is
  'GET /posts (Home): p_limit + 1 cards after the cursor, at or before the snapshot, for any viewer (server/feeds/page.ts).';

grant execute on function app.home_feed(timestamp with time zone, timestamp with time zone, uuid, integer) to app_anonymous;

-- GET /users/{userId}/feed; the caller has checked that the viewer may see the user.
create or replace function app.profile_feed(
  p_user_id uuid,
  p_snapshot timestamptz,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit int
)
  returns table(
      post_id uuid,
      at timestamptz,
      context app.feed_context
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    *
  from
    app_private.feed_page('profile', p_user_id, p_snapshot, p_after_at, p_after_id, p_limit)
$$;

comment on function app.profile_feed(uuid, timestamp with time zone, timestamp with time zone, uuid, integer) is
  'GET /users/{userId}/feed: a user''s profile feed as the viewer may see it; the caller has checked that the viewer may see the user.';

grant execute on function app.profile_feed(uuid, timestamp with time zone, timestamp with time zone, uuid, integer) to app_anonymous;

-- GET /hubs/{hubId}/feed: active members only (HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED).
create or replace function app.hub_feed(
  p_hub_id uuid,
  p_snapshot timestamptz,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit int
)
  returns table(
      post_id uuid,
      at timestamptz,
      context app.feed_context
)
  language plpgsql
  stable
  security definer
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

comment on function app.hub_feed(uuid, timestamp with time zone, timestamp with time zone, uuid, integer) is
  'GET /hubs/{hubId}/feed: a hub''s feed, for its active members only (HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED).';

grant execute on function app.hub_feed(uuid, timestamp with time zone, timestamp with time zone, uuid, integer) to app_user;

-- The users p_viewer follows.
create or replace function app_private.followees_of(
  p_viewer uuid
)
  returns setof uuid
  language sql
  stable
  as $$
  select
    f.followee_id
  from
    app.follows f
  where
    f.follower_id = p_viewer
$$;

comment on function app_private.followees_of(uuid) is
  'The users p_viewer follows, as a set. Used by the Home readers (home_events, home_card_events_since_cursor) for GET /posts.';

-- Internal tooling (app_admin) lists them; it adds and removes through the two functions below,
-- which only app_admin may execute. No other API role has any privilege.
create policy default_feed_users_select_admin on app.default_feed_users
  for select to app_admin
    using (true);

comment on policy default_feed_users_select_admin on app.default_feed_users is
  'Only internal tooling (app_admin) reads the default feed users: `npm run admin -- default-feed-users list` and internal GraphQL; the Home readers read them as the owner.';

grant select (user_id, added_at) on app.default_feed_users to app_admin;
