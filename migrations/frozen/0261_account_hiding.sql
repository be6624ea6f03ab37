-- Up Migration
-- Hidden accounts (contract 13 and 14): an account whose deletion was requested, or that internal
-- tooling suspended, disappears from everyone else at once, and comes back whole when the deletion
-- is cancelled (the owner signs in again within 30 days) or the suspension ends.
--
-- How it is hidden: by putting the account's rows in the states every existing rule already reads
-- as "not there", in one function (app_private.hide_account) and its inverse
-- (app_private.show_account), instead of teaching every policy, feed page, live batch, search and
-- counter a new condition:
--   - the handle is released (users.username = null): users_select_public shows no profile without
--     a handle (404 USER_NOT_FOUND), search, follow and report find nobody, the handle is free;
--   - the account's posts (reposts included) and comments get deleted_at: every feed, the live
--     stream, comment lists and the counters (0220's triggers, 0201's repost unread trigger) treat
--     them as deleted;
--   - follows (both ways), hub memberships and the account's share and comment events are taken out
--     of their tables into app_private.hidden_rows (the whole row as JSON): follower and member
--     lists, counts, home and hub feed frames, co-member phone and hub-profile reads all lose them.
-- Counters and unread counters move with those writes through their own triggers, so the
-- reconciliation checks (app_private.counter_drift, app_private.unread_counter_drift) stay empty
-- without anything written for them here. What was hidden is listed in hidden_rows, so show_account
-- gives back exactly that (a post the owner had deleted before stays deleted; a post moderation
-- removed stays removed).
-- Discussion messages stay (contract 13: shown as from an anonymous former member): the author of a
-- message whose profile the viewer cannot see is shown as a former member without id (below).
-- Votes stay counted: the counters hold no user and a position cannot be taken back out of them
-- (contract 7 "Vote anonymity"); the receipts stay private to their owner.

-- One row per hidden account: why (deletion requested, suspended: either or both) and the handle it
-- had. No API role has any privilege here.
create table app_private.account_states (
  user_id uuid primary key references app.users (id),
  held_username text,
  hidden_at timestamptz not null default now(),
  deletion_requested_at timestamptz,
  purge_after timestamptz,
  suspended_at timestamptz,
  -- null while suspended_at is set: suspended for good
  suspended_until timestamptz,
  suspension_reason text,
  -- set when the purge (0264) begins: from then on the account cannot be restored
  purge_started_at timestamptz,
  check ((deletion_requested_at is null) = (purge_after is null)),
  check (suspended_at is not null or suspended_until is null)
);
comment on table app_private.account_states is
  'Accounts hidden from everyone else: deletion requested (purged after purge_after) and/or suspended (0261). A row exists exactly while the account is hidden.';

-- The rows hide_account took out of sight: post and comment ids it marked deleted, and the follows,
-- memberships and activity events it took out of their tables (as JSON, put back by show_account).
create table app_private.hidden_rows (
  user_id uuid not null references app.users (id),
  kind text not null check (kind in ('post', 'comment', 'follow', 'membership', 'activity', 'hub_activity')),
  row_id uuid,
  data jsonb,
  check ((kind in ('post', 'comment')) = (row_id is not null and data is null))
);
create index hidden_rows_user on app_private.hidden_rows (user_id, kind);
comment on table app_private.hidden_rows is 'What app_private.hide_account took out of sight, per hidden account (0261).';

