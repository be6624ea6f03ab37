-- Up Migration
-- The counts move to the slot counters of 0220; the counter columns and the table they replace go,
-- with the row triggers that kept them (each updated the one row of its subject: the post, the
-- comment, the hub, the user's follow_counts row).
-- - The public profile reads followers, following and posts from the counters (posts were counted
--   on every read). votesCast and votesReceived are unchanged here.
-- - The invite link preview reads the member counter.
-- - Internal GraphQL reads the counts through views (see below).
drop trigger comments_count on app.comments;
drop function app_private.comments_count();
drop trigger posts_count_reposts on app.posts;
drop function app_private.posts_count_reposts();
drop trigger follows_count on app.follows;
drop function app_private.follows_count();
drop trigger hub_memberships_count on app.hub_memberships;
drop function app_private.hub_member_count();

-- Internal GraphQL keeps the counts it showed, read from the counters. Posts, comments and hubs have
-- columns a user token may not read, so a function of the whole row (a computed field) would fail
-- for it: their counts come as views of their own, keyed like the row, whose rows are the rows the
-- caller may see (security_invoker: the table's policy decides): PostStat, CommentStat and HubStat
-- (HubDiscussionStat keeps the discussion counts, which stay in their rows: see 0220).
-- (Each reads its counts in a lateral subquery: a view over two relations is printed alike by every
-- PostgreSQL major, which db/schema.sql's test compares.)
create view app.post_stats with (security_invoker = true) as
  select p.id as post_id, c.comment_count, c.repost_count
  from app.posts p
  cross join lateral (select app.post_comment_count(p.id) as comment_count, app.post_repost_count(p.id) as repost_count) c;
comment on view app.post_stats is E'@primaryKey post_id\n@foreignKey (post_id) references app.posts (id)';
create view app.comment_stats with (security_invoker = true) as
  select c.id as comment_id, r.reply_count
  from app.comments c
  cross join lateral (select app.comment_reply_count(c.id) as reply_count) r;
comment on view app.comment_stats is E'@primaryKey comment_id\n@foreignKey (comment_id) references app.comments (id)';
create view app.hub_stats with (security_invoker = true) as
  select h.id as hub_id, m.member_count
  from app.hubs h
  cross join lateral (select app.hub_member_count(h.id) as member_count) m;
comment on view app.hub_stats is E'@primaryKey hub_id\n@foreignKey (hub_id) references app.hubs (id)';
grant select (post_id, comment_count, repost_count) on app.post_stats to app_anonymous, app_admin;
grant select (comment_id, reply_count) on app.comment_stats to app_anonymous, app_admin;
grant select (hub_id, member_count) on app.hub_stats to app_user, app_admin;

-- Followers, following and posts from the counters; the rest as in 0108.
create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint, out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select app_private.counter_value('user_followers', p_user_id), app_private.counter_value('user_following', p_user_id),
         app_private.counter_value('user_posts', p_user_id),
         case when p_user_id = app.viewer_id() then (select count(*) from app.vote_receipts r where r.user_id = p_user_id) end,
         (select count(*) from app.vote_receipts r join app.posts p on p.id = r.post_id where p.author_id = p_user_id and p.deleted_at is null),
         coalesce((select jsonb_agg(jsonb_build_object('id', h.id, 'name', h.name, 'photoKey', a.object_key) order by h.name)
                   from app.hub_memberships m
                   join app.hubs h on h.id = m.hub_id
                   left join app.assets a on a.id = h.profile_asset_id
                   where m.user_id = p_user_id and m.role in ('admin', 'super_admin') and app.viewer_id() is not null), '[]'),
         app.viewer_follows(p_user_id),
         exists (select from app.follows f where f.follower_id = p_user_id and f.followee_id = app.viewer_id()),
         exists (select from app.blocks b where b.blocker_id = app.viewer_id() and b.blocked_id = p_user_id)
$$;

create or replace function app.invite_link_preview(p_token text,
  out hub_id uuid, out name text, out description text, out photo_key text, out member_count integer)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select h.id, h.name, h.description, a.object_key, app_private.counter_value('hub_members', h.id)::integer
  from app_private.usable_invite_link(p_token) l
  join app.hubs h on h.id = l.hub_id
  left join app.assets a on a.id = h.profile_asset_id
$$;

drop table app.follow_counts;
alter table app.posts drop column comment_count, drop column repost_count;
alter table app.comments drop column reply_count;
alter table app.hubs drop column member_count;

-- Down Migration
alter table app.posts add column repost_count int not null default 0 check (repost_count >= 0),
  add column comment_count int not null default 0 check (comment_count >= 0);
alter table app.comments add column reply_count int not null default 0 check (reply_count >= 0);
alter table app.hubs add column member_count int not null default 0 check (member_count >= 0);
grant select (repost_count, comment_count) on app.posts to app_anonymous;
grant select (reply_count) on app.comments to app_anonymous;
grant select (member_count) on app.hubs to app_anonymous;
update app.posts p set comment_count = app_private.counter_value('post_comments', p.id), repost_count = app_private.counter_value('post_reposts', p.id);
update app.comments c set reply_count = app_private.counter_value('comment_replies', c.id);
update app.hubs h set member_count = app_private.counter_value('hub_members', h.id);

create table app.follow_counts (
  user_id uuid primary key references app.users (id),
  followers bigint not null default 0 check (followers >= 0),
  following bigint not null default 0 check (following >= 0)
);
alter table app.follow_counts enable row level security;
alter table app.follow_counts force row level security;
insert into app.follow_counts (user_id, followers, following)
  select u.id, app_private.counter_value('user_followers', u.id), app_private.counter_value('user_following', u.id) from app.users u
  where exists (select from app.follows f where f.follower_id = u.id or f.followee_id = u.id);

drop view app.post_stats, app.comment_stats, app.hub_stats;

create or replace function app.invite_link_preview(p_token text,
  out hub_id uuid, out name text, out description text, out photo_key text, out member_count integer)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select h.id, h.name, h.description, a.object_key, h.member_count
  from app_private.usable_invite_link(p_token) l
  join app.hubs h on h.id = l.hub_id
  left join app.assets a on a.id = h.profile_asset_id
$$;

create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint, out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(c.followers, 0), coalesce(c.following, 0),
         (select count(*) from app.posts p where p.author_id = p_user_id and p.deleted_at is null and p.visibility <> 'private_locked_hub'),
         case when p_user_id = app.viewer_id() then (select count(*) from app.vote_receipts r where r.user_id = p_user_id) end,
         (select count(*) from app.vote_receipts r join app.posts p on p.id = r.post_id where p.author_id = p_user_id and p.deleted_at is null),
         coalesce((select jsonb_agg(jsonb_build_object('id', h.id, 'name', h.name, 'photoKey', a.object_key) order by h.name)
                   from app.hub_memberships m
                   join app.hubs h on h.id = m.hub_id
                   left join app.assets a on a.id = h.profile_asset_id
                   where m.user_id = p_user_id and m.role in ('admin', 'super_admin') and app.viewer_id() is not null), '[]'),
         app.viewer_follows(p_user_id),
         exists (select from app.follows f where f.follower_id = p_user_id and f.followee_id = app.viewer_id()),
         exists (select from app.blocks b where b.blocker_id = app.viewer_id() and b.blocked_id = p_user_id)
  from (select) one
  left join app.follow_counts c on c.user_id = p_user_id
$$;

create function app_private.hub_member_count() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    update app.hubs set member_count = member_count + 1 where id = new.hub_id;
  else
    update app.hubs set member_count = member_count - 1 where id = old.hub_id;
  end if;
  return null;
end
$$;
create trigger hub_memberships_count
  after insert or delete on app.hub_memberships
  for each row execute function app_private.hub_member_count();

create function app_private.follows_count() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    insert into app.follow_counts as c (user_id, followers, following)
      select d.user_id, d.followers, d.following
      from (values (new.followee_id, 1, 0), (new.follower_id, 0, 1)) d (user_id, followers, following)
      order by d.user_id
      on conflict (user_id) do update
        set followers = c.followers + excluded.followers, following = c.following + excluded.following;
  else
    perform from app.follow_counts c where c.user_id in (old.follower_id, old.followee_id) order by c.user_id for update;
    update app.follow_counts set followers = followers - 1 where user_id = old.followee_id;
    update app.follow_counts set following = following - 1 where user_id = old.follower_id;
  end if;
  return null;
end
$$;
create trigger follows_count
  after insert or delete on app.follows
  for each row execute function app_private.follows_count();

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
