-- Up Migration
-- Badge counters (contract 12 "Badges"; design.md "what reaches a closed app"): the number of unread
-- notifications a user may see, read at the cost of the user's scopes (their hubs), never of their
-- unread rows. Counting every unread row and testing its visibility cost 117 ms at 100,000 rows.
--
-- app_private.unread_counters holds, per user and counting bucket, the number of unread rows. A
-- bucket is a scope of 0200 ('h' a hub, 'r' a repost), except that the global post_reposted rows of
-- a repost visible to every recipient (app_private.repost_visible(post, null): a live public or
-- public_hub repost) count in the user's 'g' bucket: with one bucket per repost, a popular author's
-- badge would cost one probe per repost. A trigger on posts moves a repost's unread rows between
-- 'g' and its own 'r' bucket when the repost stops (or starts again) being visible to everyone, so
-- every bucket holds rows of one visibility at every moment. Reading:
--   unread = the 'g' buckets + each 'h' and 'r' bucket whose scope app_private.scope_visible allows,
-- which is the visibility rule of the list (0200), applied once per bucket.
--
-- Kept by statement-level triggers with transition tables on app.notifications (insert, update,
-- delete), in the transaction that writes the rows, whichever function writes them: no writer
-- (app.cast_vote, the hub fan-out, follows, comments, memberships...) knows about them, and a
-- fan-out of 10,000 rows is one grouped upsert. Writers of one user's rows would all update the
-- same counter row and wait for each other until commit (every vote on a popular author's posts):
-- each bucket has up to 32 slot rows (as the vote counters of 0107), a statement adds to a random
-- one, and a read sums them. A slot may go negative (a row counted in one slot is read in
-- another); only the sum means anything.

create table app_private.unread_counters (
  user_id uuid not null,
  -- 'g' global rows (and rows of reposts visible to everyone), 'h' a hub (scope_id), 'r' a repost (scope_id).
  kind "char" not null check (kind in ('g', 'h', 'r')),
  scope_id uuid check ((kind = 'g') = (scope_id is null)),
  slot smallint not null check (slot between 0 and 31),
  unread bigint not null,
  unique nulls not distinct (user_id, kind, scope_id, slot)
);
comment on table app_private.unread_counters is 'Unread notifications per user, counting bucket and slot (migrations/0201); the sum of a bucket''s slots is its count.';

-- The counting bucket of a row now: its scope (0200), with global post_reposted rows of a repost
-- visible to everyone counted in 'g'. An 'r' row without a post_id (it fails closed) is counted
-- under the nil uuid, which names no post.
create function app_private.unread_bucket(p_type app.notification_type, p_hub_id uuid, p_post_id uuid)
  returns table (kind "char", scope_id uuid)
  language sql stable
  as $$
  select case when k.kind = 'r' and app_private.repost_row_visible(p_post_id, null) then 'g'::"char" else k.kind end,
         case when k.kind = 'h' then p_hub_id
              when k.kind = 'r' and not app_private.repost_row_visible(p_post_id, null)
                then coalesce(p_post_id, '00000000-0000-0000-0000-000000000000') end
  from (select app_private.notification_scope_kind(p_type, p_hub_id) as kind) k
$$;

-- The triggers below add signed changes (+1 a row counted unread, -1 a row no longer counted)
-- grouped by user and bucket, in one statement, in key order (two fan-outs to overlapping members
-- take the counter rows' locks in the same order), into one random slot. Rows about a repost first
-- take a share lock on it, so that the repost's visibility cannot change between reading it for the
-- bucket and committing (app_private.move_repost_unread, below, moves only committed rows).
create function app_private.lock_reposts(p_post_ids uuid[])
  returns void
  language sql volatile
  as $$ select from app.posts p where p.id = any (p_post_ids) order by p.id for share $$;
create function app_private.count_unread_inserts() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.lock_reposts(array(select n.post_id from new_rows n where n.type = 'post_reposted' and n.hub_id is null));
  insert into app_private.unread_counters as c (user_id, kind, scope_id, slot, unread)
  select n.recipient_id, b.kind, b.scope_id, floor(random() * 32)::smallint, count(*)
  from new_rows n cross join lateral app_private.unread_bucket(n.type, n.hub_id, n.post_id) b
  where n.read_at is null
  group by n.recipient_id, b.kind, b.scope_id
  order by n.recipient_id, b.kind, b.scope_id
  on conflict (user_id, kind, scope_id, slot) do update set unread = c.unread + excluded.unread;
  return null;
end
$$;

create function app_private.count_unread_changes() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.lock_reposts(array(
    select n.post_id from new_rows n where n.type = 'post_reposted' and n.hub_id is null
    union select o.post_id from old_rows o where o.type = 'post_reposted' and o.hub_id is null));
  insert into app_private.unread_counters as c (user_id, kind, scope_id, slot, unread)
  select d.user_id, d.kind, d.scope_id, floor(random() * 32)::smallint, d.delta
  from (
    select r.user_id, b.kind, b.scope_id, sum(r.delta) as delta
    from (select n.recipient_id as user_id, n.type, n.hub_id, n.post_id, 1 as delta from new_rows n where n.read_at is null
          union all
          select o.recipient_id, o.type, o.hub_id, o.post_id, -1 from old_rows o where o.read_at is null) r
    cross join lateral app_private.unread_bucket(r.type, r.hub_id, r.post_id) b
    group by r.user_id, b.kind, b.scope_id) d
  where d.delta <> 0
  order by d.user_id, d.kind, d.scope_id
  on conflict (user_id, kind, scope_id, slot) do update set unread = c.unread + excluded.unread;
  return null;
end
$$;

create function app_private.count_unread_deletes() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.lock_reposts(array(select o.post_id from old_rows o where o.type = 'post_reposted' and o.hub_id is null));
  insert into app_private.unread_counters as c (user_id, kind, scope_id, slot, unread)
  select o.recipient_id, b.kind, b.scope_id, floor(random() * 32)::smallint, -count(*)
  from old_rows o cross join lateral app_private.unread_bucket(o.type, o.hub_id, o.post_id) b
  where o.read_at is null
  group by o.recipient_id, b.kind, b.scope_id
  order by o.recipient_id, b.kind, b.scope_id
  on conflict (user_id, kind, scope_id, slot) do update set unread = c.unread + excluded.unread;
  return null;
end
$$;

create trigger notifications_count_unread_inserts
  after insert on app.notifications
  referencing new table as new_rows
  for each statement execute function app_private.count_unread_inserts();

create trigger notifications_count_unread_changes
  after update on app.notifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_unread_changes();

create trigger notifications_count_unread_deletes
  after delete on app.notifications
  referencing old table as old_rows
  for each statement execute function app_private.count_unread_deletes();

-- The global post_reposted rows of one repost, for the trigger below.
create index notifications_global_reposts on app.notifications (post_id) where type = 'post_reposted' and hub_id is null;

-- When a repost stops being visible to everyone (deleted, or its visibility changed) its unread
-- global post_reposted rows move from each recipient's 'g' bucket to the repost's 'r' bucket, and
-- back when it becomes visible to everyone again. The rows are locked first, so a mark-read of one
-- of them either finished before (and is not counted here) or waits and then counts it in the
-- bucket it is in now.
create function app_private.move_repost_unread() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_post uuid := coalesce(new.id, old.id);
  v_was boolean := app_private.repost_visible(old, null);
  v_now boolean := tg_op = 'UPDATE' and app_private.repost_visible(new, null);
begin
  if v_was = v_now then
    return null;
  end if;
  perform from app.notifications n
    where n.post_id = v_post and n.type = 'post_reposted' and n.hub_id is null and n.read_at is null
    order by n.id for update;
  insert into app_private.unread_counters as c (user_id, kind, scope_id, slot, unread)
  select m.recipient_id, m.kind, m.scope_id, floor(random() * 32)::smallint, m.delta
  from (
    select n.recipient_id, x.kind, x.scope_id, sum(x.sign * 1) as delta
    from app.notifications n
    cross join lateral (values ('g'::"char", null::uuid, case when v_now then 1 else -1 end),
                               ('r'::"char", v_post, case when v_now then -1 else 1 end)) x(kind, scope_id, sign)
    where n.post_id = v_post and n.type = 'post_reposted' and n.hub_id is null and n.read_at is null
    group by n.recipient_id, x.kind, x.scope_id) m
  order by m.recipient_id, m.kind, m.scope_id
  on conflict (user_id, kind, scope_id, slot) do update set unread = c.unread + excluded.unread;
  return null;
end
$$;

create trigger posts_move_repost_unread
  after update of deleted_at, visibility on app.posts
  for each row when (old.deleted_at is distinct from new.deleted_at or old.visibility is distinct from new.visibility)
  execute function app_private.move_repost_unread();

create trigger posts_move_repost_unread_on_delete
  after delete on app.posts
  for each row execute function app_private.move_repost_unread();

-- The visible unread rows of p_user_id, per hub (hub_id null: rows without a hub): the buckets'
-- sums, each bucket kept when its scope is visible to the user now (0200). One index range of the
-- user's counter rows: at most 32 per bucket.
create function app_private.unread_counts(p_user_id uuid)
  returns table (hub_id uuid, unread bigint)
  language sql stable
  as $$
  select case when b.kind = 'h' then b.scope_id end, sum(b.unread)::bigint
  from (
    select c.kind, c.scope_id, sum(c.unread) as unread
    from app_private.unread_counters c
    where c.user_id = p_user_id
    group by c.kind, c.scope_id
    having sum(c.unread) <> 0 and app_private.scope_visible(c.kind, c.scope_id, p_user_id)) b
  group by 1
$$;

revoke all on function app_private.unread_bucket(app.notification_type, uuid, uuid), app_private.lock_reposts(uuid[]), app_private.unread_counts(uuid) from public;

-- GET /notifications/unread-count and the list's unreadCount: the viewer's counts per hub (a row
-- with a null hub_id for rows without a hub; hubs without unread rows are absent).
create function app.unread_counts()
  returns table (hub_id uuid, unread bigint)
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return query select u.hub_id, u.unread from app_private.unread_counts(app.viewer_id()) u; end $$;

grant execute on function app.unread_counts() to app_user;

-- The counters against a recount of the rows: the (user, bucket) pairs whose counter differs from
-- the number of unread rows in that bucket now. Empty when the counters are right (tests, and an
-- operator's check: `select * from app_private.unread_counter_drift()`).
create function app_private.unread_counter_drift()
  returns table (user_id uuid, kind "char", scope_id uuid, counted bigint, actual bigint)
  language sql stable
  set search_path = pg_catalog
  as $$
  select coalesce(c.user_id, a.user_id), coalesce(c.kind, a.kind), coalesce(c.scope_id, a.scope_id),
         coalesce(c.unread, 0), coalesce(a.unread, 0)
  from (select u.user_id, u.kind, u.scope_id, sum(u.unread)::bigint as unread
        from app_private.unread_counters u group by 1, 2, 3) c
  full join (select n.recipient_id as user_id, b.kind, b.scope_id, count(*) as unread
             from app.notifications n cross join lateral app_private.unread_bucket(n.type, n.hub_id, n.post_id) b
             where n.read_at is null group by 1, 2, 3) a
    on a.user_id = c.user_id and a.kind = c.kind and a.scope_id is not distinct from c.scope_id
  where coalesce(c.unread, 0) <> coalesce(a.unread, 0)
$$;

-- The rows already there.
insert into app_private.unread_counters (user_id, kind, scope_id, slot, unread)
select n.recipient_id, b.kind, b.scope_id, 0, count(*)
from app.notifications n cross join lateral app_private.unread_bucket(n.type, n.hub_id, n.post_id) b
where n.read_at is null
group by n.recipient_id, b.kind, b.scope_id;

-- Down Migration
drop function app_private.unread_counter_drift();
drop function app.unread_counts();
drop function app_private.unread_counts(uuid);
drop trigger posts_move_repost_unread_on_delete on app.posts;
drop trigger posts_move_repost_unread on app.posts;
drop function app_private.move_repost_unread();
drop index app.notifications_global_reposts;
drop trigger notifications_count_unread_deletes on app.notifications;
drop trigger notifications_count_unread_changes on app.notifications;
drop trigger notifications_count_unread_inserts on app.notifications;
drop function app_private.count_unread_deletes();
drop function app_private.count_unread_changes();
drop function app_private.count_unread_inserts();
drop function app_private.lock_reposts(uuid[]);
drop function app_private.unread_bucket(app.notification_type, uuid, uuid);
drop table app_private.unread_counters;
