-- Comments on posts.
-- POST /posts/{postId}/comments: a visible post (POST_NOT_FOUND; a block with its author answers
-- the same); a parent of the same post (COMMENT_NOT_FOUND), replaced by its root. post_commented
-- to the post's author (not for self-comments) and a feed activity event. In order (the names are
-- the code's):
--   1. app_private.visible_post, app.require_level(2), the parent's root (COMMENT_NOT_FOUND);
--   2. app.comments: the comment; when that insert ends, its trigger _500_count_insert
--      (app_private.count_comments: post_comments of the post, comment_replies of the root);
--   3. app.notifications: post_commented to the post's author (not for a self-comment); when that
--      insert ends, its trigger _500_count_unread_insert (app_private.count_unread: their badge);
--   4. app_private.record_activity: the commenter's activity event (post_commented).
create or replace function app.create_comment(
  p_post_id uuid,
  p_text text,
  p_parent_id uuid
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_author uuid;
  v_root uuid;
  v_comment uuid;
begin
  v_author := (app_private.visible_post(p_post_id)).author_id;
  perform app.require_level(app.access_level('profile'));
  if p_parent_id is not null then
    select coalesce(c.parent_id, c.id) into v_root from app.comments c
      where c.id = p_parent_id and c.post_id = p_post_id and c.deleted_at is null
        and not c.author_id = any (app.viewer_block_list());
    if v_root is null then
      perform app.fail('COMMENT_NOT_FOUND');
    end if;
  end if;
  insert into app.comments (post_id, author_id, parent_id, text) values (p_post_id, app.viewer_id(), v_root, p_text)
    returning id into v_comment;
  if v_author <> app.viewer_id() then
    insert into app.notifications (recipient_id, type, actor_id, post_id, comment_id)
      values (v_author, 'post_commented', app.viewer_id(), p_post_id, v_comment);
  end if;
  perform app_private.record_activity(p_post_id, 'post_commented');
  return v_comment;
end
$$;

comment on function app.create_comment(uuid, text, uuid) is
  'Comments on a visible post (POST_NOT_FOUND, also for a block with its author) at access level 2; a reply goes to its parent''s root (COMMENT_NOT_FOUND for a parent not on the post); notifies the post''s author (post_commented) and records the feed activity. Called by POST /posts/{postId}/comments.';

grant execute on function app.create_comment(uuid, text, uuid) to app_user;

-- DELETE /comments/{commentId}: by the comment's author or the post's author (FORBIDDEN), a visible
-- comment only (COMMENT_NOT_FOUND).
create or replace function app.delete_comment(
  p_comment_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_comment app.comments;
  v_post_author uuid;
begin
  select * into v_comment from app.comments c where c.id = p_comment_id and c.deleted_at is null;
  if not found or v_comment.author_id = any (app.viewer_block_list()) or not app.can_see_post(v_comment.post_id) then
    perform app.fail('COMMENT_NOT_FOUND');
  end if;
  select p.author_id into v_post_author from app.posts p where p.id = v_comment.post_id;
  if app.viewer_id() not in (v_comment.author_id, v_post_author) then
    perform app.fail('FORBIDDEN');
  end if;
  update app.comments set deleted_at = now() where id = p_comment_id;
end
$$;

comment on function app.delete_comment(uuid) is
  'Deletes a visible comment, by its author or the post''s author only (COMMENT_NOT_FOUND, FORBIDDEN). Called by DELETE /comments/{commentId}.';

grant execute on function app.delete_comment(uuid) to app_user;

create or replace function app_private.merge_comments(
  p_source uuid,
  p_target uuid
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  update
    app.comments
  set
    author_id = p_target
  where
    author_id = p_source
$$;

comment on function app_private.merge_comments(uuid, uuid) is
  'User merge step: the source account''s comments become the target''s. Run by app_private.merge_user (listed in app_private.user_merge_steps).';

create or replace view app.comment_stats with ( security_invoker = true
) as
select
  c.id as comment_id,
  r.reply_count
from
  app.comments c
  cross join lateral (
    select
      app.comment_reply_count(
        c.id
) as reply_count) r;

comment on view app.comment_stats is '@primaryKey comment_id
@foreignKey (comment_id) references app.comments (id)';

grant select (comment_id, reply_count) on app.comment_stats to app_anonymous;

grant select (comment_id, reply_count) on app.comment_stats to app_admin;

-- One page of a post's top-level comments (p_parent_id null) or of the replies of p_parent_id,
-- oldest first after (p_after_at, p_after_id) (null: from the first), each with its author, at most
-- p_limit rows, read through the comments and users policies (the caller's rights). The rows come
-- from a cursor: PL/pgSQL plans a cursor for its first rows (cursor_tuple_fraction, 10 %), and a
-- plan that reads the post's whole range and sorts it costs all of it before its first row, so the
-- cursor walks the range's index (comments_post_top, comments_parent) in order and the function
-- fetches p_limit rows, whatever the statistics say the post holds. A statement with `limit` is
-- planned for limit / expected rows, which is everything where the statistics expect a page: the
-- post then had its comments read and sorted (docs/performance.md, "Hot values"). The page is
-- fetched in one FETCH, not row by row here, which PostgreSQL runs only in a volatile function:
-- hence volatile, though it writes nothing (as the other page functions).
create or replace function app.comment_page(
  p_post_id uuid,
  p_parent_id uuid,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      comment_id uuid,
      post_id uuid,
      body text,
      parent_id uuid,
      created_at timestamptz,
      author_id uuid,
      username text,
      full_name text,
      profile_asset_id uuid
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_at timestamptz := coalesce(p_after_at, '-infinity');
  v_id uuid := coalesce(p_after_id, '00000000-0000-0000-0000-000000000000');
begin
  if p_parent_id is null then
    open v_rows no scroll for
      select c.id, c.post_id, c.text, c.parent_id, c.created_at, u.id, u.username, u.full_name, u.profile_asset_id
      from app.comments c
      join app.users u on u.id = c.author_id
      where c.post_id = p_post_id and c.parent_id is null and (c.created_at, c.id) > (v_at, v_id)
      order by c.created_at, c.id;
  else
    open v_rows no scroll for
      select c.id, c.post_id, c.text, c.parent_id, c.created_at, u.id, u.username, u.full_name, u.profile_asset_id
      from app.comments c
      join app.users u on u.id = c.author_id
      where c.parent_id = p_parent_id and c.post_id = p_post_id and (c.created_at, c.id) > (v_at, v_id)
      order by c.created_at, c.id;
  end if;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.comment_page(uuid, uuid, timestamp with time zone, uuid, integer) is
  'One page of a post''s top-level comments or of one comment''s replies, oldest first after a cursor, with their authors, through the comments and users policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /posts/{postId}/comments.';

grant execute on function app.comment_page(uuid, uuid, timestamp with time zone, uuid, integer) to app_anonymous;

-- A comment is visible when it is not deleted, its post is visible, and its author is not blocked
-- with the viewer either way. The block test also asks whether the list has an entry: alone,
-- `not (author_id = any (list))` is priced from the column's statistics, and where one author wrote
-- every comment of the table the planner expects no row to pass, so it reads and sorts every comment
-- of a post instead of a page of its index; with the term it expects two rows in three at the least
-- (docs/performance.md, "Hot values").
create policy comments_select_visible on app.comments
  for select to app_anonymous
    using (deleted_at is null
      and not (author_id = any ((
        select
          app.viewer_block_list())::uuid[]) and cardinality((
            select
              app.viewer_block_list())::uuid[]) > 0)
          and app.can_see_post(post_id));

comment on policy comments_select_visible on app.comments is
  'A comment is visible when it is not deleted, its post is visible (app.can_see_post) and its author is not blocked with the viewer either way. Serves GET /posts/{postId}/comments and the internal GraphQL API.';

grant select (id, post_id, author_id, parent_id, text, created_at) on app.comments to app_anonymous;
