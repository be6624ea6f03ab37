-- Users: profiles, handles and blocks (the block list every read filters by), name search
-- words, and the user merge of a sign-in that finds a second account.
create or replace function app_private.users_reject_reserved_handle()
  returns trigger
  language plpgsql
  as $$
begin
  if new.username is not null and exists (select from app.reserved_handles where handle = new.username) then
    perform app.fail('USERNAME_TAKEN');
  end if;
  return new;
end
$$;

comment on function app_private.users_reject_reserved_handle() is
  'Keeps reserved handles out of app.users.username (USERNAME_TAKEN), whoever writes the handle. Runs from the trigger _110_reject_reserved_handle on app.users, on the writes of PUT /users/me/onboarding/profile-basics and PATCH /users/me/profile.';

-- The viewer's onboarding progress. GET /users/me/onboarding/status sends its session check inside
-- this statement (p_required, the endpoint's level), so the request is one statement: the status
-- read is the session check's read too (the viewer's row, joined to the live session: no second
-- read of the user), and the gate (app.session_gate: UNAUTHORIZED when the session is not live, a
-- 403 code below p_required) runs on it before anything is returned. The writes' answers and
-- GraphQL read it through app.onboarding_status() with no gate (p_required null).
create or replace function app.onboarding_status_gated(
  p_required int
)
  returns table(
      access_level int,
      profile_basics_completed boolean,
      media_completed boolean,
      phone_confirmed boolean,
      contacts_synced_at timestamptz
)
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_live boolean;
  v_level int;
begin
  select app.access_level_of(u.full_name, u.username, u.terms_accepted_at, p.user_id is not null, u.media_completed_at, u.contacts_synced_at),
         u.full_name is not null and u.username is not null and u.terms_accepted_at is not null,
         u.media_completed_at is not null,
         p.user_id is not null,
         u.contacts_synced_at,
         p_required is null or exists (select from app_private.live_session(app.viewer_session_id(), u.id))
    into access_level, profile_basics_completed, media_completed, phone_confirmed, contacts_synced_at, v_live
    from app.users u
    left join app.phone_identities p on p.user_id = u.id
    where u.id = app.viewer_id();
  if p_required is not null then
    -- (An assignment, not perform: a function call over variables is then a simple expression,
    -- evaluated without a statement of its own to start and end.)
    v_level := app.session_gate(case when v_live then access_level end, p_required);
  end if;
  -- (v_live is null when the viewer has no row: no status.)
  if v_live is not null then
    return next;
  end if;
end
$$;

comment on function app.onboarding_status_gated(integer) is
  'The viewer''s onboarding progress and access level, one row, read together with the session check at level p_required (app_private.live_session, then app.session_gate on the row''s level; no check when null). Called by GET /users/me/onboarding/status.';

grant execute on function app.onboarding_status_gated(int) to app_user;