-- The rule: an account is hidden while it has a state row. Plain SQL, inlined where it is used.
create function app_private.account_hidden(p_user_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$ select exists (select from app_private.account_states s where s.user_id = p_user_id) $$;

-- Hides an account (idempotent: an account already hidden stays as it is). Signs it out everywhere
-- (the sessions trigger of 0203 removes each session's push devices; the account's devices are
-- removed here as well, whatever session they hang on).
create function app_private.hide_account(p_user_id uuid)
  returns void
  language plpgsql volatile
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

-- Shows a hidden account again once no reason to hide it is left (no deletion requested, no
-- suspension): gives back its handle if nobody took it meanwhile (else it stays without one and
-- must choose one through profile basics), and everything hide_account took. A follow whose other
-- side is hidden now moves to that account's hidden rows (it comes back with it); a follow across a
-- block made meanwhile, a membership of a hub removed meanwhile and a post moderation removed do
-- not come back. Returns whether the account was shown.
create function app_private.show_account(p_user_id uuid)
  returns boolean
  language plpgsql volatile
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
      -- removed_at: a hub internal tooling removed meanwhile (column of 0262)
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

-- Posts internal tooling removed (0262 fills it): show_account leaves them deleted.
create table app_private.removed_posts (
  post_id uuid primary key references app.posts (id),
  removed_at timestamptz not null default now(),
  reason text not null
);

revoke all on function app_private.account_hidden(uuid), app_private.hide_account(uuid), app_private.show_account(uuid) from public;

-- POST /users/me/deletion: hides the caller's account now and queues its purge for 30 days later
-- (worker task purge_account, one job per account: job_key). Asking again changes nothing.
create function app.request_account_deletion(out scheduled_for timestamptz)
  returns timestamptz
  language plpgsql volatile security definer
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
revoke all on function app.request_account_deletion() from public;
grant execute on function app.request_account_deletion() to app_user;

-- Every sign-in goes through start_session (OTP, identity provider, anonymous session): a suspended
-- account is refused (ACCOUNT_SUSPENDED; a suspension past its end is lifted here), and an account
-- whose deletion was requested is restored: the purge job is cancelled and the transaction's
-- app.restored setting tells the session payload (user.restored: true).
create or replace function app_private.start_session(p_user_id uuid, p_refresh_hash bytea)
  returns uuid
  language plpgsql
  set search_path = pg_catalog
  as $$
declare
  v_session uuid;
  v_state app_private.account_states;
begin
  select * into v_state from app_private.account_states s where s.user_id = p_user_id for update;
  if found then
    if v_state.purge_started_at is not null then
      -- A sign-in that found the account just before its purge took its identities away.
      perform app.fail('UNAUTHORIZED');
    end if;
    if v_state.suspended_at is not null and (v_state.suspended_until is null or v_state.suspended_until > now()) then
      perform app.fail('ACCOUNT_SUSPENDED');
    end if;
    update app_private.account_states s
      set suspended_at = null, suspended_until = null, suspension_reason = null, deletion_requested_at = null, purge_after = null
      where s.user_id = p_user_id;
    if v_state.deletion_requested_at is not null then
      perform graphile_worker.remove_job('purge_account:' || p_user_id);
      perform set_config('app.restored', 'true', true);
    end if;
    perform app_private.show_account(p_user_id);
  end if;
  insert into app.sessions (user_id, expires_at)
    values (p_user_id, now() + interval '30 days')
    returning id into v_session;
  insert into app_private.refresh_tokens (token_hash, session_id, expires_at)
    values (p_refresh_hash, v_session, now() + interval '30 days');
  return v_session;
end
$$;

-- An anonymous session never brings back a deleted anonymous account: the device gets a new one
-- (the deleted one is purged on schedule). Otherwise as 0246 left it.
create or replace function app.anonymous_session(p_device_id text, p_refresh_hash bytea, out user_id uuid, out session_id uuid)
  returns record
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('anonymous_device:' || p_device_id, 0));
  select d.user_id into user_id
  from app_private.anonymous_devices d
  join app.users u on u.id = d.user_id
  where d.device_id = p_device_id and u.merged_into is null
    and not exists (select from app.phone_identities p where p.user_id = d.user_id)
    and not exists (select from app_private.account_states s where s.user_id = d.user_id and s.deletion_requested_at is not null);
  if user_id is null then
    insert into app.users default values returning id into user_id;
    insert into app_private.anonymous_devices (device_id, user_id) values (p_device_id, user_id)
      on conflict (device_id) do update set user_id = excluded.user_id;
  end if;
  session_id := app_private.start_session(user_id, p_refresh_hash);
end
$$;

-- A discussion message of an author the viewer cannot see (deleted or suspended account, blocked
-- user) shows as from an anonymous former member, without id. Otherwise as 0081 wrote it.
create or replace function app.hub_discussion_author(p_hub_id uuid, p_author_id uuid)
  returns table (author jsonb)
  language sql stable
  as $$
  select case
    when p_author_id is null or u.id is null then
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

-- Refresh of a suspended account: 403 ACCOUNT_SUSPENDED. Otherwise as 0241 left it.
create or replace function app.refresh_session(p_refresh_hash bytea, p_new_refresh_hash bytea, out user_id uuid, out session_id uuid, out outcome text, out issued_at timestamptz)
  returns record
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_token app_private.refresh_tokens;
  v_session app.sessions;
begin
  -- The row lock makes concurrent refreshes of one token serial: the first rotates, the others
  -- then see the rotation.
  select * into v_token from app_private.refresh_tokens t where t.token_hash = p_refresh_hash for update;
  if not found then
    outcome := 'invalid';
    return;
  end if;
  select * into v_session from app.sessions s where s.id = v_token.session_id for update;
  -- A suspended account's refresh tokens answer 403 ACCOUNT_SUSPENDED, not 401 (contract 14).
  if exists (select from app_private.account_states a where a.user_id = v_session.user_id and a.suspended_at is not null
             and (a.suspended_until is null or a.suspended_until > now())) then
    perform app.fail('ACCOUNT_SUSPENDED');
  end if;
  if v_token.rotated_at is not null then
    -- clock_timestamp(): a refresh that waited for the lock measures the window from now, not from
    -- its transaction's start.
    if v_token.rotated_at > clock_timestamp() - interval '10 seconds'
       and v_session.revoked_at is null and v_session.expires_at > now()
       and exists (select from app_private.refresh_tokens n
                   where n.token_hash = p_new_refresh_hash and n.session_id = v_session.id
                     and n.rotated_at is null and n.expires_at > now()) then
      user_id := v_session.user_id;
      session_id := v_session.id;
      issued_at := v_token.rotated_at;
      outcome := 'rotated';
      return;
    end if;
    update app.sessions s set revoked_at = coalesce(s.revoked_at, now()) where s.id = v_session.id;
    outcome := 'reused';
    return;
  end if;
  if v_session.revoked_at is not null or v_token.expires_at <= now() or v_session.expires_at <= now() then
    outcome := 'invalid';
    return;
  end if;
  update app_private.refresh_tokens t set rotated_at = now() where t.token_hash = p_refresh_hash;
  insert into app_private.refresh_tokens (token_hash, session_id, expires_at)
    values (p_new_refresh_hash, v_session.id, now() + interval '30 days');
  user_id := v_session.user_id;
  session_id := v_session.id;
  issued_at := now();
  outcome := 'rotated';
