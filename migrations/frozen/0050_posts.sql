-- Up Migration
-- Posts (spec 2.3; contract section 7). A post frame is an original post or a repost; an original
-- may carry a reusable article. Hub targeting and hub shares place a post in hubs; each placement
-- opens that hub's discussion of the post.
create type app.post_visibility as enum ('public', 'public_hub', 'private_locked_hub');
create type app.article_kind as enum ('link', 'media', 'text');
create type app.post_hub_kind as enum ('target', 'share');

create table app.articles (
  id uuid primary key default gen_random_uuid(),
  kind app.article_kind not null,
  url text check (char_length(url) <= 2048),
  title text check (char_length(title) <= 300),
  body text check (char_length(body) <= 10000),
  asset_ids uuid[] not null default '{}',
  created_by uuid not null references app.users (id),
  created_at timestamptz not null default now()
);

create table app.posts (
  id uuid primary key default gen_random_uuid(),
  author_id uuid not null references app.users (id),
  article_id uuid references app.articles (id),
  thought_text text check (char_length(thought_text) between 1 and 2000),
  slider_text text check (char_length(slider_text) between 1 and 260),
  slider_left_label text check (char_length(slider_left_label) between 1 and 40),
  slider_right_label text check (char_length(slider_right_label) between 1 and 40),
  visibility app.post_visibility not null,
  source_post_id uuid references app.posts (id),
  created_at timestamptz not null default now(),
  deleted_at timestamptz,
  -- Kept by triggers: active (not deleted) reposts of this original, and live comments.
  repost_count int not null default 0 check (repost_count >= 0),
  comment_count int not null default 0 check (comment_count >= 0),
  constraint posts_has_content check (article_id is not null or thought_text is not null or slider_text is not null),
  constraint posts_slider_complete check (
    (slider_text is null) = (slider_left_label is null) and (slider_text is null) = (slider_right_label is null)),
  constraint posts_repost_has_no_article check (source_post_id is null or article_id is null)
);
create index posts_author on app.posts (author_id, created_at desc);
create index posts_source on app.posts (source_post_id, created_at desc) where source_post_id is not null;

create table app.post_hubs (
  post_id uuid not null references app.posts (id),
  hub_id uuid not null references app.hubs (id),
  kind app.post_hub_kind not null,
  added_by uuid not null references app.users (id),
  created_at timestamptz not null default now(),
  primary key (post_id, hub_id)
);
create index post_hubs_hub on app.post_hubs (hub_id, created_at desc);

-- Feed shares: repeatable share events pointing at an exact frame (no new frame).
create table app.post_shares (
  id uuid primary key default gen_random_uuid(),
  post_id uuid not null references app.posts (id),
  user_id uuid not null references app.users (id),
  created_at timestamptz not null default now()
);
create index post_shares_post on app.post_shares (post_id);
create index post_shares_user on app.post_shares (user_id, created_at desc);

create table app.hub_discussions (
  id uuid primary key default gen_random_uuid(),
  hub_id uuid not null references app.hubs (id),
  post_id uuid not null references app.posts (id),
  created_at timestamptz not null default now(),
  last_activity_at timestamptz not null default now(),
  unique (hub_id, post_id)
);

-- Whether a viewer may see a private_locked_hub post as a member: an active membership (of any
-- level) in at least one hub the post was targeted to (spec 2.3 rule 14).
create function app.is_member_of_post_target(p_post_id uuid, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (
    select from app.post_hubs ph
    join app.hub_memberships m on m.hub_id = ph.hub_id and m.user_id = p_user_id
    where ph.post_id = p_post_id and ph.kind = 'target')
$$;

alter table app.articles enable row level security;
alter table app.articles force row level security;
alter table app.posts enable row level security;
alter table app.posts force row level security;
alter table app.post_hubs enable row level security;
alter table app.post_hubs force row level security;
alter table app.hub_discussions enable row level security;
alter table app.hub_discussions force row level security;
alter table app.post_shares enable row level security;
alter table app.post_shares force row level security;
-- post_shares: no API role reads share events directly (feeds read them through functions).

-- The one rule of post visibility (spec 2.3 rule 14, 2.8; contract section 5 blocks): not deleted,
-- the author not blocked with the viewer either way, and public or public_hub, or the viewer is the
-- author or an active member of a hub the post was targeted to. A plain SQL function, so the
-- planner inlines it into the policy below (no per-row call); app.can_see_post applies it to one
-- post inside stored functions.
create function app.post_visible_to(p_post app.posts, p_viewer uuid, p_block_list uuid[])
  returns boolean
  language sql stable
  as $$
  select p_post.deleted_at is null
     and not (p_post.author_id = any (p_block_list))
     and (p_post.visibility <> 'private_locked_hub'
          or p_post.author_id = p_viewer
          or app.is_member_of_post_target(p_post.id, p_viewer))
$$;

create function app.can_see_post(p_post_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce((select app.post_visible_to(p, app.viewer_id(), app.viewer_block_list()) from app.posts p where p.id = p_post_id), false)
$$;

-- Every read path (REST, GraphQL, SQL) sees posts through this policy.
create policy posts_select_visible on app.posts
  for select to app_anonymous
  using (app.post_visible_to(posts, (select app.viewer_id()), (select app.viewer_block_list())));

-- Articles are read through their posts: visible when a visible post carries them.
create policy articles_select_visible on app.articles
  for select to app_anonymous
  using (exists (select from app.posts p where p.article_id = articles.id));

-- Hub placements of visible posts are visible to active members of that hub.
create policy post_hubs_select_members on app.post_hubs
  for select to app_user
  using (hub_id = any ((select app.viewer_active_hub_ids())::uuid[]));

-- Discussions are private to the active members of their hub.
create policy hub_discussions_select_members on app.hub_discussions
  for select to app_user
  using (hub_id = any ((select app.viewer_active_hub_ids())::uuid[]));

create policy posts_select_admin on app.posts for select to app_admin using (true);
create policy articles_select_admin on app.articles for select to app_admin using (true);

grant select on app.posts, app.articles to app_anonymous, app_admin;
grant select on app.post_hubs, app.hub_discussions to app_user;
grant execute on function app.is_member_of_post_target(uuid, uuid), app.post_visible_to(app.posts, uuid, uuid[]),
  app.can_see_post(uuid) to app_anonymous;

-- Repost counts: an active repost counts on its source while neither is deleted.
create function app_private.posts_count_reposts() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' and new.source_post_id is not null then
    update app.posts set repost_count = repost_count + 1 where id = new.source_post_id;
  elsif tg_op = 'UPDATE' and new.source_post_id is not null and old.deleted_at is null and new.deleted_at is not null then
    update app.posts set repost_count = repost_count - 1 where id = new.source_post_id;
  end if;
  return null;
end
$$;

create trigger posts_count_reposts
  after insert or update of deleted_at on app.posts
  for each row execute function app_private.posts_count_reposts();

-- Down Migration
drop trigger posts_count_reposts on app.posts;
drop function app_private.posts_count_reposts();
drop table app.hub_discussions;
drop table app.post_shares;
drop function app.can_see_post(uuid);
drop table app.post_hubs;
drop table app.posts cascade;
drop table app.articles;
drop function app.is_member_of_post_target(uuid, uuid);
drop type app.post_hub_kind;
drop type app.article_kind;
drop type app.post_visibility;