create or replace function app.onboarding_status()
  returns table(
      access_level int,
      profile_basics_completed boolean,
      media_completed boolean,
      phone_confirmed boolean,
      contacts_synced_at timestamptz
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    *
  from
    app.onboarding_status_gated(null)
$$;

comment on function app.onboarding_status() is
  'The viewer''s onboarding progress and access level, one row (app.onboarding_status_gated without a session check: the request checked it). Called by the onboarding writes (PUT /users/me/onboarding/...); also a GraphQL field (server/graphql/exposure.ts).';

grant execute on function app.onboarding_status() to app_user;

create or replace function app_private.merge_user(
  p_source uuid,
  p_target uuid
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_step regprocedure;
begin
  for v_step in select s.step from app_private.user_merge_steps s order by s.position loop
    execute format('select %s($1, $2)', v_step::regproc) using p_source, p_target;
  end loop;
  update app.users set merged_into = p_target where id = p_source;
  update app.sessions set revoked_at = now() where user_id = p_source and revoked_at is null;
end
$$;

comment on function app_private.merge_user(uuid, uuid) is
  'Merges a second account into the one a sign-in found: runs each step of app_private.user_merge_steps in order, marks the source merged and revokes its sessions. Called by app_private.sign_in_phone (POST /auth/otp/verify, POST /auth/idp/token).';

-- A profile's counts, read from the maintained counters (not counted), the hubs the user
-- administers, and the viewer's follow and block relation to the user.
create or replace function app.profile_social(
  p_user_id uuid,
  out followers bigint,
  out following bigint,
  out posts bigint,
  out votes_cast bigint,
  out votes_received bigint,
  out admin_hubs jsonb,
  out viewer_follows boolean,
  out viewer_followed_by boolean,
  out viewer_blocked boolean
)
language sql
stable
security definer
set search_path = pg_catalog
as $$
  select
    app_private.counter_value('user_followers', p_user_id),
    app_private.counter_value('user_following', p_user_id),
    app_private.counter_value('user_posts', p_user_id),
    case when p_user_id = app.viewer_id() then
      app_private.counter_value('user_votes_cast', p_user_id)
    end,
    app_private.counter_value('user_votes_received', p_user_id),
    coalesce((
      select
        jsonb_agg(jsonb_build_object('id', h.id, 'name', h.name, 'photoKey', app.image_key(a.status, a.display_key, a.object_key))
      order by h.name)
      from app.hub_memberships m
      join app.hubs h on h.id = m.hub_id
      left join app.assets a on a.id = h.profile_asset_id
      where
        m.user_id = p_user_id
        and m.role in('admin', 'super_admin')
        and app.viewer_id() is not null), '[]'),
    app.viewer_follows(p_user_id),
    exists(
      select
      from
        app.follows f
      where
        f.follower_id = p_user_id
        and f.followee_id = app.viewer_id()),
      exists(
        select
        from
          app.blocks b
        where
          b.blocker_id = app.viewer_id()
          and b.blocked_id = p_user_id)
$$;

comment on function app.profile_social(uuid) is
  'The counts (from the slot counters) and the viewer relations (follows, followed by, blocked) of a profile, and the hubs the user administers; votes cast only for the viewer''s own profile. Read by GET /users/me/profile, PATCH /users/me/profile and GET /users/by-username/{username} (server/users/profile.ts).';

grant execute on function app.profile_social(uuid) to app_anonymous;

-- Profile basics: name, canonical handle and accepted terms. Reaches level 2.
create or replace function app.complete_profile_basics(
  p_full_name text,
  p_username text,
  p_terms_version text
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  update app.users
    set full_name = p_full_name, username = p_username,
        terms_version = p_terms_version, terms_accepted_at = coalesce(terms_accepted_at, now())
    where id = app.viewer_id();
end
$$;

comment on function app.complete_profile_basics(text, text, text) is
  'Sets the viewer''s full name, handle and accepted terms version, the step that reaches access level 2. Called by PUT /users/me/onboarding/profile-basics.';

grant execute on function app.complete_profile_basics(text, text, text) to app_user;

-- The one-time contacts acknowledgement. Needs level 3; later OS permission changes never clear it.
create or replace function app.acknowledge_contacts()
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform app.require_level(app.access_level('phone'));
  update app.users set contacts_synced_at = coalesce(contacts_synced_at, now()) where id = app.viewer_id();
end
$$;

comment on function app.acknowledge_contacts() is
  'Records the one-time contacts acknowledgement (needs level 3; reaches level 4), never cleared afterwards. Called by PUT /users/me/onboarding/contacts.';

grant execute on function app.acknowledge_contacts() to app_user;

-- Handle alternatives always long enough: the numeric suffix is 2 to 4 digits, so a one-letter
-- base ("a!" typed, "a" usable) still yields 3-character handles.
create or replace function app.handle_availability(
  p_handle text,
  out available boolean,
  out reason text,
  out alternatives text[]
)
language plpgsql
volatile
security definer
set search_path = pg_catalog
as $$
declare
  v_base text;
begin
  if p_handle !~ '^[a-z0-9_]{3,30}$' then
    reason := 'invalid';
  elsif exists (select from app.reserved_handles r where r.handle = p_handle) then
    reason := 'reserved';
  elsif exists (select from app.users u where u.username = p_handle) then
    reason := 'taken';
  end if;
  available := reason is null;
  alternatives := '{}';
  if available then
    return;
  end if;
  -- Up to three numeric-suffix alternatives that are free now: the usable part of the handle,
  -- or "user" when nothing usable is left, plus a random number of 2 to 4 digits.
  v_base := left(regexp_replace(p_handle, '[^a-z0-9_]', '', 'g'), 26);
  if v_base = '' then
    v_base := 'user';
  end if;
  select coalesce(array_agg(c.handle order by c.n), '{}') into alternatives
  from (
    select distinct on (handle) handle, n
    from (select v_base || n::text as handle, n
          from (select case when g <= 6 then 10 + floor(random() * 90) else 100 + floor(random() * 9900) end::int as n
                from generate_series(1, 12) g) r) k
    where k.handle ~ '^[a-z0-9_]{3,30}$'
      and not exists (select from app.users u where u.username = k.handle)
      and not exists (select from app.reserved_handles rh where rh.handle = k.handle)
    limit 3
  ) c;
end
$$;

comment on function app.handle_availability(text) is
  'Whether a handle is free (invalid, reserved or taken otherwise), with up to three free numeric-suffix alternatives; reserves nothing. Called by POST /users/handles/availability.';

grant execute on function app.handle_availability(text) to app_user;

-- The block rule in one place: the viewer's block list (used by the post, comment, user and
-- follow policies) is app.user_block_list applied to the viewer; its query is app_private.block_list,
-- which live delivery also reads for each recipient.
create or replace function app.viewer_block_list()
  returns uuid[]
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
begin
  return app.user_block_list(app.viewer_id());
end
$$;

comment on function app.viewer_block_list() is
  'The block rule applied to the viewer: everyone the viewer blocked or is blocked by. Used by the select policies of users, follows, posts, comments and discussion messages, by app.can_see_post, app_private.feed_page, app.create_comment, app.delete_comment, app.hub_discussion_thread, app.report_user, app.follow_user and app.unfollow_user.';

grant execute on function app.viewer_block_list() to app_anonymous;

-- Blocks the target. Any existing user can be blocked, also one who blocked the viewer first.
create or replace function app.block_user(
  p_target uuid
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app.block_user(uuid) is
  'Blocks a user (not oneself; ALREADY_BLOCKED when blocked already); the trigger _300_remove_follows on app.blocks drops the follows between the two. Called by POST /users/{userId}/block.';

grant execute on function app.block_user(uuid) to app_user;

-- Removes the viewer's block of the target; a no-op when there is none.
create or replace function app.unblock_user(
  p_target uuid
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.users u where u.id = p_target and u.merged_into is null) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  delete from app.blocks where blocker_id = app.viewer_id() and blocked_id = p_target;
end
$$;

comment on function app.unblock_user(uuid) is
  'Removes the viewer''s block of a user, a no-op when there is none. Called by DELETE /users/{userId}/block.';

grant execute on function app.unblock_user(uuid) to app_user;

-- Blocking removes follows both ways, in the block's transaction.
create or replace function app_private.blocks_remove_follows()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  delete from app.follows
  where (follower_id = new.blocker_id and followee_id = new.blocked_id)
     or (follower_id = new.blocked_id and followee_id = new.blocker_id);
  return null;
end
$$;

comment on function app_private.blocks_remove_follows() is
  'A block ends the follows between the two users, both ways, in the block transaction. Runs from the trigger _300_remove_follows on app.blocks (POST /users/{userId}/block, and the block merge of app_private.merge_user).';

-- Whether a word of a name starts with a normalised query (app.search_text of what was typed).
-- Inlined by the planner, so a trigram index on app.search_text(name) serves it.
create or replace function app.name_words_match(
  p_name text,
  p_query text
)
  returns boolean
  language sql
  immutable parallel safe
  as $$
  select app.search_text(p_name) ~ ('(^|[^[:alnum:]])' || regexp_replace(p_query, '([^[:alnum:][:space:]])', '\\\1', 'g'))
$$;

comment on function app.name_words_match(text, text) is
  'Whether a word of a name starts with a normalised query; inlined, so the trigram index on app.search_text(name) serves it. Used by GET /search/users, GET /search/hubs and app.user_matches.';

grant execute on function app.name_words_match(text, text) to app_anonymous;

-- The users with a name word starting with the first word of p_query (as typed), by that word and
-- user id after (p_after_word, p_after_id) (null: from the first), each user once (at the first of
-- their words that matches), with a handle that does not start with the query (those are found by
-- handle), rechecked with app.name_words_match, at most p_limit rows, through the name words' and
-- users' policies (the caller's rights): rank 2 of GET /search/users. The words come from a cursor,
-- which PL/pgSQL plans for its first rows, so it walks user_name_words_word in order and checks
-- each word's user by a probe (a lateral subquery with its own limit, which the planner cannot turn
-- into a join that starts from the users), whatever the statistics say the word holds: one word in
-- every name is read a page at a time (docs/performance.md, "Hot values").
create or replace function app.user_name_matches(
  p_query text,
  p_after_word text,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      word text,
      user_id uuid,
      username text,
      full_name text,
      bio text,
      profile_asset_id uuid
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_q text := app.search_text(p_query);
  v_first text collate "C" := (regexp_match(app.search_text(p_query), '[[:alnum:]]+'))[1];
  v_several boolean := app.search_text(p_query) ~ '[[:alnum:]][^[:alnum:]]+[[:alnum:]]';
  v_last text collate "C";
  v_pattern text collate "C";
  v_word text collate "C" := p_after_word;
  v_id uuid := coalesce(p_after_id, '00000000-0000-0000-0000-000000000000');
  v_handle text := replace(replace(replace(app.search_text(p_query), '\', '\\'), '%', '\%'), '_', '\_') || '%';
begin
  -- The last word a match can be: the first word itself when the query has several, else the
  -- first word followed by the highest character (the range the index reads).
  v_last := v_first || case when v_several then '' else chr(1114111) end;
  v_pattern := v_first || case when v_several then '' else '%' end;
  -- Without a cursor the walk starts at (first word, nil id), so that the position is also where
  -- the index is entered (the range of >= and the row comparison are not merged, and a position
  -- before the range entered the index at its first word).
  v_word := coalesce(v_word, v_first);
  open v_rows no scroll for
    select w.word, u.id, u.username, u.full_name, u.bio, u.profile_asset_id
    from app.user_name_words w
    cross join lateral (
      select u.id, u.username, u.full_name, u.bio, u.profile_asset_id from app.users u
      where u.id = w.user_id
        and u.username is not null
        and not (u.username like v_handle)
        and not exists (select from app.user_name_words x where x.user_id = u.id and x.word like v_pattern and x.word < w.word)
        and app.name_words_match(u.full_name, v_q)
      limit 1) u
    where w.word >= v_first and w.word <= v_last and w.word like v_pattern and (w.word, w.user_id) > (v_word, v_id)
    order by w.word, w.user_id;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.user_name_matches(text, text, uuid, integer) is
  'Users with a name word starting with the query''s first word, by word and id after a cursor, each once, without handle matches, through the name words'' and users'' policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Rank 2 of GET /search/users.';

grant execute on function app.user_name_matches(text, text, uuid, integer) to app_anonymous;

-- Whether a user matches a normalised query (no leading @): the handle starts with it, or a word
-- of the name does.
create or replace function app.user_matches(
  p_username text,
  p_full_name text,
  p_query text
)
  returns boolean
  language sql
  immutable parallel safe
  as $$
  select p_username like replace(replace(replace(p_query, '\', '\\'), '%', '\%'), '_', '\_') || '%'
      or app.name_words_match(p_full_name, p_query)
$$;

comment on function app.user_matches(text, text, text) is
  'Whether a user matches a normalised query: the handle starts with it, or a word of the name does. Used by the q filter of GET /users/{userId}/followers, GET /users/{userId}/following and GET /hubs/{hubId}/members.';

grant execute on function app.user_matches(text, text, text) to app_anonymous;

-- Blocks made by or against the source apply to the target from now on.
create or replace function app_private.merge_blocks(
  p_source uuid,
  p_target uuid
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  insert into app.blocks(blocker_id, blocked_id)
  select
    p_target,
    b.blocked_id
  from
    app.blocks b
  where
    b.blocker_id = p_source
    and b.blocked_id <> p_target
  union
  select
    b.blocker_id,
    p_target
  from
    app.blocks b
  where
    b.blocked_id = p_source
    and b.blocker_id <> p_target
  on conflict
    do nothing;
    delete from app.blocks
    where blocker_id = p_source
      or blocked_id = p_source;
$$;

comment on function app_private.merge_blocks(uuid, uuid) is
  'User merge step: blocks made by or against the source account apply to the target. Run by app_private.merge_user (listed in app_private.user_merge_steps).';

create or replace function app_private.merge_retire_handle(
  p_source uuid,
  p_target uuid
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  update
    app.users
  set
    username = null
  where
    id = p_source
    and p_target is not null
$$;

comment on function app_private.merge_retire_handle(uuid, uuid) is
  'User merge step, the last: frees the handle of the source account. Run by app_private.merge_user (listed in app_private.user_merge_steps).';

-- The rule, for any user; app.profile_asset_usable is its form for the viewer.
create or replace function app.is_profile_photo_of(
  p_asset_id uuid,
  p_user_id uuid
)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    app_private.asset_usable_as(p_asset_id, p_user_id, 'profile_photo')
$$;

comment on function app.is_profile_photo_of(uuid, uuid) is
  'The profile photo rule: an asset may be a user''s profile image when it is that user''s own profile_photo asset, not failed (app_private.asset_usable_as). Used by app.profile_asset_usable and the trigger function app_private.check_profile_asset.';

-- The user with this handle (canonicalised like profile basics: trimmed, lowercased, a leading @
-- removed), or USER_NOT_FOUND.
create or replace function app.user_id_by_handle(
  p_handle text
)
  returns uuid
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_id uuid;
begin
  select u.id into v_id from app.users u
  where u.username = lower(regexp_replace(btrim(p_handle), '^@', '')) and u.merged_into is null;
  if v_id is null then
    perform app.fail('USER_NOT_FOUND');
  end if;
  return v_id;
end
$$;

comment on function app.user_id_by_handle(text) is
  'The user of a handle (canonicalised: trimmed, lowercased, leading @ removed), or USER_NOT_FOUND. Used by app.add_default_feed_user and app.remove_default_feed_user (npm run admin, admin GraphQL).';

grant execute on function app.user_id_by_handle(text) to app_admin;

create or replace function app.user_block_list(
  p_user_id uuid
)
  returns uuid[]
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$ begin return (select b.ids from app_private.block_list(p_user_id) b); end $$;

comment on function app.user_block_list(uuid) is
  'The block rule for any user: whom the user blocked or is blocked by, as one array. Called by app.viewer_block_list.';

-- Whether a user is visible to a viewer: one who has a username (finished profile basics), or the
-- viewer themself, and not on the viewer's block list p_blocked (app.viewer_block_list,
-- app_private.block_list). The one rule behind the users policy below and the actors of the live
-- notification batch (app_private.live_notifications, for each recipient). Plain SQL, inlined
-- where it is used, so the policy keeps its index probes.
create or replace function app.user_visible(
  p_user_id uuid,
  p_username text,
  p_viewer uuid,
  p_blocked uuid[]
)
  returns boolean
  language sql
  immutable
  as $$
  select
(p_username is not null
      or p_user_id = p_viewer)
    and not(p_user_id = any(p_blocked))
$$;

grant execute on function app.user_visible(uuid, text, uuid, uuid[]) to app_anonymous;

comment on function app.user_visible(uuid, text, uuid, uuid[]) is
  'Whether a user is visible to a viewer: a handle, or the viewer themself, and not on the viewer''s block list. Used by the policy users_select_public (every read of users: profiles, lists, search, cards), by app_private.live_notifications (the actor of each row in the notification stream, GET /notifications/stream), and by app.follow_user and app.report_user for their target.';

-- The users p_user_id has blocked or is blocked by (the block rule: a block hides both ways), as one
-- array.
create or replace function app_private.block_list(
  p_user_id uuid
)
  returns table(
      ids uuid[]
)
  language sql
  stable
  as $$
  select
    coalesce(array_agg(other), '{}')
  from(
    select
      b.blocked_id as other
    from
      app.blocks b
    where
      b.blocker_id = p_user_id
    union
    select
      b.blocker_id
    from
      app.blocks b
    where
      b.blocked_id = p_user_id) pairs
$$;

comment on function app_private.block_list(uuid) is
  'The query of the block rule, written once: the users p_user_id blocked or is blocked by. Read by app.user_block_list and app_private.live_notifications (live delivery, each recipient).';

-- The distinct words of a name, normalised as queries are (app.search_text).
create or replace function app_private.name_words(
  p_name text
)
  returns text[]
  language sql
  immutable parallel safe
  set search_path = pg_catalog
  as $$
  select
    coalesce(array_agg(distinct w.word), '{}')
  from
    regexp_split_to_table(app.search_text(p_name), '[^[:alnum:]]+') w(word)
where
  w.word <> ''
$$;

comment on function app_private.name_words(text) is
  'The distinct words of a name, normalised as search queries are (app.search_text). Used by the name-word triggers of users and hubs, their rebuild functions and app_private.search_word_drift.';

-- The name-word indexes (app.user_name_words of app.users.full_name, app.hub_name_words of
-- app.hubs.name) keep the distinct words of each row's name (app_private.name_words), so a name
-- search reads words from an index (app.user_name_matches, app.hub_name_matches). Their
-- bookkeeping is written once, over the index's tables and columns given as arguments: the sync in
-- the statement that writes a name (app_private.keep_name_words, from each table's trigger
-- functions), the rebuild after a bulk load (app_private.rebuild_name_words) and the drift check
-- (app_private.name_word_drift). Each index's names (words table, row column, source table, name
-- column) are written in its trigger function, its rebuild and app_private.search_word_drift.
-- A row's words after its name was written: the words of the new name are inserted, and on a
-- change (p_replace) the words the name no longer has are deleted. Dynamic SQL over the index's
-- words table (p_words) and row column (p_owner); the caller is a security definer trigger function.
create or replace function app_private.keep_name_words(
  p_words regclass,
  p_owner text,
  p_id uuid,
  p_name text,
  p_replace boolean
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_words text[] := app_private.name_words(p_name);
begin
  if p_replace then
    execute format('delete from %s w where w.%I = $1 and not (w.word = any ($2))', p_words, p_owner) using p_id, v_words;
  end if;
  execute format('insert into %s (%I, word) select $1, w from unnest($2::text[]) w on conflict do nothing', p_words, p_owner)
    using p_id, v_words;
end
$$;

comment on function app_private.keep_name_words(regclass, text, uuid, text, boolean) is
  'The sync of a name-word index, written once: inserts the words of a row''s new name into the words table (p_words, row column p_owner) and, on a change, deletes the words it no longer has. Called by the trigger functions app_private.user_name_words_sync and app_private.hub_name_words_sync.';

-- Sets a name-word index from the names (every row of p_source with a name): the repair after a
-- bulk load made with triggers off (the scale benchmark calls every app_private.rebuild_*).
create or replace function app_private.rebuild_name_words(
  p_words regclass,
  p_owner text,
  p_source regclass,
  p_name text
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
begin
  execute format('lock table %s in exclusive mode', p_words);
  execute format('truncate %s', p_words);
  execute format('insert into %s (%I, word) select s.id, w from %s s, unnest(app_private.name_words(s.%I)) w where s.%I is not null',
    p_words, p_owner, p_source, p_name, p_name);
end
$$;

comment on function app_private.rebuild_name_words(regclass, text, regclass, text) is
  'The rebuild of a name-word index, written once: sets the words table (p_words, row column p_owner) from the names (p_source.p_name). Called by app_private.rebuild_user_name_words and app_private.rebuild_hub_name_words.';

-- The drift check of a name-word index: every row whose kept words differ from the words of its
-- name now (kept null: no words kept; named null: no row or no name). A full scan: for a check or a
-- repair, never for a request.
create or replace function app_private.name_word_drift(
  p_words regclass,
  p_owner text,
  p_source regclass,
  p_name text
)
  returns table(
      id uuid,
      kept text[],
      named text[]
)
  language plpgsql
  stable
  set search_path = pg_catalog
  as $$
begin
  return query execute format(
    'with kept as (select w.%1$I as id, array_agg(w.word order by w.word) as words from %2$s w group by w.%1$I),
          named as (select s.id, (select array_agg(x order by x collate "C") from unnest(app_private.name_words(s.%4$I)) x) as words
                    from %3$s s where s.%4$I is not null)
     select coalesce(k.id, n.id), k.words::text[], n.words::text[]
     from kept k full join named n on n.id = k.id
     where k.words::text[] is distinct from n.words::text[]', p_owner, p_words, p_source, p_name);
end
$$;

comment on function app_private.name_word_drift(regclass, text, regclass, text) is
  'The drift check of a name-word index, written once: every row whose kept words (p_words, row column p_owner) differ from the words of its name now (p_source.p_name). Called by app_private.search_word_drift.';

-- Keeps a user's words with every insert and every change of full_name (by the user, internal
-- tooling or an account merge), in the statement that writes the name.
create or replace function app_private.user_name_words_sync()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.keep_name_words('app.user_name_words', 'user_id', new.id, new.full_name, tg_op = 'UPDATE');
  return null;
end
$$;

comment on function app_private.user_name_words_sync() is
  'Keeps app.user_name_words equal to the words of the user''s full name (app_private.keep_name_words), in the statement that writes the name (onboarding, PATCH /users/me/profile, a merge, tooling). Runs from the triggers _300_name_words_insert and _300_name_words_update on app.users.';

create or replace function app_private.rebuild_user_name_words()
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    app_private.rebuild_name_words('app.user_name_words', 'user_id', 'app.users', 'full_name')
$$;

comment on function app_private.rebuild_user_name_words() is
  'Sets every user''s name words from the names (app_private.rebuild_name_words): the repair after a bulk load made with triggers off. Called by the scale benchmark (every app_private.rebuild_*) and test/http/search/search-words.test.ts.';

-- The reconciliation check of the search words: every user and hub whose kept words differ from
-- the words of its name now (app_private.name_word_drift of each index). No rows: the words agree
-- with the names. A full scan of users and hubs: for a check or a repair
-- (app_private.rebuild_user_name_words, app_private.rebuild_hub_name_words), never for a request.
create or replace function app_private.search_word_drift()
  returns table(
      kind text,
      id uuid,
      kept text[],
      named text[]
)
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    'user',
    d.id,
    d.kept,
    d.named
  from
    app_private.name_word_drift('app.user_name_words', 'user_id', 'app.users', 'full_name') d
union all
select
  'hub',
  d.id,
  d.kept,
  d.named
from
  app_private.name_word_drift('app.hub_name_words', 'hub_id', 'app.hubs', 'name') d
$$;

comment on function app_private.search_word_drift() is
  'The reconciliation check of the search words: every user and hub whose kept words differ from its name now (no rows: in agreement). A full scan for checks and repairs only, run by the tests; never by a request.';

-- A user sees the blocks they made, never who blocked them.
create policy blocks_select_own on app.blocks
  for select to app_user
    using (blocker_id =(
      select
        app.viewer_id()));

comment on policy blocks_select_own on app.blocks is
  'A user sees the blocks they made, never who blocked them (the internal GraphQL API; REST lists no blocks).';

grant select (blocker_id, blocked_id) on app.blocks to app_user;

create policy phone_identities_select_self_or_co_members on app.phone_identities
  for select to app_user
    using (user_id =(
      select
        app.viewer_id())
        or app.viewer_shares_hub_with(user_id));

comment on policy phone_identities_select_self_or_co_members on app.phone_identities is
  'A phone number is shown to its owner (GET /users/me/hub-profile) and to co-members of an active hub (GET /hubs/{hubId}/members, discussion message authors), never to anyone else. The co-member test is a per-row probe (app.viewer_shares_hub_with), after the cheap self test.';

grant select (user_id, phone_e164) on app.phone_identities to app_user;

grant select on app.reserved_handles to app_admin;

grant select (handle) on app.reserved_handles to app_anonymous;

-- A user's name words are as public as the name they come from: a row is visible exactly when its
-- user is (the users policy decides, through the subquery, for the querying role). A scalar
-- subquery, not exists (...): the planner keeps it as one primary-key probe per word read, where it
-- would turn exists into a join that reads every user before the first word.
create policy user_name_words_select on app.user_name_words
  for select to app_anonymous
    using (user_id =(
      select
        u.id
      from
        app.users u
      where
        u.id = user_name_words.user_id));

comment on policy user_name_words_select on app.user_name_words is
  'A user''s name words are visible exactly when the user is (the users policy decides, through the subquery). Serves GET /search/users.';

grant select (user_id, word) on app.user_name_words to app_anonymous;

-- Admin tooling reads every row.
create policy users_select_admin on app.users
  for select to app_admin
    using (true);

comment on policy users_select_admin on app.users is 'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every user.';

create policy users_select_public on app.users
  for select to app_anonymous
    using (app.user_visible(id, username,(
      select
        app.viewer_id()),(
          select
            app.viewer_block_list())::uuid[]));

comment on policy users_select_public on app.users is
  'A user is visible when they have a public profile (a handle) or are the viewer, and no block stands between them and the viewer (app.user_visible). Holds for every read that joins users: profiles, lists, search, cards.';

-- A user edits only their own row, and only the columns granted below.
create policy users_update_self on app.users
  for update to app_user
    using (id =( select app.viewer_id()))
    with check (id =(
      select
        app.viewer_id()));

comment on policy users_update_self on app.users is
  'A user updates only their own row, and only the granted columns (PATCH /users/me/profile).';

grant select on app.users to app_admin;

grant update (username, full_name, bio, profile_asset_id) on app.users to app_user;

grant select (id, username, full_name, bio, profile_asset_id) on app.users to app_anonymous;

create trigger _300_remove_follows
  after insert on app.blocks for each row
  execute function app_private.blocks_remove_follows();

comment on trigger _300_remove_follows on app.blocks is
  'A block ends the follows between the two users (app_private.blocks_remove_follows).';

create trigger _300_name_words_insert
  after insert on app.users for each row
  when(new.full_name is not null)
  execute function app_private.user_name_words_sync();

comment on trigger _300_name_words_insert on app.users is 'Writes a new user''s name words (app_private.user_name_words_sync).';

create trigger _300_name_words_update
  after update of full_name on app.users for each row
  when(old.full_name is distinct from new.full_name)
  execute function app_private.user_name_words_sync();

comment on trigger _300_name_words_update on app.users is
  'Rewrites a user''s name words when the full name changes (app_private.user_name_words_sync).';

create trigger _110_reject_reserved_handle
  before insert or update of username on app.users for each row
  execute function app_private.users_reject_reserved_handle();

comment on trigger _110_reject_reserved_handle on app.users is
  'Rejects a reserved handle on insert and on a handle change (app_private.users_reject_reserved_handle).';
