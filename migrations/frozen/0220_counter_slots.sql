-- Up Migration
-- Counters the API shows, kept in slot rows (docs/performance.md). Comments and reposts of a post,
-- replies of a comment, followers, following and posts of a user and members of a hub were either
-- counted on every read (posts of a user: a count of all their posts per profile view) or kept in
-- one row per subject (posts.comment_count, hubs.member_count, app.follow_counts, ...), which every
-- writer of a hot subject updated: all commenters of a popular post, all followers of a popular
-- user, queued on that one row's lock until their commit. Now a subject's count is the sum of up to
-- 16 slot rows, and each write adds its change to a random slot, as vote counters do (0107):
-- concurrent writers of one subject rarely meet on a row, and a read sums at most 16 rows.
-- Discussion counts stay where 0081 keeps them (hub_discussion_stats, the root message's
-- reply_count): every message also moves its discussion's last activity, the order of the
-- discussion list, so a discussion's writers take its row's lock in any case; the reconciliation
-- check below covers them too.
--
-- One trigger function per counted table keeps its counters, in the statement that writes the rows
-- (statement-level triggers over the transition tables: a bulk write, such as a merge of accounts,
-- adds one change per subject, not one per row). What a row counts towards is written once per table
-- (app_private.counted_by_*), used by the triggers and by the reconciliation check
-- (app_private.counter_drift), which recounts from the rows and lists every counter that differs.
create type app_private.counter as enum (
  'post_comments',        -- comments of a post (replies included) that are not deleted
  'post_reposts',         -- reposts of a post that are not deleted
  'comment_replies',      -- replies of a comment that are not deleted
  'user_posts',           -- a user's posts that are not deleted and not private_locked_hub (the profile's count)
  'user_followers',       -- follows of a user
  'user_following',       -- follows by a user
  'hub_members',          -- memberships of a hub
  -- Kept by 0081's trigger in app.hub_discussion_stats and hub_discussion_messages.reply_count;
  -- named here for the reconciliation check.
  'discussion_messages',  -- messages of a discussion (replies included)
  'message_replies'       -- replies of a discussion message
);

create table app_private.counters (
  counter app_private.counter not null,
  subject uuid not null,
  slot smallint not null check (slot between 0 and 15),
  -- A slot's share of the count; one slot may be negative (a delete landing on another slot than
  -- its insert), the sum over a subject's slots is the count.
  n bigint not null,
  primary key (counter, subject, slot)
);
comment on table app_private.counters is
  'Counters shown by the API, as sums of up to 16 slot rows per subject (0220). Written only by the counting triggers; read through app_private.counter_value.';

-- A change to one counter: `delta` rows more (or fewer) of `subject`.
create type app_private.counter_change as (counter app_private.counter, subject uuid, delta bigint);

-- Adds changes to the counters: one random slot per counter and subject, changes of one subject
-- summed first (a subject whose changes cancel out is not written). Rows are locked in (counter,
-- subject) order, so two transactions adding to the same subjects never deadlock.
create function app_private.add_counts(p_changes app_private.counter_change[])
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  insert into app_private.counters as c (counter, subject, slot, n)
    select d.counter, d.subject, floor(random() * 16)::smallint, d.delta
    from (select x.counter, x.subject, sum(x.delta)::bigint as delta from unnest(p_changes) x group by x.counter, x.subject) d
    where d.delta <> 0
    order by d.counter, d.subject
    on conflict (counter, subject, slot) do update set n = c.n + excluded.n;
end
$$;

-- A subject's count. Plain SQL: inlined into the functions that read it.
create function app_private.counter_value(p_counter app_private.counter, p_subject uuid)
  returns bigint
  language sql stable
  set search_path = pg_catalog
  as $$
  select coalesce(sum(c.n), 0)::bigint from app_private.counters c where c.counter = p_counter and c.subject = p_subject
$$;

-- What one row counts towards: the single definition of each counter, used by the triggers below
-- and by app_private.counter_drift.
create function app_private.counted_by_comment(p_row app.comments)
  returns table (counter app_private.counter, subject uuid)
  language sql immutable
  as $$
  select x.counter, x.subject
  from (values ('post_comments'::app_private.counter, p_row.post_id, p_row.deleted_at is null),
               ('comment_replies', p_row.parent_id, p_row.deleted_at is null and p_row.parent_id is not null)) x (counter, subject, counted)
  where x.counted
$$;

create function app_private.counted_by_post(p_row app.posts)
  returns table (counter app_private.counter, subject uuid)
  language sql immutable
  as $$
  select x.counter, x.subject
  from (values ('post_reposts'::app_private.counter, p_row.source_post_id, p_row.deleted_at is null and p_row.source_post_id is not null),
               ('user_posts', p_row.author_id, p_row.deleted_at is null and p_row.visibility <> 'private_locked_hub')) x (counter, subject, counted)
  where x.counted
$$;

