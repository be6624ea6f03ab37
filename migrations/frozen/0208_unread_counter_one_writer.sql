-- Up Migration
-- The badge counters of 0201 were written by three trigger functions (insert, update, delete of
-- app.notifications) that each repeated the same steps: lock the reposts the rows are about, find
-- each row's counting bucket, group by user and bucket, upsert into a random slot in key order.
-- They are now one function for the three triggers: it gathers the signed changes of the statement
-- (+1 a row now counted unread, -1 a row no longer counted; an update gives both for a row it
-- changed) and writes them in one statement, written once. The rules are those of 0201 unchanged.

create type app_private.unread_change as (user_id uuid, type app.notification_type, hub_id uuid, post_id uuid, delta int);

create function app_private.count_unread() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_changes app_private.unread_change[];
begin
  -- Transition tables exist only for the events that have them: each branch reads its own.
  if tg_op = 'INSERT' then
    v_changes := array(select row(n.recipient_id, n.type, n.hub_id, n.post_id, 1)::app_private.unread_change from new_rows n where n.read_at is null);
  elsif tg_op = 'DELETE' then
    v_changes := array(select row(o.recipient_id, o.type, o.hub_id, o.post_id, -1)::app_private.unread_change from old_rows o where o.read_at is null);
  else
    v_changes := array(select row(n.recipient_id, n.type, n.hub_id, n.post_id, 1)::app_private.unread_change from new_rows n where n.read_at is null
                       union all
                       select row(o.recipient_id, o.type, o.hub_id, o.post_id, -1)::app_private.unread_change from old_rows o where o.read_at is null);
  end if;
  if cardinality(v_changes) = 0 then
    return null;
  end if;
  -- The reposts first (see 0201): their visibility cannot change until this transaction ends.
  perform app_private.lock_reposts(array(select distinct c.post_id from unnest(v_changes) c where c.type = 'post_reposted' and c.hub_id is null));
  insert into app_private.unread_counters as u (user_id, kind, scope_id, slot, unread)
  select d.user_id, d.kind, d.scope_id, floor(random() * 32)::smallint, d.delta
  from (
    select c.user_id, b.kind, b.scope_id, sum(c.delta) as delta
    from unnest(v_changes) c
    cross join lateral app_private.unread_bucket(c.type, c.hub_id, c.post_id) b
    group by c.user_id, b.kind, b.scope_id) d
  where d.delta <> 0
  order by d.user_id, d.kind, d.scope_id
  on conflict (user_id, kind, scope_id, slot) do update set unread = u.unread + excluded.unread;
  return null;
end
$$;

drop trigger notifications_count_unread_inserts on app.notifications;
create trigger notifications_count_unread_inserts
  after insert on app.notifications
  referencing new table as new_rows
  for each statement execute function app_private.count_unread();

drop trigger notifications_count_unread_changes on app.notifications;
create trigger notifications_count_unread_changes
  after update on app.notifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_unread();

drop trigger notifications_count_unread_deletes on app.notifications;
create trigger notifications_count_unread_deletes
  after delete on app.notifications
  referencing old table as old_rows
  for each statement execute function app_private.count_unread();

drop function app_private.count_unread_inserts();
drop function app_private.count_unread_changes();
drop function app_private.count_unread_deletes();

revoke all on function app_private.count_unread() from public;

-- Down Migration
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

drop trigger notifications_count_unread_inserts on app.notifications;
create trigger notifications_count_unread_inserts
  after insert on app.notifications
  referencing new table as new_rows
  for each statement execute function app_private.count_unread_inserts();

drop trigger notifications_count_unread_changes on app.notifications;
create trigger notifications_count_unread_changes
  after update on app.notifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_unread_changes();

drop trigger notifications_count_unread_deletes on app.notifications;
create trigger notifications_count_unread_deletes
  after delete on app.notifications
  referencing old table as old_rows
  for each statement execute function app_private.count_unread_deletes();

drop function app_private.count_unread();
drop type app_private.unread_change;
