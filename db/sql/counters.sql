-- Counters kept in slot rows (app_private.counters) by triggers on the counted tables, and the
-- readers the API and the views use (member, comment and repost counts).
-- A slot of a counter that no other open transaction is writing, if there is one: tries the slots'
-- transaction advisory locks from a random slot on and keeps the first it gets (a try never waits);
-- when every slot is taken, the random slot, whose row the writer then waits for as it always did.
-- The row lock still orders the writers; the advisory lock only steers a writer away from a slot an
-- open transaction holds, so concurrent writers of one popular subject (an author's votesReceived,
-- a recipient's unread count) rarely wait for each other's commit. One lock per call, held to the
-- transaction's end: callers use it only for statements of a few subjects (the lock table is
-- shared and of fixed size) and a random slot otherwise.
-- PL/pgSQL, whose statements keep their plans in the session (an SQL function that cannot be inlined
-- is planned again on every statement that calls it), and no SET clause (it would save and restore
-- the settings on every call): it is an invoker function called only by functions that set
-- search_path = pg_catalog, and it names its functions with their schema.
create or replace function app_private.free_slot(
  p_key text,
  p_slots int
)
  returns smallint
  language plpgsql
  volatile
  as $$
declare
  v_start int := pg_catalog.floor(pg_catalog.random() * p_slots)::int;
begin
  for i in 0 .. p_slots - 1 loop
    if pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(p_key || ':' || ((v_start + i) % p_slots)::text, 0)) then
      return ((v_start + i) % p_slots)::smallint;
    end if;
  end loop;
  return v_start::smallint;
end
$$;

comment on function app_private.free_slot(text, integer) is
  'A slot (0 .. p_slots - 1) of the counter named p_key that no other open transaction holds (a transaction advisory lock per slot, tried from a random slot on, never waited for), else a random one. Called by app_private.add_counts and app_private.add_unread for statements of a few subjects: the writes of a vote, a comment, a follow, a notification.';

-- Adds changes to the counters: one slot per counter and subject (a free one for a statement of a
-- few changes, app_private.free_slot; a random one for a bulk statement), changes of one subject
-- summed first (a subject whose changes cancel out is not written). Rows are locked in (counter,
-- subject) order, so two transactions adding to the same subjects never deadlock.
create or replace function app_private.add_counts(
  p_changes app_private.counter_change[]
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_few boolean := cardinality(p_changes) <= 32;
begin
  insert into app_private.counters as c (counter, subject, slot, n)
    select d.counter, d.subject,
           case when v_few then app_private.free_slot('counter:' || d.counter::text || ':' || d.subject::text, 16)
                else floor(random() * 16)::smallint end,
           d.delta
    from (select x.counter, x.subject, sum(x.delta)::bigint as delta from unnest(p_changes) x group by x.counter, x.subject) d
    where d.delta <> 0
    order by d.counter, d.subject
    on conflict (counter, subject, slot) do update set n = c.n + excluded.n;
end
$$;

comment on function app_private.add_counts(app_private.counter_change[]) is
  'The one writer of app_private.counters: adds each change to one of the subject''s 16 slot rows (one no other open transaction is writing, for a statement of at most 32 changes; else a random one), in (counter, subject) order, so writers of one popular subject rarely wait on each other and never deadlock. Called by the counting trigger functions app_private.count_<table> (counters.generated.sql) and by app_private.move_votes_received (votes).';

-- A subject's count. One SQL statement, called (not inlined: PostgreSQL inlines a scalar SQL function
-- only when its body is a bare expression, without FROM or an aggregate).
create or replace function app_private.counter_value(
  p_counter app_private.counter,
  p_subject uuid
)
  returns bigint
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    coalesce(sum(c.n), 0)::bigint
  from
    app_private.counters c
  where
    c.counter = p_counter
    and c.subject = p_subject
$$;

comment on function app_private.counter_value(app_private.counter, uuid) is
  'The one reader of app_private.counters: a subject''s count, the sum of its slot rows (zero when it has none). Called by the count readers below, app.profile_social (GET /users/me/profile, GET /users/by-username/{username}) and the hub previews app.invite_link_preview and app.invitation_preview.';

