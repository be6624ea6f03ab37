-- Up Migration
-- stats.votesCast and stats.votesReceived as maintained counters (docs/performance.md): the votes on a user's posts
-- that are not deleted, kept in counter slots (0220) by triggers on the two tables the number
-- depends on, so every writer of either (the vote, account merge and purge, post deletion, account
-- hiding and its restore, moderation) keeps it without knowing about it. The profile reads at most
-- 16 slot rows, however many votes the author received.
--
-- What a vote receipt counts towards depends on another table's row (its post: its author, and
-- whether it is deleted), so the two triggers must not miss each other's uncommitted changes:
-- a vote whose receipt trigger read the post before a concurrent deletion committed must be in the
-- count the deletion takes away, and a deletion must not take away a vote it cannot see yet. Both
-- sides take a transaction-scoped advisory lock before they read the other table: the receipt side
-- shared, per post, the post side exclusive, per post. A deletion therefore waits for the votes in
-- flight on its post and counts them once they are committed; a vote that comes after waits for
-- the deletion and then sees the post deleted. A statement touching more than 32 posts (a merge
-- or purge of an account, hiding an account's posts) takes one exclusive lock on the whole counter
-- instead of one lock per post (advisory locks live in a fixed shared table), and every
-- single-post writer takes that one shared: the two kinds wait for each other too. Advisory locks
-- write nothing: the vote's cost is a lock table entry, not a row lock on the hot post.

-- Whether a post's votes count towards its author's votesReceived (the single definition, used by
-- both triggers and by the recount).
create function app_private.post_counts_votes(p_row app.posts)
  returns boolean
  language sql immutable
  as $$ select p_row.deleted_at is null $$;

-- Takes the locks described above for the posts `p_posts` (shared: a receipt writer; exclusive: a
-- writer of the posts themselves).
create function app_private.lock_votes_received(p_posts uuid[], p_exclusive boolean)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_whole bigint := hashtextextended('votes_received', 0);
begin
  if cardinality(p_posts) = 0 then
    return;
  end if;
  if cardinality(p_posts) > 32 then
    perform pg_advisory_xact_lock(v_whole);
    return;
  end if;
  perform pg_advisory_xact_lock_shared(v_whole);
  -- In post order: two writers locking several posts exclusively never wait for each other in a circle.
  if p_exclusive then
    perform pg_advisory_xact_lock(hashtextextended('votes_received:' || p, 0)) from unnest(p_posts) p order by p;
  else
    perform pg_advisory_xact_lock_shared(hashtextextended('votes_received:' || p, 0)) from unnest(p_posts) p order by p;
  end if;
end
$$;

-- Vote receipts: one vote more (or fewer) cast by the receipt's user, and received by the author of
-- its post if the post counts. The post is read after the lock, in a statement of its own (a
-- snapshot that sees what committed while the trigger waited). Votes cast depend on the receipt
-- alone.
create function app_private.count_receipts()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    perform app_private.lock_votes_received(array(select distinct r.post_id from new_rows r), false);
    perform app_private.add_counts(array(
      select ('user_votes_received', p.author_id, 1)::app_private.counter_change
      from new_rows r join app.posts p on p.id = r.post_id where app_private.post_counts_votes(p)
      union all
      select ('user_votes_cast', r.user_id, 1)::app_private.counter_change from new_rows r));
  elsif tg_op = 'DELETE' then
    perform app_private.lock_votes_received(array(select distinct r.post_id from old_rows r), false);
    perform app_private.add_counts(array(
      select ('user_votes_received', p.author_id, -1)::app_private.counter_change
      from old_rows r join app.posts p on p.id = r.post_id where app_private.post_counts_votes(p)
      union all
      select ('user_votes_cast', r.user_id, -1)::app_private.counter_change from old_rows r));
  else
    perform app_private.lock_votes_received(array(select r.post_id from new_rows r union select r.post_id from old_rows r), false);
    perform app_private.add_counts(array(
      select ('user_votes_received', p.author_id, 1)::app_private.counter_change
      from new_rows r join app.posts p on p.id = r.post_id where app_private.post_counts_votes(p)
      union all
      select ('user_votes_received', p.author_id, -1)::app_private.counter_change
      from old_rows r join app.posts p on p.id = r.post_id where app_private.post_counts_votes(p)
      union all
      select ('user_votes_cast', r.user_id, 1)::app_private.counter_change from new_rows r
      union all
      select ('user_votes_cast', r.user_id, -1)::app_private.counter_change from old_rows r));
  end if;
  return null;
end
$$;

create trigger vote_receipts_counted_insert after insert on app.vote_receipts referencing new table as new_rows
  for each statement execute function app_private.count_receipts();
create trigger vote_receipts_counted_update after update on app.vote_receipts referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.count_receipts();
create trigger vote_receipts_counted_delete after delete on app.vote_receipts referencing old table as old_rows
  for each statement execute function app_private.count_receipts();

-- Posts: a post whose votes start or stop counting (deleted, restored, purged, or moved to another
-- author by an account merge) moves its receipts' number between authors. Only posts whose author
-- or counting changed are locked and counted; the count reads the post's receipts through their
-- primary key, once, on this rare write.
create function app_private.move_votes_received()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_changed uuid[];
begin
  if tg_op = 'DELETE' then
    v_changed := array(select o.id from old_rows o where app_private.post_counts_votes(o));
  else
    v_changed := array(
      select n.id from new_rows n join old_rows o on o.id = n.id
      where app_private.post_counts_votes(n) is distinct from app_private.post_counts_votes(o)
         or (app_private.post_counts_votes(n) and n.author_id is distinct from o.author_id));
  end if;
  if cardinality(v_changed) = 0 then
    return null;
  end if;
  perform app_private.lock_votes_received(v_changed, true);
  if tg_op = 'DELETE' then
    perform app_private.add_counts(array(
      select ('user_votes_received', o.author_id, -(select count(*) from app.vote_receipts r where r.post_id = o.id))::app_private.counter_change
      from old_rows o where o.id = any (v_changed)));
  else
    perform app_private.add_counts(array(
      select ('user_votes_received', x.author_id, x.sign * (select count(*) from app.vote_receipts r where r.post_id = x.id))::app_private.counter_change
      from (select n.id, n.author_id, 1 as sign from new_rows n where n.id = any (v_changed) and app_private.post_counts_votes(n)
            union all
            select o.id, o.author_id, -1 from old_rows o where o.id = any (v_changed) and app_private.post_counts_votes(o)) x));
  end if;
  return null;
end
$$;

create trigger posts_votes_received_update after update on app.posts referencing old table as old_rows new table as new_rows
  for each statement execute function app_private.move_votes_received();
create trigger posts_votes_received_delete after delete on app.posts referencing old table as old_rows
  for each statement execute function app_private.move_votes_received();

-- The recount behind the reconciliation check (0220's, with the receipts).
create or replace function app_private.counted_now()
  returns table (counter app_private.counter, subject uuid, n bigint)
  language sql stable
  set search_path = pg_catalog
  as $$
  select k.counter, k.subject, count(*)
  from (select k.* from app.comments r, app_private.counted_by_comment(r) k
        union all select k.* from app.posts r, app_private.counted_by_post(r) k
        union all select k.* from app.follows r, app_private.counted_by_follow(r) k
        union all select k.* from app.hub_memberships r, app_private.counted_by_membership(r) k
        union all select k.* from app.hub_discussion_messages r, app_private.counted_by_message(r) k
        union all select 'user_votes_received'::app_private.counter, p.author_id
                  from app.vote_receipts r join app.posts p on p.id = r.post_id where app_private.post_counts_votes(p)
        union all select 'user_votes_cast', r.user_id from app.vote_receipts r) k
  group by k.counter, k.subject
$$;

-- The counter from the rows as they are (no concurrent votes: the migration holds the tables).
lock table app.vote_receipts, app.posts in share mode;
insert into app_private.counters (counter, subject, slot, n)
  select 'user_votes_received', p.author_id, 0, count(*)
  from app.vote_receipts r join app.posts p on p.id = r.post_id
  where app_private.post_counts_votes(p)
  group by p.author_id;
insert into app_private.counters (counter, subject, slot, n)
  select 'user_votes_cast', r.user_id, 0, count(*) from app.vote_receipts r group by r.user_id;

-- The profile reads the counters (0221's function otherwise unchanged).
create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint, out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select app_private.counter_value('user_followers', p_user_id), app_private.counter_value('user_following', p_user_id),
         app_private.counter_value('user_posts', p_user_id),
         case when p_user_id = app.viewer_id() then app_private.counter_value('user_votes_cast', p_user_id) end,
         app_private.counter_value('user_votes_received', p_user_id),
         coalesce((select jsonb_agg(jsonb_build_object('id', h.id, 'name', h.name, 'photoKey', a.object_key) order by h.name)
                   from app.hub_memberships m
                   join app.hubs h on h.id = m.hub_id
                   left join app.assets a on a.id = h.profile_asset_id
                   where m.user_id = p_user_id and m.role in ('admin', 'super_admin') and app.viewer_id() is not null), '[]'),
         app.viewer_follows(p_user_id),
         exists (select from app.follows f where f.follower_id = p_user_id and f.followee_id = app.viewer_id()),
         exists (select from app.blocks b where b.blocker_id = app.viewer_id() and b.blocked_id = p_user_id)
$$;
