-- Up Migration
-- The purge of a deleted account, 30 days after the request (contract 13): the worker task
-- purge_account (queued by app.request_account_deletion, job_key purge_account:<userId>) runs the
-- steps below in order, each in its own transaction and idempotent (it removes what is left), so a
-- crash or a second run resumes where the last one stopped and changes nothing once done:
--   1. app_private.purge_account_begin: from here on the account cannot be restored: its sign-in
--      identities go (the phone, the identity-provider subject, the anonymous device: signing in
--      again makes a new account), serialised with sign-in on the account_states row;
--   2. app_private.purge_account_content: posts (and their frames: reposts and shares of them,
--      their comments and hub discussions), comments (with the replies to them), follows, blocks,
--      saved posts and discussions, shares, notifications to and from the user, vote receipts,
--      activity, sessions and devices, hub memberships (a sole super_admin hands the role to the
--      longest-standing admin, else member; a hub left empty is deleted), hub profile, invitations
--      and join requests; discussion messages stay without an author (an anonymous former member);
--   3. app_private.purge_account_object_keys lists the stored objects of the user's uploads and data
--      export archives (0263), the
--      task deletes them from the object store, then app_private.purge_account_uploads deletes their
--      rows (an image a surviving hub still shows stays, without an owner);
--   4. app_private.purge_account_finish: the user row and what is left in app_private.
-- Vote counters stay (they hold no user; contract 7), and so do reports about the user (with their
-- snapshot) and the moderation log.

-- Rows that outlive the user who made them, without that user.
alter table app.hubs alter column created_by drop not null;
alter table app.assets alter column owner_id drop not null;
alter table app.upload_intents alter column owner_id drop not null;
alter table app.hub_invitations alter column invited_by drop not null;
alter table app.hub_invite_links alter column created_by drop not null;

-- Sign-in serialises with the purge on the account_states row (start_session locks it, as here).
create function app_private.purge_account_begin(p_user_id uuid)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_state app_private.account_states;
begin
  select * into v_state from app_private.account_states s where s.user_id = p_user_id for update;
  if not found then
    -- Restored (or never deleted), or purged already: nothing to do.
    return false;
  end if;
  if v_state.purge_started_at is null then
    if v_state.deletion_requested_at is null or v_state.purge_after > now() then
      return false;
    end if;
    update app_private.account_states set purge_started_at = now() where user_id = p_user_id;
  end if;
  delete from app.phone_identities where user_id = p_user_id;
  delete from app_private.idp_subjects where user_id = p_user_id;
  delete from app_private.anonymous_devices where user_id = p_user_id;
  return true;
end
$$;