end
$$;

-- Down Migration
create or replace function app.refresh_session(p_refresh_hash bytea, p_new_refresh_hash bytea, out user_id uuid, out session_id uuid, out outcome text, out issued_at timestamptz)
  returns record
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
declare
  v_token app_private.refresh_tokens;
  v_session app.sessions;
begin
  -- The row lock makes concurrent refreshes of one token serial: the first rotates, the others
  -- then see the rotation.
  select * into v_token from app_private.refresh_tokens t where t.token_hash = p_refresh_hash for update;
  if not found then
    outcome := 'invalid';
    return;
  end if;
  select * into v_session from app.sessions s where s.id = v_token.session_id for update;
  if v_token.rotated_at is not null then
    -- clock_timestamp(): a refresh that waited for the lock measures the window from now, not from
    -- its transaction's start.
    if v_token.rotated_at > clock_timestamp() - interval '10 seconds'
       and v_session.revoked_at is null and v_session.expires_at > now()
       and exists (select from app_private.refresh_tokens n
                   where n.token_hash = p_new_refresh_hash and n.session_id = v_session.id
                     and n.rotated_at is null and n.expires_at > now()) then
      user_id := v_session.user_id;
      session_id := v_session.id;
      issued_at := v_token.rotated_at;
      outcome := 'rotated';
      return;
    end if;
    update app.sessions s set revoked_at = coalesce(s.revoked_at, now()) where s.id = v_session.id;
    outcome := 'reused';
    return;
  end if;
  if v_session.revoked_at is not null or v_token.expires_at <= now() or v_session.expires_at <= now() then
    outcome := 'invalid';
    return;
  end if;
  update app_private.refresh_tokens t set rotated_at = now() where t.token_hash = p_refresh_hash;
  insert into app_private.refresh_tokens (token_hash, session_id, expires_at)
    values (p_new_refresh_hash, v_session.id, now() + interval '30 days');
  user_id := v_session.user_id;
  session_id := v_session.id;
  issued_at := now();
  outcome := 'rotated';
end
$$;

create or replace function app.hub_discussion_author(p_hub_id uuid, p_author_id uuid)
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
  from (select app.is_active_member(p_hub_id, p_author_id) as active offset 0) author
  left join app.users u on u.id = p_author_id
  left join app.assets ua on ua.id = u.profile_asset_id
  left join app.hub_profiles hp on author.active and hp.user_id = p_author_id
  left join app.assets ha on ha.id = hp.profile_asset_id
  left join app.phone_identities pi on author.active and pi.user_id = p_author_id
  where p_hub_id = any ((select app.viewer_active_hub_ids())::uuid[])
$$;

create or replace function app.anonymous_session(p_device_id text, p_refresh_hash bytea, out user_id uuid, out session_id uuid)
  returns record
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('anonymous_device:' || p_device_id, 0));
  select d.user_id into user_id
  from app_private.anonymous_devices d
  join app.users u on u.id = d.user_id
  where d.device_id = p_device_id and u.merged_into is null
    and not exists (select from app.phone_identities p where p.user_id = d.user_id);
  if user_id is null then
    insert into app.users default values returning id into user_id;
    insert into app_private.anonymous_devices (device_id, user_id) values (p_device_id, user_id)
      on conflict (device_id) do update set user_id = excluded.user_id;
  end if;
  session_id := app_private.start_session(user_id, p_refresh_hash);
end
$$;

create or replace function app_private.start_session(p_user_id uuid, p_refresh_hash bytea)
  returns uuid
  language plpgsql
  set search_path = pg_catalog
  as $$
declare
  v_session uuid;
begin
  insert into app.sessions (user_id, expires_at)
    values (p_user_id, now() + interval '30 days')
    returning id into v_session;
  insert into app_private.refresh_tokens (token_hash, session_id, expires_at)
    values (p_refresh_hash, v_session, now() + interval '30 days');
  return v_session;
end
$$;

drop function app.request_account_deletion();
drop table app_private.removed_posts;
drop function app_private.show_account(uuid), app_private.hide_account(uuid), app_private.account_hidden(uuid);
drop table app_private.hidden_rows;
drop table app_private.account_states;
