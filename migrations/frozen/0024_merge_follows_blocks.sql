-- Up Migration
-- Phone-verification merge (migrations/0009_user_merge.sql) of blocks and follows, and the
-- retirement of the merged user's handle (it becomes free at once, and the ghost row leaves
-- every public list).

-- Blocks made by or against the source apply to the target from now on.
create function app_private.merge_blocks(p_source uuid, p_target uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  insert into app.blocks (blocker_id, blocked_id)
    select p_target, b.blocked_id from app.blocks b where b.blocker_id = p_source and b.blocked_id <> p_target
    union
    select b.blocker_id, p_target from app.blocks b where b.blocked_id = p_source and b.blocker_id <> p_target
    on conflict do nothing;
  delete from app.blocks where blocker_id = p_source or blocked_id = p_source;
$$;

-- Follows made by or of the source move to the target, except with users blocked either way
-- (blocks were merged first) and except the target itself. Counters follow through the trigger.
create function app_private.merge_follows(p_source uuid, p_target uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  insert into app.follows (follower_id, followee_id)
    select p_target, f.followee_id from app.follows f where f.follower_id = p_source and f.followee_id <> p_target
    union
    select f.follower_id, p_target from app.follows f where f.followee_id = p_source and f.follower_id <> p_target
    except
    select x.a, x.b from app.blocks bl
      cross join lateral (values (bl.blocker_id, bl.blocked_id), (bl.blocked_id, bl.blocker_id)) x (a, b)
      where bl.blocker_id = p_target or bl.blocked_id = p_target
    on conflict do nothing;
  delete from app.follows where follower_id = p_source or followee_id = p_source;
$$;

create function app_private.merge_retire_handle(p_source uuid, p_target uuid)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$ update app.users set username = null where id = p_source and p_target is not null $$;

insert into app_private.user_merge_steps (position, step) values
  (10, 'app_private.merge_blocks(uuid, uuid)'),
  (20, 'app_private.merge_follows(uuid, uuid)'),
  (1000, 'app_private.merge_retire_handle(uuid, uuid)');

-- Down Migration
delete from app_private.user_merge_steps where position in (10, 20, 1000);
drop function app_private.merge_retire_handle(uuid, uuid);
drop function app_private.merge_follows(uuid, uuid);
drop function app_private.merge_blocks(uuid, uuid);
