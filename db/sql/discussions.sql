-- Hub discussions: threads in a hub, their messages and stats, saved discussions.
-- The one rule of message visibility: the viewer is an active member of the message's hub, and its
-- author is not blocked with the viewer either way (as for comments). A plain SQL function, so the
-- planner inlines it into the policy; app.hub_discussion_thread applies it to one message.
-- The block test reads the list as a subquery (a hashed subplan), which the planner does not price
-- from the author column's statistics: where one author wrote every message it would expect no row
-- to pass and read and sort a whole discussion (docs/performance.md, "Hot values").
create or replace function app.hub_message_visible(
  p_message app.hub_discussion_messages,
  p_active_hub_ids uuid[],
  p_block_list uuid[]
)
  returns boolean
  language sql
  stable
  as $$
  select
    p_message.hub_id = any(p_active_hub_ids)
    and(p_message.author_id is null
      or not p_message.author_id = any(
        select
          unnest(p_block_list)))
$$;

comment on function app.hub_message_visible(app.hub_discussion_messages, uuid[], uuid[]) is
  'The one rule of discussion message visibility: the viewer is an active member of the message''s hub and its author is not blocked with the viewer either way. Inlined into the policy hub_discussion_messages_select_members; app.hub_discussion_thread applies it to one message.';

grant execute on function app.hub_message_visible(app.hub_discussion_messages, uuid[], uuid[]) to app_user;

