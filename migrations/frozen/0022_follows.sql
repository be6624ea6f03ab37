-- Up Migration
-- Follows (spec 4.4; contract section 5): who follows whom, exact counters, user_followed.
create table app.follows (
  follower_id uuid not null references app.users (id),
  followee_id uuid not null references app.users (id),
  created_at timestamptz not null default now(),
  -- Keyset position of the follower/following lists (newest follow first).
  seq bigint generated always as identity unique,
  primary key (follower_id, followee_id),
  constraint follows_not_self check (follower_id <> followee_id)
);
create index follows_followee_seq on app.follows (followee_id, seq desc);
create index follows_follower_seq on app.follows (follower_id, seq desc);

-- Follower and following counters, kept by the trigger below in the same transaction as the
-- follow, so they are exact under concurrency (each change is an atomic increment).
create table app.follow_counts (
  user_id uuid primary key references app.users (id),
  followers bigint not null default 0 check (followers >= 0),
  following bigint not null default 0 check (following >= 0)
);

alter table app.follows enable row level security;
alter table app.follows force row level security;
alter table app.follow_counts enable row level security;
alter table app.follow_counts force row level security;

-- A follow is visible unless one of its two users is blocked with the viewer (either way).
-- The users policy additionally hides users without a public profile wherever lists join them.
create policy follows_select_visible on app.follows
  for select to app_anonymous
  using (not (follower_id = any ((select app.viewer_block_list())::uuid[]))
         and not (followee_id = any ((select app.viewer_block_list())::uuid[])));

grant select on app.follows to app_anonymous, app_admin;
create policy follows_select_admin on app.follows for select to app_admin using (true);
-- follow_counts: read only through app.profile_social; no API role reads the table.

-- Both counter rows are locked in user id order, so two opposite follows at the same moment
-- (A follows B, B follows A) take their locks in the same order and cannot deadlock.
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

-- Follows the target: it must have a public profile and no block with the viewer (else the answer
-- of an unknown user). Notifies the followed user.
create function app.follow_user(p_target uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_target = app.viewer_id() then
    perform app.fail('CANNOT_FOLLOW_SELF');
  end if;
  if not exists (select from app.users u where u.id = p_target and u.username is not null and u.merged_into is null)
     or p_target = any (app.viewer_block_list()) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  insert into app.follows (follower_id, followee_id) values (app.viewer_id(), p_target) on conflict do nothing;
  if not found then
    perform app.fail('ALREADY_FOLLOWING');
  end if;
  insert into app.notifications (recipient_id, type, actor_id) values (p_target, 'user_followed', app.viewer_id());
end
$$;

-- Stops following; a no-op when not following. The target must be a user the viewer can see.
create function app.unfollow_user(p_target uuid)
  returns void
  language plpgsql volatile security definer
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

grant execute on function app.follow_user(uuid), app.unfollow_user(uuid) to app_user;

-- Whether the viewer follows a user: false without a viewer and for the viewer's own row.
create function app.viewer_follows(p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select exists (select from app.follows f where f.follower_id = app.viewer_id() and f.followee_id = p_user_id) $$;

grant execute on function app.viewer_follows(uuid) to app_anonymous;

-- Blocking removes follows both ways, in the block's transaction.
create function app_private.blocks_remove_follows() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  delete from app.follows
  where (follower_id = new.blocker_id and followee_id = new.blocked_id)
     or (follower_id = new.blocked_id and followee_id = new.blocker_id);
  return null;
end
$$;

create trigger blocks_remove_follows
  after insert on app.blocks
  for each row execute function app_private.blocks_remove_follows();

-- The public profile's social part now counts follows and shows the viewer's relationship.
create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint,
  out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(c.followers, 0), coalesce(c.following, 0), 0::bigint, 0::bigint, 0::bigint, '[]'::jsonb,
         app.viewer_follows(p_user_id),
         exists (select from app.follows f where f.follower_id = p_user_id and f.followee_id = app.viewer_id()),
         exists (select from app.blocks b where b.blocker_id = app.viewer_id() and b.blocked_id = p_user_id)
  from (select) one
  left join app.follow_counts c on c.user_id = p_user_id
$$;

-- Down Migration
create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint,
  out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, '[]'::jsonb, false, false, false $$;
drop function app.viewer_follows(uuid);
drop trigger blocks_remove_follows on app.blocks;
drop function app_private.blocks_remove_follows();
drop function app.unfollow_user(uuid);
drop function app.follow_user(uuid);
drop table app.follow_counts;
drop table app.follows;
drop function app_private.follows_count();
