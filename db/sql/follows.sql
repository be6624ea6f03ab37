-- Follows: following and unfollowing a user, the viewer's follow of a user, a user's follower and
-- following lists with their policies, and the follows step of a user merge. A block ends the follows
-- between two users (app_private.blocks_remove_follows, users.sql, with the blocks).
-- Follows the target: it must have a public profile and no block with the viewer (else the answer
-- of an unknown user). Notifies the followed user.
create or replace function app.follow_user(
  p_target uuid
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if p_target = app.viewer_id() then
    perform app.fail('CANNOT_FOLLOW_SELF');
  end if;
  if not exists (select from app.users u where u.id = p_target and u.merged_into is null
                 and app.user_visible(u.id, u.username, app.viewer_id(), app.viewer_block_list())) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  insert into app.follows (follower_id, followee_id) values (app.viewer_id(), p_target) on conflict do nothing;
  if not found then
    perform app.fail('ALREADY_FOLLOWING');
  end if;
  insert into app.notifications (recipient_id, type, actor_id) values (p_target, 'user_followed', app.viewer_id());
end
$$;

comment on function app.follow_user(uuid) is
  'Follows a user with a public profile and no block either way (USER_NOT_FOUND otherwise, ALREADY_FOLLOWING when repeated) and notifies them (user_followed). Called by POST /users/{userId}/follow.';

grant execute on function app.follow_user(uuid) to app_user;

-- Stops following; a no-op when not following. The target must exist (not merged away) and not be
-- blocked either way; unlike following, a user without a handle may be unfollowed.
create or replace function app.unfollow_user(
  p_target uuid
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.users u where u.id = p_target and u.merged_into is null)
     or p_target = any (app.viewer_block_list()) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  delete from app.follows where follower_id = app.viewer_id() and followee_id = p_target;
end
$$;

comment on function app.unfollow_user(uuid) is
  'Stops following a user who exists and is not blocked either way (a handle is not needed), a no-op when not following. Called by DELETE /users/{userId}/follow.';

grant execute on function app.unfollow_user(uuid) to app_user;

create or replace function app.viewer_follows(
  p_user_id uuid
)
  returns boolean
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return exists (select from app.follows f where f.follower_id = app.viewer_id() and f.followee_id = p_user_id);
end
$$;

comment on function app.viewer_follows(uuid) is
  'Whether the viewer follows a user: the viewerFollows of user lists. Read by GET /users/{userId}/followers, GET /users/{userId}/following, GET /search/users and app.profile_social.';

grant execute on function app.viewer_follows(uuid) to app_anonymous;

-- Follows made by or of the source move to the target, except with users blocked either way
-- (blocks were merged first) and except the target itself. Counters follow through the trigger.
create or replace function app_private.merge_follows(
  p_source uuid,
  p_target uuid
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  insert into app.follows(follower_id, followee_id)
  select
    p_target,
    f.followee_id
  from
    app.follows f
  where
    f.follower_id = p_source
    and f.followee_id <> p_target
  union
  select
    f.follower_id,
    p_target
  from
    app.follows f
  where
    f.followee_id = p_source
    and f.follower_id <> p_target
  except
  select
    x.a,
    x.b
  from
    app.blocks bl
  cross join lateral(
    values(bl.blocker_id, bl.blocked_id),
(bl.blocked_id, bl.blocker_id)) x(a, b)
where
  bl.blocker_id = p_target
  or bl.blocked_id = p_target
on conflict
  do nothing;
    delete from app.follows
    where follower_id = p_source
      or followee_id = p_source;
$$;

comment on function app_private.merge_follows(uuid, uuid) is
  'User merge step: the follows of and by the source move to the target, except with users blocked either way and the target itself. Run by app_private.merge_user (listed in app_private.user_merge_steps).';

create policy follows_select_admin on app.follows
  for select to app_admin
    using (true);

comment on policy follows_select_admin on app.follows is 'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every follow.';

-- One page of a follow list: the followers of p_user_id (p_followers) or the users they follow,
-- newest first before p_before_seq (null: from the newest), through the follows and users policies
-- (the caller's rights), at most p_limit rows. Each row has its user's columns, or nulls and
-- visible false where the users policy hides the user: such rows are skipped, or, with
-- p_every_follow, returned and counted (a list read with q counts the follows it read). The rows
-- come from a cursor, which PL/pgSQL plans for its first rows, so it walks the user's range of
-- follows_followee_seq or follows_follower_seq in order whatever the statistics say the user has
-- (as app.comment_page; docs/performance.md, "Hot values"). The user is spelled as a range ordered
-- by (user, seq), which only that index serves: with `= p_user_id` the planner may walk the table's
-- seq index instead, filtering by user.
create or replace function app.follow_page(
  p_user_id uuid,
  p_followers boolean,
  p_before_seq bigint,
  p_limit integer,
  p_every_follow boolean
)
  returns table(
      seq bigint,
      user_id uuid,
      visible boolean,
      username text,
      full_name text,
      bio text,
      profile_asset_id uuid
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_before bigint := coalesce(p_before_seq, 9223372036854775807);
begin
  if p_followers then
    open v_rows no scroll for
      select f.seq, f.follower_id, u.id is not null, u.username, u.full_name, u.bio, u.profile_asset_id
      from app.follows f
      left join app.users u on u.id = f.follower_id
      where f.followee_id >= p_user_id and f.followee_id <= p_user_id and f.seq < v_before and (p_every_follow or u.id is not null)
      order by f.followee_id, f.seq desc;
  else
    open v_rows no scroll for
      select f.seq, f.followee_id, u.id is not null, u.username, u.full_name, u.bio, u.profile_asset_id
      from app.follows f
      left join app.users u on u.id = f.followee_id
      where f.follower_id >= p_user_id and f.follower_id <= p_user_id and f.seq < v_before and (p_every_follow or u.id is not null)
      order by f.follower_id, f.seq desc;
  end if;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.follow_page(uuid, boolean, bigint, integer, boolean) is
  'One page of a user''s followers or following, newest first before a cursor, with each user as the users policy shows it, through the follows and users policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /users/{userId}/followers and GET /users/{userId}/following (with q: the follows a page scans).';

grant execute on function app.follow_page(uuid, boolean, bigint, integer, boolean) to app_anonymous;

-- A follow is visible unless one of its two users is blocked with the viewer (either way).
-- The users policy additionally hides users without a public profile wherever lists join them.
-- Each block test also asks whether the list has an entry, so that where one user has every follow
-- of the table the planner does not expect that no row passes and read and sort the whole list (as
-- comments_select_visible; docs/performance.md, "Hot values").
create policy follows_select_visible on app.follows
  for select to app_anonymous
    using (not (follower_id = any ((
      select
        app.viewer_block_list())::uuid[]) and cardinality((
          select
            app.viewer_block_list())::uuid[]) > 0)
        and not (followee_id = any ((
          select
            app.viewer_block_list())::uuid[]) and cardinality((
              select
                app.viewer_block_list())::uuid[]) > 0));

comment on policy follows_select_visible on app.follows is
  'A follow is visible unless one of its users is blocked with the viewer, either way. Serves GET /users/{userId}/followers and GET /users/{userId}/following.';

grant select on app.follows to app_admin;

grant select (follower_id, followee_id, seq) on app.follows to app_anonymous;
