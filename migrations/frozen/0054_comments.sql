-- Up Migration
-- Public comments (spec 2.3, 2.5; contract section 7): one-level threads (a reply to a reply
-- attaches to the thread root), UserLite authors, deletion by the comment's or the post's author.
create table app.comments (
  id uuid primary key default gen_random_uuid(),
  post_id uuid not null references app.posts (id),
  author_id uuid not null references app.users (id),
  -- The thread root; null for a top-level comment.
  parent_id uuid references app.comments (id),
  text text not null check (char_length(text) between 1 and 1000),
  created_at timestamptz not null default now(),
  deleted_at timestamptz,
  reply_count int not null default 0 check (reply_count >= 0)
);
create index comments_post_top on app.comments (post_id, created_at, id) where parent_id is null;
create index comments_parent on app.comments (parent_id, created_at, id) where parent_id is not null;

alter table app.comments enable row level security;
alter table app.comments force row level security;

-- A comment is visible when it is not deleted, its post is visible, and its author is not blocked
-- with the viewer either way.
create policy comments_select_visible on app.comments
  for select to app_anonymous
  using (deleted_at is null
         and not (author_id = any ((select app.viewer_block_list())::uuid[]))
         and app.can_see_post(post_id));

grant select on app.comments to app_anonymous;

-- Counters: live comments on the post, live replies on the root.
create function app_private.comments_count() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_delta int := case when tg_op = 'INSERT' then 1 else -1 end;
begin
  if tg_op = 'UPDATE' and not (old.deleted_at is null and new.deleted_at is not null) then
    return null;
  end if;
  update app.posts set comment_count = comment_count + v_delta where id = new.post_id;
  if new.parent_id is not null then
    update app.comments set reply_count = reply_count + v_delta where id = new.parent_id;
  end if;
  return null;
end
$$;

create trigger comments_count
  after insert or update of deleted_at on app.comments
  for each row execute function app_private.comments_count();

-- POST /posts/{postId}/comments: a visible post (POST_NOT_FOUND; a block with its author answers
-- the same); a parent of the same post (COMMENT_NOT_FOUND), replaced by its root. post_commented
-- to the post's author (not for self-comments) and a feed activity event.
create function app.create_comment(p_post_id uuid, p_text text, p_parent_id uuid)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_author uuid;
  v_root uuid;
  v_comment uuid;
begin
  select p.author_id into v_author from app.posts p where p.id = p_post_id;
  if v_author is null or not app.can_see_post(p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  perform app.require_level(2);
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

-- DELETE /comments/{commentId}: by the comment's author or the post's author (FORBIDDEN), a visible
-- comment only (COMMENT_NOT_FOUND).
create function app.delete_comment(p_comment_id uuid)
  returns void
  language plpgsql volatile security definer
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

grant execute on function app.create_comment(uuid, text, uuid), app.delete_comment(uuid) to app_user;

-- Down Migration
drop function app.delete_comment(uuid);
drop function app.create_comment(uuid, text, uuid);
drop trigger comments_count on app.comments;
drop function app_private.comments_count();
drop table app.comments;
