-- Account lifecycle: hiding and showing an account, deletion and the purge, data exports, and the steps
-- of a user merge.
-- The rule: an account is hidden while it has a state row.
create or replace function app_private.account_hidden(
  p_user_id uuid
)
  returns boolean
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    exists(
      select
      from
        app_private.account_states s
      where
        s.user_id = p_user_id)
$$;

comment on function app_private.account_hidden(uuid) is
  'The rule of account hiding: an account is hidden (deletion requested and/or suspended) while it has a row in app_private.account_states. Called by app_private.show_account and app.restore_post.';

-- Hides an account (idempotent: an account already hidden stays as it is). Signs it out everywhere
-- (the trigger sessions_forget_push_devices removes each session's push devices; the account's
-- devices are removed here as well, whatever session they hang on).
create or replace function app_private.hide_account(
  p_user_id uuid
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
begin
  update app.sessions set revoked_at = now() where user_id = p_user_id and revoked_at is null;
  delete from app.push_devices where user_id = p_user_id;
  insert into app_private.account_states (user_id, held_username)
    select u.id, u.username from app.users u where u.id = p_user_id
    on conflict (user_id) do nothing;
  if not found then
    return;
  end if;
  update app.users set username = null where id = p_user_id and username is not null;
  with hidden as (update app.posts set deleted_at = now() where author_id = p_user_id and deleted_at is null returning id)
  insert into app_private.hidden_rows (user_id, kind, row_id) select p_user_id, 'post', id from hidden;
  with hidden as (update app.comments set deleted_at = now() where author_id = p_user_id and deleted_at is null returning id)
  insert into app_private.hidden_rows (user_id, kind, row_id) select p_user_id, 'comment', id from hidden;
  with taken as (delete from app.follows f where f.follower_id = p_user_id or f.followee_id = p_user_id returning f.*)
  insert into app_private.hidden_rows (user_id, kind, data) select p_user_id, 'follow', to_jsonb(t) from taken t;
  with taken as (delete from app.hub_memberships m where m.user_id = p_user_id returning m.*)
  insert into app_private.hidden_rows (user_id, kind, data) select p_user_id, 'membership', to_jsonb(t) from taken t;
  -- Recent activity in hubs (the "active users" number of hub search).
  with taken as (delete from app.hub_activity a where a.user_id = p_user_id returning a.*)
  insert into app_private.hidden_rows (user_id, kind, data) select p_user_id, 'hub_activity', to_jsonb(t) from taken t;
  -- Shares, reposts and comments as feed frames; vote events are not the account's to show or hide.
  with taken as (delete from app.activity_events e where e.actor_id = p_user_id and e.kind <> 'post_voted' returning e.*)
  insert into app_private.hidden_rows (user_id, kind, data) select p_user_id, 'activity', to_jsonb(t) from taken t;
end
$$;

comment on function app_private.hide_account(uuid) is
  'Hides an account from everyone else (idempotent): signs it out everywhere, removes its push devices, holds its handle, and takes its posts, comments, follows, memberships, hub activity and feed frames out of sight into app_private.hidden_rows so that show_account can give them back. Called by app.request_account_deletion (POST /users/me/deletion) and app.suspend_user.';

-- Shows a hidden account again once no reason to hide it is left (no deletion requested, no
-- suspension): gives back its handle if nobody took it meanwhile (else it stays without one and
-- must choose one through profile basics), and everything hide_account took. A follow whose other
-- side is hidden now moves to that account's hidden rows (it comes back with it); a follow across a
-- block made meanwhile, a membership of a hub removed meanwhile and a post moderation removed do
-- not come back. Returns whether the account was shown.
create or replace function app_private.show_account(
  p_user_id uuid
)
  returns boolean
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
declare
  v_state app_private.account_states;
begin
  select * into v_state from app_private.account_states s where s.user_id = p_user_id for update;
  if not found or v_state.deletion_requested_at is not null or v_state.suspended_at is not null then
    return false;
  end if;
  delete from app_private.account_states where user_id = p_user_id;
  if v_state.held_username is not null and not exists (select from app.users o where o.username = v_state.held_username)
     and not exists (select from app.reserved_handles r where r.handle = v_state.held_username) then
    update app.users set username = v_state.held_username where id = p_user_id;
  end if;
  update app.posts p set deleted_at = null
    where p.id in (select h.row_id from app_private.hidden_rows h where h.user_id = p_user_id and h.kind = 'post')
      and p.deleted_at is not null
      and not exists (select from app_private.removed_posts r where r.post_id = p.id);
  update app.comments c set deleted_at = null
    where c.id in (select h.row_id from app_private.hidden_rows h where h.user_id = p_user_id and h.kind = 'comment')
      and c.deleted_at is not null;
  -- Follows with another hidden account wait for that one.
  update app_private.hidden_rows h
    set user_id = case when (h.data ->> 'follower_id')::uuid = p_user_id then (h.data ->> 'followee_id')::uuid else (h.data ->> 'follower_id')::uuid end
    where h.user_id = p_user_id and h.kind = 'follow'
      and app_private.account_hidden(case when (h.data ->> 'follower_id')::uuid = p_user_id then (h.data ->> 'followee_id')::uuid
                                          else (h.data ->> 'follower_id')::uuid end);
  insert into app.follows overriding system value
    select f.* from app_private.hidden_rows h cross join lateral jsonb_populate_record(null::app.follows, h.data) f
    where h.user_id = p_user_id and h.kind = 'follow'
      and exists (select from app.users u where u.id = f.follower_id)
      and exists (select from app.users u where u.id = f.followee_id)
      and not exists (select from app.blocks b where (b.blocker_id, b.blocked_id) in ((f.follower_id, f.followee_id), (f.followee_id, f.follower_id)))
    on conflict do nothing;
  insert into app.hub_memberships
    select m.* from app_private.hidden_rows h cross join lateral jsonb_populate_record(null::app.hub_memberships, h.data) m
    where h.user_id = p_user_id and h.kind = 'membership'
      -- removed_at: a hub internal tooling removed meanwhile (app.hubs.removed_at)
      and exists (select from app.hubs x where x.id = m.hub_id and x.removed_at is null)
    on conflict do nothing;
  insert into app.hub_activity
    select a.* from app_private.hidden_rows h cross join lateral jsonb_populate_record(null::app.hub_activity, h.data) a
    where h.user_id = p_user_id and h.kind = 'hub_activity' and exists (select from app.hub_memberships m where m.hub_id = a.hub_id and m.user_id = a.user_id)
    on conflict do nothing;
  insert into app.activity_events overriding system value
    select e.* from app_private.hidden_rows h cross join lateral jsonb_populate_record(null::app.activity_events, h.data) e
    where h.user_id = p_user_id and h.kind = 'activity' and exists (select from app.posts p where p.id = e.post_id)
    on conflict do nothing;
  delete from app_private.hidden_rows where user_id = p_user_id;
  return true;
end
$$;

comment on function app_private.show_account(uuid) is
  'Shows a hidden account again once no reason to hide it is left (no deletion requested, no suspension): its handle if still free, and what hide_account took, except what may no longer come back (a follow across a block, a membership of a removed hub, a post moderation removed). Called by app_private.start_session (a sign-in restores an account whose deletion was requested) and app_private.end_suspension.';

-- POST /users/me/deletion: hides the caller's account now and queues its purge for 30 days later
-- (worker task purge_account, one job per account: job_key). Asking again changes nothing.
create or replace function app.request_account_deletion(
  out scheduled_for timestamptz
)
  returns timestamptz
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_user uuid := app.viewer_id();
begin
  if v_user is null then
    perform app.fail('UNAUTHORIZED');
  end if;
  perform from app.users u where u.id = v_user for update;
  perform app_private.hide_account(v_user);
  update app_private.account_states s
    set deletion_requested_at = coalesce(s.deletion_requested_at, now()),
        purge_after = coalesce(s.purge_after, now() + interval '30 days')
    where s.user_id = v_user
    returning s.purge_after into scheduled_for;
  perform graphile_worker.add_job('purge_account', json_build_object('userId', v_user),
    run_at => scheduled_for, job_key => 'purge_account:' || v_user, max_attempts => 25);
end
$$;

comment on function app.request_account_deletion() is
  'POST /users/me/deletion (server/accounts/deletion.ts): hides the caller''s account now and queues its purge 30 days later (worker task purge_account, one job per account); asking again changes nothing. Signing in before the purge restores the account (app_private.start_session).';

grant execute on function app.request_account_deletion() to app_user;

-- Queues an export of the viewer's data: at most one per 24 hours, the limit `data_exports`
-- (RATE_LIMITED with the seconds to wait in DETAIL and the limit in HINT, as app.take_write_limit
-- raises it; concurrent requests of one user are serialised on a lock per user). Answers the limit
-- too, for the RateLimit headers: none left, and the seconds until the window frees one.
create or replace function app.start_data_export(
  out export_id uuid,
  out status text,
  out rate_limit text,
  out quota int,
  out window_seconds int,
  out remaining int,
  out reset_seconds int
)
  returns record
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_user uuid := app.viewer_id();
  v_last timestamptz;
begin
  rate_limit := 'data_exports';
  quota := 1;
  window_seconds := 86400;
  perform pg_advisory_xact_lock(hashtextextended('data_export:' || v_user, 0));
  select max(e.requested_at) into v_last from app_private.data_exports e where e.user_id = v_user and e.status <> 'failed';
  if v_last > now() - make_interval(secs => window_seconds) then
    raise exception using errcode = 'P0001', message = 'RATE_LIMITED',
      detail = greatest(1, ceil(extract(epoch from v_last + make_interval(secs => window_seconds) - now())))::int::text,
      hint = json_build_object('rateLimit', rate_limit, 'quota', quota, 'windowSeconds', window_seconds)::text;
  end if;
  insert into app_private.data_exports (user_id) values (v_user) returning id, data_exports.status into export_id, status;
  perform graphile_worker.add_job('export_account', json_build_object('exportId', export_id), job_key => 'export_account:' || export_id);
  remaining := 0;
  reset_seconds := window_seconds;
end
$$;

comment on function app.start_data_export() is
  'POST /users/me/exports (server/accounts/exports.ts): queues an export of the viewer''s data (worker task export_account), at most one per 24 hours (RATE_LIMITED with the seconds to wait and the limit; concurrent requests of one user serialised on an advisory lock), answering the limit for the RateLimit headers.';

grant execute on function app.start_data_export() to app_user;

-- The export alone (the release before the RateLimit headers calls this).
create or replace function app.request_data_export(
  out export_id uuid,
  out status text
)
  returns record
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    e.export_id,
    e.status
  from
    app.start_data_export() e
$$;

comment on function app.request_data_export() is
  'Queues an export of the viewer''s data: app.start_data_export without its limit columns. Kept for the previous release.';

grant execute on function app.request_data_export() to app_user;

-- One of the viewer's exports (no row: unknown, or another user's).
create or replace function app.data_export(
  p_export_id uuid
)
  returns table(
      id uuid,
      status text,
      object_key text,
      requested_at timestamptz
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    e.id,
    e.status,
    e.object_key,
    e.requested_at
  from
    app_private.data_exports e
  where
    e.id = p_export_id
    and e.user_id = app.viewer_id()
$$;

comment on function app.data_export(uuid) is
  'GET /users/me/exports/{exportId} (server/accounts/exports.ts): one of the viewer''s own exports, with its status and stored object; no row for an unknown export or another user''s.';

grant execute on function app.data_export(uuid) to app_user;

-- The archive of one pending export (null when the export is not pending: done already). What a
-- user gave the service and what it keeps about them, shaped for people: no internal columns.
create or replace function app_private.data_export_archive(
  p_export_id uuid
)
  returns table(
      user_id uuid,
      archive jsonb
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    u.id,
    jsonb_build_object('exportedAt', app_private.iso(now()), 'profile', jsonb_build_object('id', u.id, 'username',
      u.username, 'fullName', u.full_name, 'bio', u.bio, 'phoneNumber',(
        select
          p.phone_e164
        from app.phone_identities p
        where
          p.user_id = u.id), 'termsVersion', u.terms_version, 'termsAcceptedAt', app_private.iso(u.terms_accepted_at), 'createdAt',
            app_private.iso(u.created_at), 'profilePhotoKey',(
        select
          a.object_key
        from app.assets a
        where
          a.id = u.profile_asset_id)), 'hubProfile',(
      select
        jsonb_build_object('displayName', h.display_name, 'updatedAt', app_private.iso(h.updated_at))
      from app.hub_profiles h
      where
        h.user_id = u.id), 'posts', coalesce((
        select
          jsonb_agg(jsonb_build_object('id', p.id, 'createdAt', app_private.iso(p.created_at), 'visibility',
            p.visibility, 'thoughtText', p.thought_text, 'sliderText', p.slider_text, 'sliderLabels', case when p.slider_text is not
            null then
              jsonb_build_array(p.slider_left_label, p.slider_right_label)
            end, 'article',(
              select
                jsonb_build_object('kind', a.kind, 'url', a.url, 'title', a.title, 'body', a.body)
              from app.articles a
            where
              a.id = p.article_id), 'repostOf', p.source_post_id, 'hubIds',(
              select
                coalesce(jsonb_agg(ph.hub_id), '[]')
              from app.post_hubs ph
            where
              ph.post_id = p.id
              and ph.kind = 'target'))
        order by p.created_at)
        from app.posts p
      where
        p.author_id = u.id
        and p.deleted_at is null), '[]'), 'comments', coalesce((
      select
        jsonb_agg(jsonb_build_object('id', c.id, 'postId', c.post_id, 'parentCommentId', c.parent_id, 'text',
          c.text, 'createdAt', app_private.iso(c.created_at))
        order by c.created_at)
      from app.comments c
    where
      c.author_id = u.id
      and c.deleted_at is null), '[]'), 'discussionMessages', coalesce((
    select
      jsonb_agg(jsonb_build_object('id', m.id, 'hubId', m.hub_id, 'discussionId', m.discussion_id, 'parentMessageId',
        m.parent_id, 'text', m.text, 'createdAt', app_private.iso(m.created_at))
      order by m.created_at)
    from app.hub_discussion_messages m
  where
    m.author_id = u.id), '[]'), 'following', coalesce((
  select
    jsonb_agg(jsonb_build_object('userId', f.followee_id, 'username', o.username, 'since', app_private.iso(f.created_at))
    order by f.created_at)
  from app.follows f
  join app.users o on o.id = f.followee_id
where
  f.follower_id = u.id), '[]'), 'followers', coalesce((
  select
    jsonb_agg(jsonb_build_object('userId', f.follower_id, 'username', o.username, 'since', app_private.iso(f.created_at))
    order by f.created_at)
  from app.follows f
  join app.users o on o.id = f.follower_id
where
  f.followee_id = u.id), '[]'), 'blocked', coalesce((
  select
    jsonb_agg(jsonb_build_object('userId', b.blocked_id, 'username', o.username)
    order by o.username)
  from app.blocks b
  join app.users o on o.id = b.blocked_id
where
  b.blocker_id = u.id), '[]'), 'savedPosts', coalesce((
  select
    jsonb_agg(jsonb_build_object('postId', s.post_id, 'savedAt', app_private.iso(s.saved_at))
    order by s.saved_at)
  from app.saved_posts s
where
  s.user_id = u.id), '[]'), 'savedDiscussions', coalesce((
  select
    jsonb_agg(jsonb_build_object('discussionId', s.discussion_id, 'hubId', s.hub_id, 'savedAt', app_private.iso(s.saved_at))
    order by s.saved_at)
  from app.saved_discussions s
where
  s.user_id = u.id), '[]'), 'hubMemberships', coalesce((
  select
    jsonb_agg(jsonb_build_object('hubId', m.hub_id, 'hubName', h.name, 'role', m.role, 'joinedAt',
      app_private.iso(m.joined_at), 'contentMuted', m.content_muted)
    order by m.joined_at)
  from app.hub_memberships m
  join app.hubs h on h.id = m.hub_id
where
  m.user_id = u.id), '[]'), 'notificationSettings',(
  select
    jsonb_build_object('pushEnabled', coalesce(s.push_enabled, true), 'pushDisabledTypes', coalesce(to_jsonb(s.push_disabled_types), '[]'))
  from(
    select
) x
  left join app_private.notification_settings s on s.user_id = u.id),
-- Devices without their tokens.
'pushDevices', coalesce((
  select
    jsonb_agg(jsonb_build_object('id', d.id, 'provider', d.provider, 'platform', d.platform, 'locale',
      d.locale, 'createdAt', app_private.iso(d.created_at), 'lastSeenAt', app_private.iso(d.last_seen_at))
    order by d.created_at)
from app.push_devices d
where
  d.user_id = u.id), '[]'),
-- Which posts the user voted on and when; never the position (it is not the service's to give).
'votes', coalesce((
  select
    jsonb_agg(jsonb_build_object('postId', r.post_id, 'votedAt', app_private.iso(r.voted_at))
    order by r.voted_at)
from app.vote_receipts r
where
  r.user_id = u.id), '[]'))
from
  app_private.data_exports e
  join app.users u on u.id = e.user_id
where
  e.id = p_export_id
  and e.status = 'pending'
  -- nothing for an account being purged (purge_started_at): the purge deletes its archives
  and not exists(
    select
    from
      app_private.account_states s
    where
      s.user_id = e.user_id
      and s.purge_started_at is not null)
$$;

comment on function app_private.data_export_archive(uuid) is
  'The archive of one pending export: what the user gave the service and what it keeps about them, shaped for people, never a vote position or a push token; nothing for an export done already or an account being purged. Read by the worker task export_account (worker/tasks/accounts/export-account.ts).';

grant execute on function app_private.data_export_archive(uuid) to app_worker;

-- The task's last step: the archive is stored (or could not be).
create or replace function app_private.finish_data_export(
  p_export_id uuid,
  p_object_key text
)
  returns void
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  update
    app_private.data_exports
  set
    status = case when p_object_key is null then
      'failed'
    else
      'ready'
    end,
    object_key = p_object_key,
    finished_at = now()
  where
    id = p_export_id
    and status = 'pending'
$$;

comment on function app_private.finish_data_export(uuid, text) is
  'Marks a pending export ready with its stored object, or failed (p_object_key null: the last attempt failed, so the user may ask again). The last step of the worker task export_account (worker/tasks/accounts/export-account.ts).';

grant execute on function app_private.finish_data_export(uuid, text) to app_worker;

-- Sign-in serialises with the purge on the account_states row (start_session locks it, as here).
create or replace function app_private.purge_account_begin(
  p_user_id uuid
)
  returns boolean
  language plpgsql
  volatile
  security definer
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

comment on function app_private.purge_account_begin(uuid) is
  'Step 1 of the purge (worker task purge_account, worker/tasks/accounts/purge-account.ts): starts it once the 30 days are over and the account was not restored (false: nothing to do), and deletes the sign-in identities (phone, identity provider, anonymous device), so no sign-in can restore the account from here on. Locks the account state row, as sign-in does.';

grant execute on function app_private.purge_account_begin(uuid) to app_worker;

create or replace function app_private.purge_account_content(
  p_user_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
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
  delete from app_private.idempotent_answers where user_id = p_user_id;
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

comment on function app_private.purge_account_content(uuid) is
  'Step 2 of the purge (worker task purge_account): deletes what the account wrote and holds (sessions, kept answers of idempotency keys, posts with their reposts, comments with their replies, follows, blocks, saves, shares, activity, notifications, vote receipts, hub profile, invitations and join requests), keeps its discussion messages as from an anonymous former member, and leaves each hub with a super_admin (or deletes a hub left with nobody: app_private.delete_hub). Only for an account whose purge began; idempotent.';

grant execute on function app_private.purge_account_content(uuid) to app_worker;

-- The stored objects of the user's uploads, to delete from the object store before their rows: every
-- upload (completed or not) except an image a surviving hub shows.
create or replace function app_private.purge_account_object_keys(
  p_user_id uuid
)
  returns table(
      object_key text
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    i.object_key
  from
    app.upload_intents i
    join app_private.account_states s on s.user_id = i.owner_id
      and s.purge_started_at is not null
  where
    i.owner_id = p_user_id
    and not exists(
      select
      from
        app.assets a
        join app.hubs h on h.profile_asset_id = a.id
      where
        a.upload_id = i.id)
  union
  -- the processed images' objects (their variants; object_key names one of them)
  select
    v ->> 'key'
  from
    app.assets a
    join app_private.account_states s on s.user_id = a.owner_id
      and s.purge_started_at is not null
  cross join lateral jsonb_array_elements(coalesce(a.variants, '[]')) v
where
  a.owner_id = p_user_id
  and not exists(
    select
    from
      app.hubs h
    where
      h.profile_asset_id = a.id)
union
-- data export archives
select
  e.object_key
from
  app_private.data_exports e
  join app_private.account_states s on s.user_id = e.user_id
    and s.purge_started_at is not null
where
  e.user_id = p_user_id
  and e.object_key is not null
order by
  1
$$;

comment on function app_private.purge_account_object_keys(uuid) is
  'Step 3 of the purge (worker task purge_account): the stored objects to delete from the object store before their rows, every upload of the account and every variant of its processed images (except an image a surviving hub shows) and its data export archives. Only for an account whose purge began.';

grant execute on function app_private.purge_account_object_keys(uuid) to app_worker;

create or replace function app_private.purge_account_uploads(
  p_user_id uuid
)
  returns void
  language plpgsql
  volatile
  security definer
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

comment on function app_private.purge_account_uploads(uuid) is
  'Step 4 of the purge (worker task purge_account), after the objects are deleted from the store: deletes the rows of the account''s uploads and assets; a hub''s image stays with the hub, without an owner. Only for an account whose purge began; idempotent.';

grant execute on function app_private.purge_account_uploads(uuid) to app_worker;

create or replace function app_private.purge_account_finish(
  p_user_id uuid
)
  returns boolean
  language plpgsql
  volatile
  security definer
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

comment on function app_private.purge_account_finish(uuid) is
  'Last step of the purge (worker task purge_account): deletes what is left of the account (settings, unread and slot counters, badge changes, exports, its state row) and the user row itself; false when there is nothing to purge.';

grant execute on function app_private.purge_account_finish(uuid) to app_worker;

-- The steps of a user merge (app_private.merge_user calls each in position order): a domain that
-- keeps rows of a user adds its merge function here. Replaced whole on every apply.
delete from app_private.user_merge_steps;

insert into app_private.user_merge_steps(position, step)
  values (10, 'app_private.merge_blocks(uuid, uuid)'),
(20, 'app_private.merge_follows(uuid, uuid)'),
(1000, 'app_private.merge_retire_handle(uuid, uuid)'),
(30, 'app_private.merge_votes(uuid, uuid)'),
(40, 'app_private.merge_comments(uuid, uuid)'),
(50, 'app_private.merge_saved_posts(uuid, uuid)');