-- What one row counts towards: the single definition of each counter, one function per counted
-- table under one name (app_private.counted_by, overloaded by the row's type), so the counting
-- trigger functions written from one template (counters.generated.sql) and the recount
-- app_private.counted_now call it the same way for every table.
create or replace function app_private.counted_by(
  p_row app.comments
)
  returns table(
      counter app_private.counter,
      subject uuid
)
  language sql
  immutable
  as $$
  select
    x.counter,
    x.subject
  from(
    values('post_comments'::app_private.counter, p_row.post_id, p_row.deleted_at is null),
('comment_replies', p_row.parent_id, p_row.deleted_at is null
        and p_row.parent_id is not null)) x(counter, subject, counted)
where
  x.counted
$$;

comment on function app_private.counted_by(app.comments) is
  'What one comment counts towards (post_comments of its post, comment_replies of its parent; a deleted comment nothing): the single definition of these counters, used by the counting triggers (app_private.count_comments) and by the recount app_private.counted_now.';

create or replace function app_private.counted_by(
  p_row app.posts
)
  returns table(
      counter app_private.counter,
      subject uuid
)
  language sql
  immutable
  as $$
  select
    x.counter,
    x.subject
  from(
    values('post_reposts'::app_private.counter, p_row.source_post_id, p_row.deleted_at is null
        and p_row.source_post_id is not null),
('user_posts', p_row.author_id, p_row.deleted_at is null
        and not app.post_stays_in_hubs(p_row.visibility))) x(counter, subject, counted)
where
  x.counted
$$;

comment on function app_private.counted_by(app.posts) is
  'What one post counts towards (post_reposts of the post it reposts, user_posts of its author unless it stays in its hubs (app.post_stays_in_hubs); a deleted post nothing): the single definition of these counters, used by the counting triggers (app_private.count_posts) and by the recount app_private.counted_now.';

-- Whether a post's votes count towards its author's votesReceived (the single definition, used by
-- the receipts' counting below and by the posts' trigger function app_private.move_votes_received,
-- votes.sql).
create or replace function app_private.post_counts_votes(
  p_row app.posts
)
  returns boolean
  language sql
  immutable
  as $$
  select
    p_row.deleted_at is null
$$;

comment on function app_private.post_counts_votes(app.posts) is
  'Whether a post''s receipts count towards its author''s votesReceived (not deleted). Used by app_private.counted_by(app.vote_receipts) (the receipts'' counting triggers and the recount) and app_private.move_votes_received (the posts'' trigger, votes.sql).';

-- A vote receipt counts once towards its voter's votes cast, and once towards the votes received of
-- its post's author while the post counts votes (app_private.post_counts_votes, above). It
-- reads the post: stable, not immutable like the others, and the receipts' counting triggers call
-- it only after their lock triggers took the posts' votes-received locks.
create or replace function app_private.counted_by(
  p_row app.vote_receipts
)
  returns table(
      counter app_private.counter,
      subject uuid
)
  language sql
  stable
  as $$
  select
    x.counter,
    x.subject
  from(
    values('user_votes_cast'::app_private.counter, p_row.user_id),
('user_votes_received',(
          select
            p.author_id
          from
            app.posts p
          where
            p.id = p_row.post_id
            and app_private.post_counts_votes(p)))) x(counter,
    subject)
where
  x.subject is not null
$$;

comment on function app_private.counted_by(app.vote_receipts) is
  'What one vote receipt counts towards (user_votes_cast of its voter; user_votes_received of its post''s author unless the post is deleted): the single definition of these counters, used by the counting triggers (app_private.count_vote_receipts) and by the recount app_private.counted_now.';

create or replace function app_private.counted_by(
  p_row app.follows
)
  returns table(
      counter app_private.counter,
      subject uuid
)
  language sql
  immutable
  as $$
  select
    x.counter,
    x.subject
  from(
    values('user_followers'::app_private.counter, p_row.followee_id),
('user_following', p_row.follower_id)) x(counter, subject)
$$;

comment on function app_private.counted_by(app.follows) is
  'What one follow counts towards (user_followers of the followee, user_following of the follower): the single definition of these counters, used by the counting triggers (app_private.count_follows) and by the recount app_private.counted_now.';

create or replace function app_private.counted_by(
  p_row app.hub_memberships
)
  returns table(
      counter app_private.counter,
      subject uuid
)
  language sql
  immutable
  as $$
  select
    'hub_members'::app_private.counter,
    p_row.hub_id
$$;

comment on function app_private.counted_by(app.hub_memberships) is
  'What one hub membership counts towards (hub_members of its hub): the single definition of this counter, used by the counting triggers (app_private.count_hub_memberships) and by the recount app_private.counted_now.';

create or replace function app_private.counted_by(
  p_row app.hub_discussion_messages
)
  returns table(
      counter app_private.counter,
      subject uuid
)
  language sql
  immutable
  as $$
  select
    x.counter,
    x.subject
  from(
    values('discussion_messages'::app_private.counter, p_row.discussion_id),
('message_replies', p_row.parent_id)) x(counter, subject)
where
  x.subject is not null
$$;

comment on function app_private.counted_by(app.hub_discussion_messages) is
  'What one discussion message counts towards (discussion_messages of its discussion, message_replies of its parent): kept in their own rows by the discussions triggers, so only the recount app_private.counted_now uses this definition, to check them.';

-- The receipts count towards their post's author only under the posts' votes-received locks
-- (app_private.lock_votes_received, votes.sql): taken by these triggers, which fire before the
-- receipts' counting triggers (_490_ before _500_, app_private.count_vote_receipts), so the
-- count, a statement of its own, sees what committed while they waited. The counting triggers of
-- every counted table and their functions app_private.count_<table> are written from one template
-- by npm run counting (counters.generated.sql, applied after this file).
create or replace function app_private.lock_receipt_posts()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'INSERT' then
    perform app_private.lock_votes_received(array(select distinct r.post_id from new_rows r), false);
  elsif tg_op = 'DELETE' then
    perform app_private.lock_votes_received(array(select distinct r.post_id from old_rows r), false);
  else
    perform app_private.lock_votes_received(array(select r.post_id from new_rows r union select r.post_id from old_rows r), false);
  end if;
  return null;
end
$$;

comment on function app_private.lock_receipt_posts() is
  'Takes the shared votes-received locks of the posts of the receipts a statement writes (POST /posts/{postId}/vote, the account merge of a phone sign-in, the account purge), before the receipts are counted (app_private.lock_votes_received). The function of the statement triggers _490_lock_posts_insert, _490_lock_posts_update and _490_lock_posts_delete on app.vote_receipts.';

create trigger _490_lock_posts_delete
  after delete on app.vote_receipts referencing old table as old_rows for each statement
  execute function app_private.lock_receipt_posts();

comment on trigger _490_lock_posts_delete on app.vote_receipts is
  'Takes the deleted receipts'' posts'' votes-received locks before they are counted (app_private.lock_receipt_posts).';

create trigger _490_lock_posts_insert
  after insert on app.vote_receipts referencing new table as new_rows for each statement
  execute function app_private.lock_receipt_posts();

comment on trigger _490_lock_posts_insert on app.vote_receipts is
  'Takes the inserted receipts'' posts'' votes-received locks before they are counted (app_private.lock_receipt_posts).';

create trigger _490_lock_posts_update
  after update on app.vote_receipts referencing old table as old_rows new table as new_rows for each statement
  execute function app_private.lock_receipt_posts();

comment on trigger _490_lock_posts_update on app.vote_receipts is
  'Takes the updated receipts'' posts'' votes-received locks before they are counted (app_private.lock_receipt_posts).';

-- The recount behind the reconciliation check.
create or replace function app_private.counted_now()
  returns table(
      counter app_private.counter,
      subject uuid,
      n bigint
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    k.counter,
    k.subject,
    count(*)
  from(
    select
      k.*
    from
      app.comments r,
      app_private.counted_by(r) k
    union all
    select
      k.*
    from
      app.posts r,
      app_private.counted_by(r) k
    union all
    select
      k.*
    from
      app.follows r,
      app_private.counted_by(r) k
    union all
    select
      k.*
    from
      app.hub_memberships r,
      app_private.counted_by(r) k
    union all
    select
      k.*
    from
      app.hub_discussion_messages r,
      app_private.counted_by(r) k
    union all
    select
      k.*
    from
      app.vote_receipts r,
      app_private.counted_by(r) k) k
group by
  k.counter,
  k.subject
$$;

comment on function app_private.counted_now() is
  'Every counter recounted from the rows it counts (a full scan of the counted tables): the reference of app_private.counter_drift and what app_private.rebuild_counters writes. Never read by a request.';

-- Every counter as it is kept: the sums of the slot rows, and the discussion counts in their rows.
create or replace function app_private.counted_kept()
  returns table(
      counter app_private.counter,
      subject uuid,
      n bigint
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    x.counter,
    x.subject,
    sum(x.n)::bigint
  from
    app_private.counters x
  group by
    x.counter,
    x.subject
  union all
  select
    'discussion_messages',
    s.discussion_id,
    s.message_count
  from
    app.hub_discussion_stats s
  where
    s.message_count <> 0
  union all
  select
    'message_replies',
    m.id,
    m.reply_count
  from
    app.hub_discussion_messages m
  where
    m.reply_count <> 0
$$;

comment on function app_private.counted_kept() is
  'Every counter as it is kept (slot sums, and the discussion counts kept in their rows), for app_private.counter_drift to compare with the recount.';

-- The reconciliation check: every counter whose kept value differs from a recount of the rows. No
-- rows: the counters agree with the data. A full scan of the counted tables: for a check or a
-- repair, never for a request.
create or replace function app_private.counter_drift()
  returns table(
      counter app_private.counter,
      subject uuid,
      kept bigint,
      counted bigint
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    coalesce(k.counter, c.counter),
    coalesce(k.subject, c.subject),
    coalesce(k.n, 0),
    coalesce(c.n, 0)
  from
    app_private.counted_kept() k
  full join app_private.counted_now() c on c.counter = k.counter
    and c.subject = k.subject
where
  coalesce(k.n, 0) <> coalesce(c.n, 0)
$$;

comment on function app_private.counter_drift() is
  'The reconciliation check: every counter whose kept value differs from a recount of its rows (no rows: they agree). Run by hand or by tests (test/http/counters/counters.test.ts), never by a request: it scans the counted tables.';

-- Sets every counter from the rows (one slot per subject; the discussion counts in their rows): the
-- repair after a restore or a bulk load made with triggers off.
create or replace function app_private.rebuild_counters()
  returns void
  language plpgsql
  volatile
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

comment on function app_private.rebuild_counters() is
  'The repair: sets every counter from the rows, after a restore or a bulk load made with triggers off. Run by hand (and by the bench data loader), never by a request.';

-- Readers of the counts the API shows, by the id of what they count: a post's comments and reposts,
-- a comment's replies, a hub's members. They answer
-- a number for any id (zero for an unknown one): callers read them for rows they have read through
-- the rows' policies (REST's queries; the *_stats views for internal GraphQL), and a count
-- shows nothing of the rows counted. PL/pgSQL: plans kept per connection.
create or replace function app.post_comment_count(
  p_post_id uuid
)
  returns integer
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('post_comments', p_post_id); end $$;

comment on function app.post_comment_count(uuid) is
  'A post''s comment count (commentCount) for any id: callers read it only for posts they have read through the posts policy, and a number shows nothing of the comments. Read by every post card (server/posts/card.ts: GET /posts, GET /posts/{postId}, the feeds, saved posts) and by the view app.post_stats (internal GraphQL).';

grant execute on function app.post_comment_count(uuid) to app_anonymous;

grant execute on function app.post_comment_count(uuid) to app_admin;

create or replace function app.post_repost_count(
  p_post_id uuid
)
  returns integer
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('post_reposts', p_post_id); end $$;

comment on function app.post_repost_count(uuid) is
  'A post''s repost count (repostCount) for any id: callers read it only for posts they have read through the posts policy, and a number shows nothing of the reposts. Read by every post card (server/posts/card.ts: GET /posts, GET /posts/{postId}, the feeds, saved posts) and by the view app.post_stats (internal GraphQL).';

grant execute on function app.post_repost_count(uuid) to app_anonymous;

grant execute on function app.post_repost_count(uuid) to app_admin;

create or replace function app.comment_reply_count(
  p_comment_id uuid
)
  returns integer
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('comment_replies', p_comment_id); end $$;

comment on function app.comment_reply_count(uuid) is
  'A comment''s reply count (replyCount) for any id: callers read it only for comments they have read through the comments policy. Read by GET and POST /posts/{postId}/comments (server/comments/routes.ts) and by the view app.comment_stats (internal GraphQL).';

grant execute on function app.comment_reply_count(uuid) to app_anonymous;

grant execute on function app.comment_reply_count(uuid) to app_admin;

create or replace function app.hub_member_count(
  p_hub_id uuid
)
  returns integer
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return app_private.counter_value('hub_members', p_hub_id); end $$;

comment on function app.hub_member_count(uuid) is
  'A hub''s member count (memberCount) for any id: callers read it only for hubs they have read through the hubs policy. Read by every hub shape (server/hubs/shape.ts: GET /hubs/{hubId}, GET /search/hubs, invitations, join requests), GET /users/me/hubs, the view app.hub_stats (internal GraphQL) and app_private.propagate_hub_activity.';

grant execute on function app.hub_member_count(uuid) to app_user;

grant execute on function app.hub_member_count(uuid) to app_admin;

-- The functions the counting triggers used before the rule and the counters were each stated once
-- (the generated app_private.count_<table> functions and app_private.counted_by): no caller is
-- left. count_comments, count_posts and count_follows kept their names and are replaced in place.
-- The runner drops a function after it has replaced the triggers, policies and views, so these go
-- once the triggers no longer call them; the lines go once every database has run them.
drop function if exists app_private.count_memberships();

drop function if exists app_private.count_receipts();

drop function if exists app_private.counted_by_comment(app.comments);

drop function if exists app_private.counted_by_post(app.posts);

drop function if exists app_private.counted_by_receipt(app.vote_receipts);

drop function if exists app_private.counted_by_follow(app.follows);

drop function if exists app_private.counted_by_membership(app.hub_memberships);

drop function if exists app_private.counted_by_message(app.hub_discussion_messages);
