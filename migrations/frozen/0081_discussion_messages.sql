-- Up Migration
-- Hub discussion messages (spec 2.2 HubDiscussionAuthor, 2.5, part 6; contract section 8):
-- one-level threads, private to the active members of the hub, no notifications, no feed activity.
create table app.hub_discussion_messages (
  id uuid primary key default gen_random_uuid(),
  discussion_id uuid not null,
  hub_id uuid not null,
  -- Null once the author's account is gone: the history stays, without a stable author id.
  author_id uuid references app.users (id) on delete set null,
  -- The thread root; null for a top-level message.
  parent_id uuid references app.hub_discussion_messages (id),
  text text not null check (char_length(text) between 1 and 2000),
  created_at timestamptz not null default now(),
  reply_count int not null default 0 check (reply_count >= 0),
  foreign key (discussion_id, hub_id) references app.hub_discussions (id, hub_id)
);
create index hub_discussion_messages_top on app.hub_discussion_messages (discussion_id, created_at, id) where parent_id is null;
create index hub_discussion_messages_replies on app.hub_discussion_messages (parent_id, created_at, id) where parent_id is not null;
create index hub_discussion_messages_author on app.hub_discussion_messages (author_id);

alter table app.hub_discussion_messages enable row level security;
alter table app.hub_discussion_messages force row level security;

-- The one rule of message visibility: the viewer is an active member of the message's hub, and its
-- author is not blocked with the viewer either way (as for comments). A plain SQL function, so the
-- planner inlines it into the policy; app.hub_discussion_thread applies it to one message.
create function app.hub_message_visible(p_message app.hub_discussion_messages, p_active_hub_ids uuid[], p_block_list uuid[])
  returns boolean
  language sql stable
  as $$
  select p_message.hub_id = any (p_active_hub_ids)
     and (p_message.author_id is null or not p_message.author_id = any (p_block_list))
$$;

-- Messages are read by the active members of their hub (REST, GraphQL and SQL alike).
create policy hub_discussion_messages_select_members on app.hub_discussion_messages
  for select to app_user
  using (app.hub_message_visible(hub_discussion_messages, (select app.viewer_active_hub_ids()), (select app.viewer_block_list())));

-- Every write goes through app.post_hub_discussion_message.
grant select (id, discussion_id, hub_id, author_id, parent_id, text, created_at, reply_count)
  on app.hub_discussion_messages to app_user;
grant execute on function app.hub_message_visible(app.hub_discussion_messages, uuid[], uuid[]) to app_user;

-- The check of every discussion endpoint, in contract order: HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED
-- (outsiders, invited and pending users; below level 4), then DISCUSSION_NOT_FOUND for an unknown
-- discussion, one of another hub, or one whose post the viewer may not see (deleted, blocked
-- author). With p_message_id it also resolves a message of this discussion the viewer may see
-- (MESSAGE_NOT_FOUND otherwise) to its thread root, which it returns (null without a message):
-- threads are one level deep, so a reply to a reply belongs to the root.
create function app.hub_discussion_thread(p_hub_id uuid, p_discussion_id uuid, p_message_id uuid default null)
  returns uuid
  language plpgsql stable security definer
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

grant execute on function app.hub_discussion_thread(uuid, uuid, uuid) to app_user;

-- messageCount of a discussion: its messages, replies included. The message side keeps its counter
-- (and its grant) in a table of its own; the discussion row keeps only its activity time.
create table app.hub_discussion_stats (
  discussion_id uuid primary key,
  hub_id uuid not null,
  message_count int not null default 0 check (message_count >= 0),
  foreign key (discussion_id, hub_id) references app.hub_discussions (id, hub_id)
);

alter table app.hub_discussion_stats enable row level security;
alter table app.hub_discussion_stats force row level security;

-- Counts are read by the active members of the discussion's hub, like the discussion itself.
create policy hub_discussion_stats_select_members on app.hub_discussion_stats
  for select to app_user
  using (hub_id = any ((select app.viewer_active_hub_ids())::uuid[]));

grant select (discussion_id, hub_id, message_count) on app.hub_discussion_stats to app_user;

-- Counters and ordering, whatever inserts the row: the discussion's message count and last
-- activity, and the root's reply count.
create function app_private.hub_discussion_messages_count() returns trigger
  language plpgsql security definer
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

