-- Up Migration
-- Data export (contract 13): POST /users/me/exports queues a worker job (export_account) that
-- writes one JSON archive of the user's data to the object store; GET /users/me/exports/{id}
-- answers its state and, once ready, a 15-minute signed URL. One export per user per 24 hours.
-- The archive never holds a vote position: the vote receipts appear only as post ids and times
-- (contract 7 "Vote anonymity"), and it holds no other user's phone number or private data.

create table app_private.data_exports (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references app.users (id),
  status text not null default 'pending' check (status in ('pending', 'ready', 'failed')),
  object_key text,
  requested_at timestamptz not null default now(),
  finished_at timestamptz,
  check ((status = 'ready') = (object_key is not null))
);
create index data_exports_user on app_private.data_exports (user_id, requested_at desc);
comment on table app_private.data_exports is 'Data exports of users (0264): read through app.data_export, written by the export_account task.';

-- Queues an export of the viewer's data: at most one per 24 hours (RATE_LIMITED with the seconds
-- to wait; concurrent requests of one user are serialised on a lock per user).
create function app.request_data_export(out export_id uuid, out status text)
  returns record
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_user uuid := app.viewer_id();
  v_last timestamptz;
begin
  perform pg_advisory_xact_lock(hashtextextended('data_export:' || v_user, 0));
  select max(e.requested_at) into v_last from app_private.data_exports e where e.user_id = v_user and e.status <> 'failed';
  if v_last > now() - interval '24 hours' then
    raise exception using errcode = 'P0001', message = 'RATE_LIMITED',
      detail = greatest(1, ceil(extract(epoch from v_last + interval '24 hours' - now())))::int::text;
  end if;
  insert into app_private.data_exports (user_id) values (v_user) returning id, data_exports.status into export_id, status;
  perform graphile_worker.add_job('export_account', json_build_object('exportId', export_id), job_key => 'export_account:' || export_id);
end
$$;