-- One page of a discussion's top-level messages (p_parent_id null) or of the replies of p_parent_id
-- (p_discussion_id is then not read), oldest first after (p_after_at, p_after_id) (null: from the
-- first), at most p_limit rows, through the messages policy (the caller's rights). The rows come
-- from a cursor, which PL/pgSQL plans for its first rows, so it walks hub_discussion_messages_top
-- or hub_discussion_messages_replies in order whatever the statistics say the discussion or thread
-- holds (as app.comment_page; docs/performance.md, "Hot values").
create or replace function app.message_page(
  p_discussion_id uuid,
  p_parent_id uuid,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      message_id uuid,
      discussion_id uuid,
      hub_id uuid,
      author_id uuid,
      parent_id uuid,
      body text,
      reply_count integer,
      created_at timestamptz
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_at timestamptz := coalesce(p_after_at, '-infinity');
  v_id uuid := coalesce(p_after_id, '00000000-0000-0000-0000-000000000000');
begin
  if p_parent_id is null then
    open v_rows no scroll for
      select m.id, m.discussion_id, m.hub_id, m.author_id, m.parent_id, m.text, m.reply_count, m.created_at
      from app.hub_discussion_messages m
      where m.discussion_id = p_discussion_id and m.parent_id is null and (m.created_at, m.id) > (v_at, v_id)
      order by m.created_at, m.id;
  else
    open v_rows no scroll for
      select m.id, m.discussion_id, m.hub_id, m.author_id, m.parent_id, m.text, m.reply_count, m.created_at
      from app.hub_discussion_messages m
      where m.parent_id = p_parent_id and (m.created_at, m.id) > (v_at, v_id)
      order by m.created_at, m.id;
  end if;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.message_page(uuid, uuid, timestamp with time zone, uuid, integer) is
  'One page of a discussion''s top-level messages or of one thread''s replies, oldest first after a cursor, through the messages policy; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /hubs/{hubId}/discussions/{discussionId}/messages.';

grant execute on function app.message_page(uuid, uuid, timestamp with time zone, uuid, integer) to app_user;

-- The check of every discussion endpoint, in contract order: HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED
-- (outsiders, invited and pending users; below level 4), then DISCUSSION_NOT_FOUND for an unknown
-- discussion, one of another hub, or one whose post the viewer may not see (deleted, blocked
-- author). With p_message_id it also resolves a message of this discussion the viewer may see
-- (MESSAGE_NOT_FOUND otherwise) to its thread root, which it returns (null without a message):
-- threads are one level deep, so a reply to a reply belongs to the root.
create or replace function app.hub_discussion_thread(
  p_hub_id uuid,
  p_discussion_id uuid,
  p_message_id uuid default null
)
  returns uuid
  language plpgsql
  stable
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_post uuid;
  v_root uuid;
begin
  perform app.require_hub_role(p_hub_id, '{member,admin,super_admin}');
  select d.post_id into v_post from app.hub_discussions d where d.id = p_discussion_id and d.hub_id = p_hub_id;
  if v_post is null or not app.can_see_post(v_post) then
    perform app.fail('DISCUSSION_NOT_FOUND');
  end if;
  if p_message_id is null then
    return null;
  end if;
  select coalesce(m.parent_id, m.id) into v_root from app.hub_discussion_messages m
    where m.id = p_message_id and m.discussion_id = p_discussion_id
      and app.hub_message_visible(m, app.viewer_active_hub_ids(), app.viewer_block_list());
  if v_root is null then
    perform app.fail('MESSAGE_NOT_FOUND');
  end if;
  return v_root;
end
$$;

comment on function app.hub_discussion_thread(uuid, uuid, uuid) is
  'The check of every discussion endpoint, in contract order (HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED, DISCUSSION_NOT_FOUND, MESSAGE_NOT_FOUND), answering a message''s thread root. Called by GET /hubs/{hubId}/discussions/{discussionId}/messages, app.post_hub_discussion_message (POST of the same path) and app.save_hub_discussion (POST and DELETE /hubs/{hubId}/discussions/{discussionId}/save).';

grant execute on function app.hub_discussion_thread(uuid, uuid, uuid) to app_user;

-- Counters and ordering, whatever inserts the row: the discussion's message count and last
-- activity, and the root's reply count.
create or replace function app_private.hub_discussion_messages_count()
  returns trigger
  language plpgsql
  security definer
  set search_path = pg_catalog
  as $$
begin
  update app.hub_discussions set last_activity_at = new.created_at where id = new.discussion_id;
  insert into app.hub_discussion_stats as s (discussion_id, hub_id, message_count) values (new.discussion_id, new.hub_id, 1)
    on conflict (discussion_id) do update set message_count = s.message_count + 1;
  if new.parent_id is not null then
    update app.hub_discussion_messages set reply_count = reply_count + 1 where id = new.parent_id;
  end if;
  return null;
end
$$;

comment on function app_private.hub_discussion_messages_count() is
  'Keeps a discussion''s message count and last activity, and the root''s reply count, with every message inserted. Runs from the trigger _400_count_message on app.hub_discussion_messages.';

-- POST /hubs/{hubId}/discussions/{discussionId}/messages: checks in contract order (see
-- app.hub_discussion_thread), attaches a reply to its thread root, and marks the hub's activity
-- (lastActivityAt of GET /users/me/hubs, activeUsers24h). No notification row, no job, no feed
-- activity (spec part 6). Callable by app_user: REST and the demo seed use it alike.
create or replace function app.post_hub_discussion_message(
  p_hub_id uuid,
  p_discussion_id uuid,
  p_text text,
  p_parent_id uuid default null
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_root uuid := app.hub_discussion_thread(p_hub_id, p_discussion_id, p_parent_id);
  v_message uuid;
begin
  insert into app.hub_discussion_messages (discussion_id, hub_id, author_id, parent_id, text)
    values (p_discussion_id, p_hub_id, app.viewer_id(), v_root, p_text)
    returning id into v_message;
  perform app_private.touch_hub_activity(array[p_hub_id], app.viewer_id());
  return v_message;
end
$$;

comment on function app.post_hub_discussion_message(uuid, uuid, text, uuid) is
  'Posts a message or a reply (attached to its thread root) after the discussion check, and records the hub activity; no notification. Called by POST /hubs/{hubId}/discussions/{discussionId}/messages.';

grant execute on function app.post_hub_discussion_message(uuid, uuid, text, uuid) to app_user;

-- A discussion message of an author the viewer cannot see (deleted or suspended account, blocked
-- user) shows as from an anonymous former member, without id. An active member of the hub shows
-- with their hub profile (name, photo) and phone number; a member who left, with their account's
-- name, handle and photo.
create or replace function app.hub_discussion_author(
  p_hub_id uuid,
  p_author_id uuid
)
  returns table(
      author jsonb
)
  language sql
  stable
  as $$
  select
    case when p_author_id is null
      or u.id is null then
      jsonb_build_object('id', null, 'displayName', 'Former member', 'photoKey', null, 'phoneNumber', null,
        'publicUsername', null, 'isFormerMember', true)
    when author.active then
      jsonb_build_object('id', p_author_id, 'displayName', coalesce(hp.display_name, u.full_name, 'Hub member'),
        'photoKey', coalesce(app.image_key(ha.status, ha.display_key, ha.object_key), app.image_key(ua.status, ua.display_key,
        ua.object_key)), 'phoneNumber', pi.phone_e164, 'publicUsername', null, 'isFormerMember', false)
    else
      jsonb_build_object('id', p_author_id, 'displayName', coalesce(u.full_name, u.username, 'Former member'),
        'photoKey', app.image_key(ua.status, ua.display_key, ua.object_key), 'phoneNumber', null, 'publicUsername', u.username,
        'isFormerMember', true)
    end
    -- offset 0: the membership check runs once per author row, not once per join below.
  from(
    select
      app.is_active_member(p_hub_id, p_author_id) as active offset 0) author
  left join app.users u on u.id = p_author_id
  left join app.assets ua on ua.id = u.profile_asset_id
  left join app.hub_profiles hp on author.active
    and hp.user_id = p_author_id
  left join app.assets ha on ha.id = hp.profile_asset_id
  left join app.phone_identities pi on author.active
    and pi.user_id = p_author_id
    -- Nothing for viewers outside the hub: who is a member of it is not theirs to learn.
where
  p_hub_id = any((
      select
        app.viewer_active_hub_ids())::uuid[])
$$;

comment on function app.hub_discussion_author(uuid, uuid) is
  'The author of a discussion message as the viewer may see them: the Hub identity and phone of an active member, else a former member (anonymous when the viewer cannot see the account); nothing for viewers outside the hub. Read by GET and POST /hubs/{hubId}/discussions/{discussionId}/messages, GET /hubs/{hubId}/discussions and GET /users/me/saved-discussions.';

grant execute on function app.hub_discussion_author(uuid, uuid) to app_user;

-- POST and DELETE /hubs/{hubId}/discussions/{discussionId}/save: the discussion check of
-- app.hub_discussion_thread (HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED, DISCUSSION_NOT_FOUND), then the
-- write under the policies above. Both are idempotent. They run with the caller's rights.
create or replace function app.save_hub_discussion(
  p_hub_id uuid,
  p_discussion_id uuid,
  p_saved boolean
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
begin
  perform app.hub_discussion_thread(p_hub_id, p_discussion_id);
  if p_saved then
    insert into app.saved_discussions (user_id, discussion_id, hub_id) values (app.viewer_id(), p_discussion_id, p_hub_id)
      on conflict do nothing;
  else
    delete from app.saved_discussions where user_id = app.viewer_id() and discussion_id = p_discussion_id;
  end if;
end
$$;

comment on function app.save_hub_discussion(uuid, uuid, boolean) is
  'Saves or unsaves a discussion for the viewer after the discussion check, idempotently, with the caller''s rights (the saved-discussion policies). Called by POST and DELETE /hubs/{hubId}/discussions/{discussionId}/save.';

grant execute on function app.save_hub_discussion(uuid, uuid, boolean) to app_user;

-- GET /hubs/{hubId}/discussions: one page of a hub's discussions, most recent activity first after
-- (p_after_at, p_after_id) (null: from the first), at most p_limit rows, whose posts the viewer may
-- see, with their message counts and whether the viewer saved them, through the policies (the
-- caller's rights). The rows come from a cursor, which PL/pgSQL plans for its first rows, so it
-- walks hub_discussions_activity in order and stops after a page whatever the statistics say the
-- hub holds (docs/performance.md, "Hot values"); fetched in one FETCH, hence volatile, as the other
-- page functions.
create or replace function app.hub_discussion_page(
  p_hub_id uuid,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      id uuid,
      post_id uuid,
      message_count integer,
      last_activity_at timestamptz,
      saved boolean
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_at timestamptz := coalesce(p_after_at, 'infinity');
  v_id uuid := coalesce(p_after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
begin
  open v_rows no scroll for
    select d.id, d.post_id, coalesce(st.message_count, 0)::integer, d.last_activity_at, s.discussion_id is not null
    from app.hub_discussions d
    join app.posts p on p.id = d.post_id
    left join app.hub_discussion_stats st on st.discussion_id = d.id
    left join app.saved_discussions s on s.user_id = app.viewer_id() and s.discussion_id = d.id
    where d.hub_id = p_hub_id and (d.last_activity_at, d.id) < (v_at, v_id)
    order by d.last_activity_at desc, d.id desc;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.hub_discussion_page(uuid, timestamp with time zone, uuid, integer) is
  'One page of a hub''s discussions, most recent activity first after a cursor, of posts the viewer may see, with message counts and the viewer''s saved flag, through the policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /hubs/{hubId}/discussions.';

grant execute on function app.hub_discussion_page(uuid, timestamp with time zone, uuid, integer) to app_user;

-- GET /users/me/saved-discussions: one page of the viewer's saved discussions, newest save first
-- after (p_after_at, p_after_id) (null: from the first), at most p_limit rows, of hubs the viewer is
-- an active member of and posts the viewer may see, with the hub's name, through the policies. A
-- cursor planned for its first rows walks saved_discussions_recent in order whatever the statistics
-- say the viewer saved (docs/performance.md, "Hot values"); one FETCH, hence volatile.
create or replace function app.saved_discussion_page(
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit integer
)
  returns table(
      discussion_id uuid,
      hub_id uuid,
      hub_name text,
      post_id uuid,
      saved_at timestamptz
)
  language plpgsql
  volatile
  set search_path = pg_catalog rows 20
  as $$
declare
  v_rows refcursor;
  v_at timestamptz := coalesce(p_after_at, 'infinity');
  v_id uuid := coalesce(p_after_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
begin
  open v_rows no scroll for
    select s.discussion_id, s.hub_id, d.hub_name, d.post_id, s.saved_at
    from app.saved_discussions s
    cross join lateral (
      select d.post_id, h.name as hub_name
      from app.hub_discussions d
      join app.posts p on p.id = d.post_id
      join app.hubs h on h.id = s.hub_id
      where d.id = s.discussion_id
      limit 1) d
    where s.user_id = app.viewer_id() and (s.saved_at, s.discussion_id) < (v_at, v_id)
    order by s.saved_at desc, s.discussion_id desc;
  -- The page in one fetch (not row by row here).
  return query execute format('fetch forward %s from %I', p_limit, v_rows);
  close v_rows;
end
$$;

comment on function app.saved_discussion_page(timestamp with time zone, uuid, integer) is
  'One page of the viewer''s saved discussions, newest save first after a cursor, of hubs they are an active member of and posts they may see, with the hub''s name, through the policies; read from a cursor in index order, so a page reads about a page whatever the statistics say. Called by GET /users/me/saved-discussions.';

grant execute on function app.saved_discussion_page(timestamp with time zone, uuid, integer) to app_user;

-- Messages are read by the active members of their hub (REST, GraphQL and SQL alike).
create policy hub_discussion_messages_select_members on app.hub_discussion_messages
  for select to app_user
    using (app.hub_message_visible(hub_discussion_messages,(
      select
        app.viewer_active_hub_ids()),(
          select
            app.viewer_block_list())));

comment on policy hub_discussion_messages_select_members on app.hub_discussion_messages is
  'Messages are visible by app.hub_message_visible (active members of the hub, no block with the author), to REST, GraphQL and SQL alike. Serves GET /hubs/{hubId}/discussions/{discussionId}/messages and the previews of GET /hubs/{hubId}/discussions and GET /users/me/saved-discussions.';

grant select (id, discussion_id, hub_id, author_id, parent_id, text, created_at, reply_count) on app.hub_discussion_messages to app_user;

-- Counts are read by the active members of the discussion's hub, like the discussion itself.
create policy hub_discussion_stats_select_members on app.hub_discussion_stats
  for select to app_user
    using (hub_id = any ((
      select
        app.viewer_active_hub_ids())::uuid[]));

comment on policy hub_discussion_stats_select_members on app.hub_discussion_stats is
  'A discussion''s counts are visible to the active members of its hub, like the discussion. Serves GET /hubs/{hubId}/discussions.';

grant select (discussion_id, hub_id, message_count) on app.hub_discussion_stats to app_user;

-- Discussions are private to the active members of their hub.
create policy hub_discussions_select_members on app.hub_discussions
  for select to app_user
    using (hub_id = any ((
      select
        app.viewer_active_hub_ids())::uuid[]));

comment on policy hub_discussions_select_members on app.hub_discussions is
  'Discussions are private to the active members of their hub. Serves GET /hubs/{hubId}/discussions and GET /users/me/saved-discussions.';

grant select (id, hub_id, post_id, last_activity_at) on app.hub_discussions to app_user;

create policy saved_discussions_delete_own on app.saved_discussions
  for delete to app_user
    using (user_id =( select app.viewer_id())
      and hub_id = any ((
        select
          app.viewer_active_hub_ids())::uuid[]));

comment on policy saved_discussions_delete_own on app.saved_discussions is
  'A user unsaves only their own rows, in hubs where they are an active member (DELETE /hubs/{hubId}/discussions/{discussionId}/save).';

create policy saved_discussions_insert_own on app.saved_discussions
  for insert
    to app_user
    with check (user_id =( select app.viewer_id())
      and hub_id = any ((
        select
          app.viewer_active_hub_ids())::uuid[]));

comment on policy saved_discussions_insert_own on app.saved_discussions is
  'A user saves only for themselves, in hubs where they are an active member (POST /hubs/{hubId}/discussions/{discussionId}/save).';

-- A user reads, saves and unsaves only their own rows, and only in hubs where they are an active
-- member now (GET /users/me/saved-discussions omits the others).
create policy saved_discussions_select_own on app.saved_discussions
  for select to app_user
    using (user_id =(
      select
        app.viewer_id())
        and hub_id = any ((
          select
            app.viewer_active_hub_ids())::uuid[]));

comment on policy saved_discussions_select_own on app.saved_discussions is
  'A user reads only their own saved discussions, and only in hubs where they are an active member now (GET /users/me/saved-discussions omits the others; the saved flag of GET /hubs/{hubId}/discussions).';

grant delete on app.saved_discussions to app_user;

grant select (user_id, discussion_id, hub_id, saved_at) on app.saved_discussions to app_user;

grant insert (user_id, discussion_id, hub_id) on app.saved_discussions to app_user;

create trigger _400_count_message
  after insert on app.hub_discussion_messages for each row
  execute function app_private.hub_discussion_messages_count();

comment on trigger _400_count_message on app.hub_discussion_messages is
  'Counts each new message into its discussion and thread root (app_private.hub_discussion_messages_count).';
