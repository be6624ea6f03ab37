-- Up Migration
-- Blocks (spec 4.4; contract section 5). A block hides each user from the other everywhere the
-- policies decide visibility (profiles, lists, search, and the posts and comments tables when they
-- arrive), refuses follows, votes and comments between them with the answer of an unknown target
-- (404), removes follows both ways, and creates no notification.
create table app.blocks (
  blocker_id uuid not null references app.users (id),
  blocked_id uuid not null references app.users (id),
  created_at timestamptz not null default now(),
  primary key (blocker_id, blocked_id),
  constraint blocks_not_self check (blocker_id <> blocked_id)
);
create index blocks_blocked_id on app.blocks (blocked_id);

alter table app.blocks enable row level security;
alter table app.blocks force row level security;

-- A user sees the blocks they made, never who blocked them.
create policy blocks_select_own on app.blocks
  for select to app_user
  using (blocker_id = (select app.viewer_id()));

grant select on app.blocks to app_user;

-- The users blocked by the viewer or blocking the viewer, in either direction. Policies call it
-- as `(select app.viewer_block_list())` so it runs once per statement, not once per row.
create function app.viewer_block_list()
  returns uuid[]
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(other), '{}') from (
    select b.blocked_id as other from app.blocks b where b.blocker_id = app.viewer_id()
    union
    select b.blocker_id from app.blocks b where b.blocked_id = app.viewer_id()) pairs
$$;

grant execute on function app.viewer_block_list() to app_anonymous;

-- Users: a public profile (a handle) or the viewer's own row, and never across a block.
-- Replaces the policy of migrations/0004_users.sql.
drop policy users_select_public on app.users;
create policy users_select_public on app.users
  for select to app_anonymous
  using ((username is not null or id = (select app.viewer_id()))
         and not (id = any ((select app.viewer_block_list())::uuid[])));

-- Blocks the target. Any existing user can be blocked, also one who blocked the viewer first.
create function app.block_user(p_target uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_target = app.viewer_id() then
    perform app.fail('CANNOT_BLOCK_SELF');
  end if;
  if not exists (select from app.users u where u.id = p_target and u.merged_into is null) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  insert into app.blocks (blocker_id, blocked_id) values (app.viewer_id(), p_target) on conflict do nothing;
  if not found then
    perform app.fail('ALREADY_BLOCKED');
  end if;
end
$$;

-- Removes the viewer's block of the target; a no-op when there is none.
create function app.unblock_user(p_target uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.users u where u.id = p_target and u.merged_into is null) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  delete from app.blocks where blocker_id = app.viewer_id() and blocked_id = p_target;
end
$$;

grant execute on function app.block_user(uuid), app.unblock_user(uuid) to app_user;

-- Down Migration
drop function app.unblock_user(uuid);
drop function app.block_user(uuid);
drop policy users_select_public on app.users;
create policy users_select_public on app.users
  for select to app_anonymous
  using (username is not null or id = (select app.viewer_id()));
drop function app.viewer_block_list();
drop table app.blocks;