create function app_private.counted_by_follow(p_row app.follows)
  returns table (counter app_private.counter, subject uuid)
  language sql immutable
  as $$
  select x.counter, x.subject
  from (values ('user_followers'::app_private.counter, p_row.followee_id), ('user_following', p_row.follower_id)) x (counter, subject)
$$;

create function app_private.counted_by_membership(p_row app.hub_memberships)
  returns table (counter app_private.counter, subject uuid)
  language sql immutable
  as $$
  select 'hub_members'::app_private.counter, p_row.hub_id
$$;

create function app_private.counted_by_message(p_row app.hub_discussion_messages)
  returns table (counter app_private.counter, subject uuid)
  language sql immutable
  as $$
  select x.counter, x.subject
  from (values ('discussion_messages'::app_private.counter, p_row.discussion_id), ('message_replies', p_row.parent_id)) x (counter, subject)
  where x.subject is not null
$$;

-- The counting triggers: one function per table, run once per statement for inserts, updates and
-- deletes (three triggers: PostgreSQL allows transition tables only on single-event triggers).
-- An update adds what its new rows count and takes away what its old rows counted.
create function app_private.count_comments()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_comment(r) k));
  elsif tg_op = 'DELETE' then
    perform app_private.add_counts(array(select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_comment(r) k));
  else
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_comment(r) k
                                         union all
                                         select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_comment(r) k));
  end if;
  return null;
end
$$;

create function app_private.count_posts()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_post(r) k));
  elsif tg_op = 'DELETE' then
    perform app_private.add_counts(array(select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_post(r) k));
  else
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_post(r) k
                                         union all
                                         select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_post(r) k));
  end if;
  return null;
end
$$;

create function app_private.count_follows()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_follow(r) k));
  elsif tg_op = 'DELETE' then
    perform app_private.add_counts(array(select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_follow(r) k));
  else
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_follow(r) k
                                         union all
                                         select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_follow(r) k));
  end if;
  return null;
end
$$;

create function app_private.count_memberships()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_membership(r) k));
  elsif tg_op = 'DELETE' then
    perform app_private.add_counts(array(select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_membership(r) k));
  else
    perform app_private.add_counts(array(select (k.counter, k.subject, 1)::app_private.counter_change from new_rows r, app_private.counted_by_membership(r) k
                                         union all
                                         select (k.counter, k.subject, -1)::app_private.counter_change from old_rows r, app_private.counted_by_membership(r) k));
  end if;
  return null;
end
$$;

create trigger comments_counted_insert after insert on app.comments referencing new table as new_rows
  for each statement execute function app_private.count_comments();
create trigger comments_counted_update after update on app.comments referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_comments();
create trigger comments_counted_delete after delete on app.comments referencing old table as old_rows
  for each statement execute function app_private.count_comments();
create trigger posts_counted_insert after insert on app.posts referencing new table as new_rows
  for each statement execute function app_private.count_posts();
create trigger posts_counted_update after update on app.posts referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_posts();
create trigger posts_counted_delete after delete on app.posts referencing old table as old_rows
  for each statement execute function app_private.count_posts();
create trigger follows_counted_insert after insert on app.follows referencing new table as new_rows
  for each statement execute function app_private.count_follows();
create trigger follows_counted_update after update on app.follows referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_follows();
create trigger follows_counted_delete after delete on app.follows referencing old table as old_rows
  for each statement execute function app_private.count_follows();
create trigger hub_memberships_counted_insert after insert on app.hub_memberships referencing new table as new_rows
  for each statement execute function app_private.count_memberships();
create trigger hub_memberships_counted_update after update on app.hub_memberships referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_memberships();
create trigger hub_memberships_counted_delete after delete on app.hub_memberships referencing old table as old_rows
  for each statement execute function app_private.count_memberships();

-- Every counter as the rows say it should be (the recount behind the reconciliation check).
create function app_private.counted_now()
  returns table (counter app_private.counter, subject uuid, n bigint)
  language sql stable
  set search_path = pg_catalog
  as $$
  select k.counter, k.subject, count(*)
  from (select k.* from app.comments r, app_private.counted_by_comment(r) k
        union all select k.* from app.posts r, app_private.counted_by_post(r) k
        union all select k.* from app.follows r, app_private.counted_by_follow(r) k
        union all select k.* from app.hub_memberships r, app_private.counted_by_membership(r) k
        union all select k.* from app.hub_discussion_messages r, app_private.counted_by_message(r) k) k
  group by k.counter, k.subject
$$;

-- Every counter as it is kept: the sums of the slot rows, and the discussion counts in their rows.
create function app_private.counted_kept()
  returns table (counter app_private.counter, subject uuid, n bigint)
  language sql stable
  set search_path = pg_catalog
  as $$
  select x.counter, x.subject, sum(x.n)::bigint from app_private.counters x group by x.counter, x.subject
  union all
  select 'discussion_messages', s.discussion_id, s.message_count from app.hub_discussion_stats s where s.message_count <> 0
  union all
  select 'message_replies', m.id, m.reply_count from app.hub_discussion_messages m where m.reply_count <> 0