create trigger hub_discussion_messages_count
  after insert on app.hub_discussion_messages
  for each row execute function app_private.hub_discussion_messages_count();

-- POST /hubs/{hubId}/discussions/{discussionId}/messages: checks in contract order (see
-- app.hub_discussion_thread), attaches a reply to its thread root, and marks the hub's activity
-- (lastActivityAt of GET /users/me/hubs, activeUsers24h). No notification row, no job, no feed
-- activity (spec part 6). Callable by app_user: REST and the demo seed use it alike.
create function app.post_hub_discussion_message(p_hub_id uuid, p_discussion_id uuid, p_text text, p_parent_id uuid default null)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_root uuid := app.hub_discussion_thread(p_hub_id, p_discussion_id, p_parent_id);
  v_message uuid;
begin
  insert into app.hub_discussion_messages (discussion_id, hub_id, author_id, parent_id, text)
    values (p_discussion_id, p_hub_id, app.viewer_id(), v_root, p_text)
    returning id into v_message;
  perform app_private.touch_hub_activity(p_hub_id, app.viewer_id());
  return v_message;
end
$$;

grant execute on function app.post_hub_discussion_message(uuid, uuid, text, uuid) to app_user;

-- HubDiscussionAuthor (spec 2.2) of a message in a hub, as an active member of that hub sees it (no
-- row for anyone else). It runs with the viewer's rights, so the Hub identity and the phone number
-- come through the same policies as the member list (hub_profiles_select_co_members, phone_identities_select_co_members: only between
-- active co-members); on top of them, the author must be an active member of this very hub:
--   - an active member: Hub identity (display name, else full name; Hub image, else profile image),
--     the phone where the phone policy shows it, publicUsername null;
--   - a former member: public profile (full name, image, handle as publicUsername), no phone;
--   - an author whose account is gone: no id, no phone, no handle.
-- photoKey is the image's object key: Node signs it into profilePhotoUrl. A plain SQL table
-- function (no SET clause), so `cross join lateral` inlines it and the policies' helpers run once
-- per statement, not once per message.
create function app.hub_discussion_author(p_hub_id uuid, p_author_id uuid)
  returns table (author jsonb)
  language sql stable
  as $$
  select case
    when p_author_id is null then
      jsonb_build_object('id', null, 'displayName', 'Former member', 'photoKey', null, 'phoneNumber', null,
                         'publicUsername', null, 'isFormerMember', true)
    when author.active then
      jsonb_build_object('id', p_author_id, 'displayName', coalesce(hp.display_name, u.full_name, 'Hub member'),
                         'photoKey', coalesce(ha.object_key, ua.object_key), 'phoneNumber', pi.phone_e164,
                         'publicUsername', null, 'isFormerMember', false)
    else
      jsonb_build_object('id', p_author_id, 'displayName', coalesce(u.full_name, u.username, 'Former member'),
                         'photoKey', ua.object_key, 'phoneNumber', null, 'publicUsername', u.username, 'isFormerMember', true)
  end
  -- offset 0: the membership check runs once per author row, not once per join below.
  from (select app.is_active_member(p_hub_id, p_author_id) as active offset 0) author
  left join app.users u on u.id = p_author_id
  left join app.assets ua on ua.id = u.profile_asset_id
  left join app.hub_profiles hp on author.active and hp.user_id = p_author_id
  left join app.assets ha on ha.id = hp.profile_asset_id
  left join app.phone_identities pi on author.active and pi.user_id = p_author_id
  -- Nothing for viewers outside the hub: who is a member of it is not theirs to learn.
  where p_hub_id = any ((select app.viewer_active_hub_ids())::uuid[])
$$;

grant execute on function app.hub_discussion_author(uuid, uuid) to app_user;

-- Down Migration
drop function app.hub_discussion_author(uuid, uuid);
drop function app.post_hub_discussion_message(uuid, uuid, text, uuid);
drop trigger hub_discussion_messages_count on app.hub_discussion_messages;
drop function app_private.hub_discussion_messages_count();
drop table app.hub_discussion_stats;
drop function app.hub_discussion_thread(uuid, uuid, uuid);
drop table app.hub_discussion_messages cascade;