-- Deletes a hub and everything that hangs on it (a hub left empty by a purge).
create function app_private.delete_hub(p_hub_id uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_photo uuid;
begin
  select h.profile_asset_id into v_photo from app.hubs h where h.id = p_hub_id;
  delete from app.saved_discussions where hub_id = p_hub_id;
  delete from app.hub_discussion_stats where hub_id = p_hub_id;
  delete from app.hub_discussion_messages where hub_id = p_hub_id;
  delete from app.hub_discussions where hub_id = p_hub_id;
  delete from app.hub_join_requests where hub_id = p_hub_id;
  delete from app.hub_invitations where hub_id = p_hub_id;
  delete from app.hub_invite_links where hub_id = p_hub_id;
  delete from app.hub_memberships where hub_id = p_hub_id;
  delete from app.hub_activity where hub_id = p_hub_id;
  delete from app.activity_events where hub_id = p_hub_id;
  delete from app.vote_scope_receipts where hub_id = p_hub_id;
  delete from app.vote_counters where hub_id = p_hub_id;
  delete from app.post_hubs where hub_id = p_hub_id;
  delete from app.notifications where hub_id = p_hub_id;
  delete from app.hubs where id = p_hub_id;
  if v_photo is not null then
    perform graphile_worker.add_job('delete_asset', json_build_object('assetId', v_photo), job_key => 'delete_asset:' || v_photo);
  end if;
end
$$;

-- Deletes posts and what hangs on them (comments, discussions, shares, receipts, notifications).
create function app_private.delete_posts(p_posts uuid[])
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  if cardinality(p_posts) = 0 then
    return;
  end if;
  delete from app.notifications n
    where n.post_id = any (p_posts) or n.comment_id in (select c.id from app.comments c where c.post_id = any (p_posts));
  delete from app.comments where post_id = any (p_posts);
  delete from app.saved_discussions s using app.hub_discussions d where d.id = s.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussion_stats s using app.hub_discussions d where d.id = s.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussion_messages m using app.hub_discussions d where d.id = m.discussion_id and d.post_id = any (p_posts);
  delete from app.hub_discussions where post_id = any (p_posts);
  delete from app.saved_posts where post_id = any (p_posts);
  delete from app.post_shares where post_id = any (p_posts);
  delete from app.activity_events where post_id = any (p_posts);
  delete from app.vote_scope_receipts where post_id = any (p_posts);
  delete from app.vote_receipts where post_id = any (p_posts);
  delete from app.vote_counters where post_id = any (p_posts);
  delete from app.post_hubs where post_id = any (p_posts);
  delete from app_private.removed_posts where post_id = any (p_posts);
  delete from app_private.hidden_rows where kind = 'post' and row_id = any (p_posts);
  delete from app.posts where id = any (p_posts);
end
$$;

create function app_private.purge_account_content(p_user_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_hub uuid;
begin
  perform from app_private.account_states s where s.user_id = p_user_id and s.purge_started_at is not null for update;
  if not found then
    return;
  end if;
  update app.sessions set revoked_at = coalesce(revoked_at, now()) where user_id = p_user_id;
  delete from app.push_devices where user_id = p_user_id;
  delete from app_private.refresh_tokens t using app.sessions s where s.id = t.session_id and s.user_id = p_user_id;
  delete from app.sessions where user_id = p_user_id;

  -- Posts and their frames (reposts of them, by anyone; reposts of a repost do not exist).
  perform app_private.delete_posts(array(
    select p.id from app.posts p where p.author_id = p_user_id
    union
    select r.id from app.posts r join app.posts p on p.id = r.source_post_id where p.author_id = p_user_id));
  delete from app.articles a where a.created_by = p_user_id and not exists (select from app.posts p where p.article_id = a.id);

  -- Comments, with the replies to them.
  delete from app.notifications n where n.comment_id in (
    with recursive gone as (select c.id from app.comments c where c.author_id = p_user_id
                            union select c.id from app.comments c join gone g on c.parent_id = g.id)
    select id from gone);
  with recursive gone as (select c.id from app.comments c where c.author_id = p_user_id
                          union select c.id from app.comments c join gone g on c.parent_id = g.id)
  delete from app.comments where id in (select id from gone);

  -- Discussion messages stay, as from an anonymous former member.
  update app.hub_discussion_messages set author_id = null where author_id = p_user_id;

  delete from app.follows where follower_id = p_user_id or followee_id = p_user_id;
  delete from app.blocks where blocker_id = p_user_id or blocked_id = p_user_id;
  delete from app.saved_posts where user_id = p_user_id;
  delete from app.saved_discussions where user_id = p_user_id;
  delete from app.post_shares where user_id = p_user_id;
  delete from app.post_hubs where added_by = p_user_id;
  delete from app.activity_events where actor_id = p_user_id;
  delete from app.notifications where recipient_id = p_user_id or actor_id = p_user_id;
  delete from app.vote_scope_receipts where user_id = p_user_id;
  delete from app.vote_receipts where user_id = p_user_id;
  delete from app.default_feed_users where user_id = p_user_id;
  delete from app.hub_profiles where user_id = p_user_id;
  delete from app.hub_activity where user_id = p_user_id;
  delete from app.hub_join_requests where user_id = p_user_id;
  update app.hub_join_requests set decided_by = null where decided_by = p_user_id;
  delete from app.hub_join_requests r using app.hub_invitations i where i.id = r.invitation_id and i.invitee_id = p_user_id;
  delete from app.hub_invitations where invitee_id = p_user_id;
  update app.hub_invitations set invited_by = null where invited_by = p_user_id;
  update app.hub_invite_links set created_by = null where created_by = p_user_id;
  update app.hubs set created_by = null where created_by = p_user_id;

  -- Memberships (the hidden ones and any left): a hub without a super_admin now gets one (the
  -- longest-standing admin, else member); a hub nobody belongs to any more (nor a hidden member
  -- who may come back) is deleted.
  for v_hub in
    select (h.data ->> 'hub_id')::uuid from app_private.hidden_rows h where h.user_id = p_user_id and h.kind = 'membership'
    union
    select m.hub_id from app.hub_memberships m where m.user_id = p_user_id
  loop
    delete from app.hub_memberships where hub_id = v_hub and user_id = p_user_id;
    if not exists (select from app.hubs x where x.id = v_hub) then
      continue;
    end if;
    if not exists (select from app.hub_memberships m where m.hub_id = v_hub) then
      if not exists (select from app_private.hidden_rows h where h.kind = 'membership' and h.user_id <> p_user_id and (h.data ->> 'hub_id')::uuid = v_hub) then
        perform app_private.delete_hub(v_hub);
      end if;
    elsif not exists (select from app.hub_memberships m where m.hub_id = v_hub and m.role = 'super_admin') then
      update app.hub_memberships m set role = 'super_admin'
        where m.hub_id = v_hub
          and m.user_id = (select n.user_id from app.hub_memberships n where n.hub_id = v_hub
                           order by n.role = 'admin' desc, n.joined_at, n.user_id limit 1);
    end if;
  end loop;
  delete from app_private.hidden_rows where user_id = p_user_id;
  -- Follows of other hidden accounts that wait for this one.
  delete from app_private.hidden_rows h where h.kind = 'follow'
    and ((h.data ->> 'follower_id')::uuid = p_user_id or (h.data ->> 'followee_id')::uuid = p_user_id);
end
$$;

-- The stored objects of the user's uploads, to delete from the object store before their rows: every
-- upload (completed or not) except an image a surviving hub shows.
create function app_private.purge_account_object_keys(p_user_id uuid)
  returns table (object_key text)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select i.object_key
  from app.upload_intents i
  join app_private.account_states s on s.user_id = i.owner_id and s.purge_started_at is not null
  where i.owner_id = p_user_id
    and not exists (select from app.assets a join app.hubs h on h.profile_asset_id = a.id where a.upload_id = i.id)
  union
  -- data export archives (0263)
  select e.object_key
  from app_private.data_exports e
  join app_private.account_states s on s.user_id = e.user_id and s.purge_started_at is not null
  where e.user_id = p_user_id and e.object_key is not null
  order by 1
$$;

create function app_private.purge_account_uploads(p_user_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform from app_private.account_states s where s.user_id = p_user_id and s.purge_started_at is not null for update;
  if not found then
    return;
  end if;
  -- A hub's image stays with the hub, without an owner.
  update app.assets a set owner_id = null where a.owner_id = p_user_id and exists (select from app.hubs h where h.profile_asset_id = a.id);
  update app.users set profile_asset_id = null where id = p_user_id;
  update app.hub_profiles set profile_asset_id = null
    where profile_asset_id in (select a.id from app.assets a where a.owner_id = p_user_id);
  delete from app.assets a where a.owner_id = p_user_id;
  delete from app.upload_intents i where i.owner_id = p_user_id and not exists (select from app.assets a where a.upload_id = i.id);
  update app.upload_intents set owner_id = null where owner_id = p_user_id;
end
$$;

create function app_private.purge_account_finish(p_user_id uuid)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform from app_private.account_states s where s.user_id = p_user_id and s.purge_started_at is not null for update;
  if not found then
    return false;
  end if;
  update app.users set merged_into = null where merged_into = p_user_id;
  delete from app_private.notification_settings where user_id = p_user_id;
  delete from app_private.unread_counters where user_id = p_user_id;
  delete from app_private.badge_changes where user_id = p_user_id;
  delete from app_private.counters where subject = p_user_id;
  delete from app_private.data_exports where user_id = p_user_id;
  delete from app_private.account_states where user_id = p_user_id;
  delete from app.users where id = p_user_id;
  return true;
end
$$;

revoke all on function app_private.purge_account_begin(uuid), app_private.delete_hub(uuid), app_private.delete_posts(uuid[]),
  app_private.purge_account_content(uuid), app_private.purge_account_object_keys(uuid), app_private.purge_account_uploads(uuid),
  app_private.purge_account_finish(uuid) from public;
grant execute on function app_private.purge_account_begin(uuid), app_private.purge_account_content(uuid),
  app_private.purge_account_object_keys(uuid), app_private.purge_account_uploads(uuid), app_private.purge_account_finish(uuid) to app_worker;

-- Down Migration
drop function app_private.purge_account_finish(uuid), app_private.purge_account_uploads(uuid), app_private.purge_account_object_keys(uuid),
  app_private.purge_account_content(uuid), app_private.delete_posts(uuid[]), app_private.delete_hub(uuid), app_private.purge_account_begin(uuid);
alter table app.hub_invite_links alter column created_by set not null;
alter table app.hub_invitations alter column invited_by set not null;
alter table app.assets alter column owner_id set not null;
alter table app.upload_intents alter column owner_id set not null;
alter table app.hubs alter column created_by set not null;