-- One of the viewer's exports (no row: unknown, or another user's).
create function app.data_export(p_export_id uuid)
  returns table (id uuid, status text, object_key text, requested_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select e.id, e.status, e.object_key, e.requested_at from app_private.data_exports e where e.id = p_export_id and e.user_id = app.viewer_id()
$$;

-- Timestamps in the archive as the API writes them (ISO-8601 UTC with milliseconds).
create function app_private.iso(p_at timestamptz)
  returns text
  language sql immutable
  as $$ select to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- The archive of one pending export (null when the export is not pending: done already). What a
-- user gave the service and what it keeps about them, shaped for people: no internal columns.
create function app_private.data_export_archive(p_export_id uuid)
  returns table (user_id uuid, archive jsonb)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select u.id, jsonb_build_object(
    'exportedAt', app_private.iso(now()),
    'profile', jsonb_build_object('id', u.id, 'username', u.username, 'fullName', u.full_name, 'bio', u.bio,
                                  'phoneNumber', (select p.phone_e164 from app.phone_identities p where p.user_id = u.id),
                                  'termsVersion', u.terms_version, 'termsAcceptedAt', app_private.iso(u.terms_accepted_at), 'createdAt', app_private.iso(u.created_at),
                                  'profilePhotoKey', (select a.object_key from app.assets a where a.id = u.profile_asset_id)),
    'hubProfile', (select jsonb_build_object('displayName', h.display_name, 'updatedAt', app_private.iso(h.updated_at)) from app.hub_profiles h where h.user_id = u.id),
    'posts', coalesce((select jsonb_agg(jsonb_build_object('id', p.id, 'createdAt', app_private.iso(p.created_at), 'visibility', p.visibility,
                                                           'thoughtText', p.thought_text, 'sliderText', p.slider_text,
                                                           'sliderLabels', case when p.slider_text is not null then jsonb_build_array(p.slider_left_label, p.slider_right_label) end,
                                                           'article', (select jsonb_build_object('kind', a.kind, 'url', a.url, 'title', a.title, 'body', a.body) from app.articles a where a.id = p.article_id),
                                                           'repostOf', p.source_post_id,
                                                           'hubIds', (select coalesce(jsonb_agg(ph.hub_id), '[]') from app.post_hubs ph where ph.post_id = p.id and ph.kind = 'target'))
                                        order by p.created_at)
                       from app.posts p where p.author_id = u.id and p.deleted_at is null), '[]'),
    'comments', coalesce((select jsonb_agg(jsonb_build_object('id', c.id, 'postId', c.post_id, 'parentCommentId', c.parent_id, 'text', c.text, 'createdAt', app_private.iso(c.created_at)) order by c.created_at)
                          from app.comments c where c.author_id = u.id and c.deleted_at is null), '[]'),
    'discussionMessages', coalesce((select jsonb_agg(jsonb_build_object('id', m.id, 'hubId', m.hub_id, 'discussionId', m.discussion_id, 'parentMessageId', m.parent_id,
                                                                        'text', m.text, 'createdAt', app_private.iso(m.created_at)) order by m.created_at)
                                    from app.hub_discussion_messages m where m.author_id = u.id), '[]'),
    'following', coalesce((select jsonb_agg(jsonb_build_object('userId', f.followee_id, 'username', o.username, 'since', app_private.iso(f.created_at)) order by f.created_at)
                           from app.follows f join app.users o on o.id = f.followee_id where f.follower_id = u.id), '[]'),
    'followers', coalesce((select jsonb_agg(jsonb_build_object('userId', f.follower_id, 'username', o.username, 'since', app_private.iso(f.created_at)) order by f.created_at)
                           from app.follows f join app.users o on o.id = f.follower_id where f.followee_id = u.id), '[]'),
    'blocked', coalesce((select jsonb_agg(jsonb_build_object('userId', b.blocked_id, 'username', o.username) order by o.username)
                         from app.blocks b join app.users o on o.id = b.blocked_id where b.blocker_id = u.id), '[]'),
    'savedPosts', coalesce((select jsonb_agg(jsonb_build_object('postId', s.post_id, 'savedAt', app_private.iso(s.saved_at)) order by s.saved_at)
                            from app.saved_posts s where s.user_id = u.id), '[]'),
    'savedDiscussions', coalesce((select jsonb_agg(jsonb_build_object('discussionId', s.discussion_id, 'hubId', s.hub_id, 'savedAt', app_private.iso(s.saved_at)) order by s.saved_at)
                                  from app.saved_discussions s where s.user_id = u.id), '[]'),
    'hubMemberships', coalesce((select jsonb_agg(jsonb_build_object('hubId', m.hub_id, 'hubName', h.name, 'role', m.role, 'joinedAt', app_private.iso(m.joined_at), 'contentMuted', m.content_muted) order by m.joined_at)
                                from app.hub_memberships m join app.hubs h on h.id = m.hub_id where m.user_id = u.id), '[]'),
    'notificationSettings', (select jsonb_build_object('pushEnabled', coalesce(s.push_enabled, true), 'pushDisabledTypes', coalesce(to_jsonb(s.push_disabled_types), '[]'))
                             from (select) x left join app_private.notification_settings s on s.user_id = u.id),
    -- Devices without their tokens.
    'pushDevices', coalesce((select jsonb_agg(jsonb_build_object('id', d.id, 'provider', d.provider, 'platform', d.platform, 'locale', d.locale,
                                                                 'createdAt', app_private.iso(d.created_at), 'lastSeenAt', app_private.iso(d.last_seen_at)) order by d.created_at)
                             from app.push_devices d where d.user_id = u.id), '[]'),
    -- Which posts the user voted on and when; never the position (it is not the service's to give).
    'votes', coalesce((select jsonb_agg(jsonb_build_object('postId', r.post_id, 'votedAt', app_private.iso(r.voted_at)) order by r.voted_at)
                       from app.vote_receipts r where r.user_id = u.id), '[]'))
  from app_private.data_exports e
  join app.users u on u.id = e.user_id
  where e.id = p_export_id and e.status = 'pending'
    -- nothing for an account being purged (0264): the purge deletes its archives
    and not exists (select from app_private.account_states s where s.user_id = e.user_id and s.purge_started_at is not null)
$$;

-- The task's last step: the archive is stored (or could not be).
create function app_private.finish_data_export(p_export_id uuid, p_object_key text)
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  update app_private.data_exports set status = case when p_object_key is null then 'failed' else 'ready' end,
    object_key = p_object_key, finished_at = now()
  where id = p_export_id and status = 'pending'
$$;

revoke all on function app.request_data_export(), app.data_export(uuid), app_private.data_export_archive(uuid), app_private.iso(timestamptz),
  app_private.finish_data_export(uuid, text) from public;
grant execute on function app.request_data_export(), app.data_export(uuid) to app_user;
grant execute on function app_private.data_export_archive(uuid), app_private.finish_data_export(uuid, text) to app_worker;

-- Down Migration
drop function app_private.finish_data_export(uuid, text), app_private.data_export_archive(uuid), app.data_export(uuid), app.request_data_export();
drop function app_private.iso(timestamptz);
drop table app_private.data_exports;