$$;

-- The reconciliation check: every counter whose kept value differs from a recount of the rows. No
-- rows: the counters agree with the data. A full scan of the counted tables: for a check or a
-- repair, never for a request.
create function app_private.counter_drift()
  returns table (counter app_private.counter, subject uuid, kept bigint, counted bigint)
  language sql stable
  set search_path = pg_catalog
  as $$
  select coalesce(k.counter, c.counter), coalesce(k.subject, c.subject), coalesce(k.n, 0), coalesce(c.n, 0)
  from app_private.counted_kept() k
  full join app_private.counted_now() c on c.counter = k.counter and c.subject = k.subject
  where coalesce(k.n, 0) <> coalesce(c.n, 0)
$$;

-- Sets every counter from the rows (one slot per subject; the discussion counts in their rows): the
-- backfill below, and the repair after a restore or a bulk load made with triggers off.
create function app_private.rebuild_counters()
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  lock table app_private.counters, app.hub_discussion_stats in exclusive mode;
  create temporary table rebuild_counted on commit drop as select * from app_private.counted_now();
  delete from app_private.counters;
  insert into app_private.counters (counter, subject, slot, n)
    select c.counter, c.subject, 0, c.n from pg_temp.rebuild_counted c where c.counter not in ('discussion_messages', 'message_replies');
  delete from app.hub_discussion_stats;
  insert into app.hub_discussion_stats (discussion_id, hub_id, message_count)
    select c.subject, d.hub_id, c.n from pg_temp.rebuild_counted c join app.hub_discussions d on d.id = c.subject
    where c.counter = 'discussion_messages';
  update app.hub_discussion_messages m set reply_count = 0
    where m.reply_count <> 0 and not exists (select from pg_temp.rebuild_counted c where c.counter = 'message_replies' and c.subject = m.id);
  update app.hub_discussion_messages m set reply_count = c.n
    from pg_temp.rebuild_counted c where c.counter = 'message_replies' and c.subject = m.id and m.reply_count <> c.n;
  drop table pg_temp.rebuild_counted;
end
$$;

select app_private.rebuild_counters();

-- Readers of the counts the API shows, by the id of what they count: a post's comments and reposts,
-- a comment's replies, a hub's members. They answer
-- a number for any id (zero for an unknown one): callers read them for rows they have read through
-- the rows' policies (REST's queries; the *_stats views of 0221 for internal GraphQL), and a count
-- shows nothing of the rows counted. PL/pgSQL: plans kept per connection.
create function app.post_comment_count(p_post_id uuid)
  returns integer
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('post_comments', p_post_id); end $$;

create function app.post_repost_count(p_post_id uuid)
  returns integer
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('post_reposts', p_post_id); end $$;

create function app.comment_reply_count(p_comment_id uuid)
  returns integer
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('comment_replies', p_comment_id); end $$;

create function app.hub_member_count(p_hub_id uuid)
  returns integer
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('hub_members', p_hub_id); end $$;

grant execute on function app.post_comment_count(uuid), app.post_repost_count(uuid), app.comment_reply_count(uuid) to app_anonymous, app_admin;
grant execute on function app.hub_member_count(uuid) to app_user, app_admin;

-- Down Migration
drop function app.post_comment_count(uuid), app.post_repost_count(uuid), app.comment_reply_count(uuid), app.hub_member_count(uuid);
drop function app_private.rebuild_counters(), app_private.counter_drift(), app_private.counted_now(), app_private.counted_kept();
drop trigger comments_counted_insert on app.comments;
drop trigger comments_counted_update on app.comments;
drop trigger comments_counted_delete on app.comments;
drop trigger posts_counted_insert on app.posts;
drop trigger posts_counted_update on app.posts;
drop trigger posts_counted_delete on app.posts;
drop trigger follows_counted_insert on app.follows;
drop trigger follows_counted_update on app.follows;
drop trigger follows_counted_delete on app.follows;
drop trigger hub_memberships_counted_insert on app.hub_memberships;
drop trigger hub_memberships_counted_update on app.hub_memberships;
drop trigger hub_memberships_counted_delete on app.hub_memberships;
drop function app_private.count_comments(), app_private.count_posts(), app_private.count_follows(), app_private.count_memberships();
drop function app_private.counted_by_comment(app.comments), app_private.counted_by_post(app.posts), app_private.counted_by_follow(app.follows),
  app_private.counted_by_membership(app.hub_memberships), app_private.counted_by_message(app.hub_discussion_messages);
drop function app_private.counter_value(app_private.counter, uuid), app_private.add_counts(app_private.counter_change[]);
drop type app_private.counter_change;
drop table app_private.counters;
drop type app_private.counter;
