-- Up Migration
-- Saved posts (the bookmark tab, level 2; contract section 5) and reports on posts.
create table app.saved_posts (
  user_id uuid not null references app.users (id),
  post_id uuid not null references app.posts (id),
  saved_at timestamptz not null default now(),
  primary key (user_id, post_id)
);
create index saved_posts_recent on app.saved_posts (user_id, saved_at desc, post_id);

alter table app.saved_posts enable row level security;
alter table app.saved_posts force row level security;

-- A user reads and changes only their own bookmarks, and saves only posts they can see.
create policy saved_posts_select_own on app.saved_posts for select to app_user using (user_id = (select app.viewer_id()));
create policy saved_posts_insert_own on app.saved_posts for insert to app_user
  with check (user_id = (select app.viewer_id()) and app.can_see_post(post_id));
create policy saved_posts_delete_own on app.saved_posts for delete to app_user using (user_id = (select app.viewer_id()));

grant select, insert (user_id, post_id), delete on app.saved_posts to app_user;

-- POST /reports/posts/{postId}: a post the viewer can see (the posts policy decides).
create function app.report_post(p_post_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile
  as $$
declare
  v_report uuid;
begin
  if not exists (select from app.posts p where p.id = p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  insert into app.reports (reporter_id, target_type, target_id, reason, details)
    values (app.viewer_id(), 'post', p_post_id, p_reason, p_details) returning id into v_report;
  return v_report;
end
$$;

grant execute on function app.report_post(uuid, app.report_reason, text) to app_user;

-- Down Migration
drop function app.report_post(uuid, app.report_reason, text);
drop table app.saved_posts;
