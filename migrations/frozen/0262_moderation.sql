-- Up Migration
-- Moderation of reports (contract 14): reports get a state and a snapshot of what was reported; one
-- open report per reporter and target; internal tooling's actions (remove and restore a post,
-- suspend and unsuspend a user, remove a hub, resolve, dismiss and reopen a report) as functions
-- only app_admin may run: `npm run admin` and internal GraphQL (admin token) call the same ones, so
-- both apply one rule. Each action resolves its target's open reports in its own transaction and
-- appends one row to the moderation log, which nobody may change or delete.

-- Reports: state with who and when, and the snapshot (taken by the trigger below when the report is
-- filed, so it survives the content and the account). A purged reporter leaves the report behind
-- without a reporter.
create type app.report_state as enum ('open', 'resolved', 'dismissed');
alter table app.reports
  add column state app.report_state not null default 'open',
  add column decided_at timestamptz,
  add column decided_by text,
  add column snapshot jsonb;
alter table app.reports alter column reporter_id drop not null;
alter table app.reports drop constraint reports_reporter_id_fkey,
  add constraint reports_reporter_id_fkey foreign key (reporter_id) references app.users (id) on delete set null;

-- Reports filed before this migration: the oldest open report per reporter and target stays open,
-- the rest are dismissed as repeats (the index below allows one).
update app.reports r set state = 'dismissed', decided_at = now(), decided_by = 'migration 0262 (repeat report)'
  where exists (select from app.reports o where o.reporter_id = r.reporter_id and o.target_type = r.target_type and o.target_id = r.target_id
                and (o.created_at, o.id) < (r.created_at, r.id));
create unique index reports_one_open on app.reports (reporter_id, target_type, target_id) where state = 'open';
create index reports_open_targets on app.reports (target_type, target_id, created_at) where state = 'open';

-- What a report is about, as it is when the report is filed. Read by internal tooling only (no API
-- role reads reports beyond their id). Never a vote position or tally: a post's slider labels only.
create function app_private.report_snapshot(p_type app.report_target, p_target uuid)
  returns jsonb
  language sql stable
  set search_path = pg_catalog
  as $$
  select case p_type
    when 'post' then (
      select jsonb_build_object('authorId', p.author_id, 'authorUsername', coalesce(u.username, s.held_username),
                                'thoughtText', p.thought_text, 'sliderText', p.slider_text,
                                'sliderLabels', case when p.slider_text is not null then jsonb_build_array(p.slider_left_label, p.slider_right_label) end,
                                'articleTitle', a.title, 'articleUrl', a.url, 'sourcePostId', p.source_post_id,
                                'visibility', p.visibility, 'createdAt', p.created_at)
      from app.posts p
      join app.users u on u.id = p.author_id
      left join app_private.account_states s on s.user_id = p.author_id
      left join app.articles a on a.id = p.article_id
      where p.id = p_target)
    when 'user' then (
      select jsonb_build_object('username', coalesce(u.username, s.held_username), 'fullName', u.full_name, 'bio', u.bio)
      from app.users u left join app_private.account_states s on s.user_id = u.id
      where u.id = p_target)
    else (
      select jsonb_build_object('name', h.name, 'description', h.description, 'customLink', h.custom_link)
      from app.hubs h where h.id = p_target)
  end
$$;

create function app_private.report_filed()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  new.state := 'open';
  new.decided_at := null;
  new.decided_by := null;
  new.snapshot := app_private.report_snapshot(new.target_type, new.target_id);
  return new;
end
$$;
create trigger reports_snapshot before insert on app.reports for each row execute function app_private.report_filed();

update app.reports r set snapshot = app_private.report_snapshot(r.target_type, r.target_id) where r.snapshot is null;

-- Files the viewer's report, or answers the viewer's open report on the same target (a second
-- report while one is open files nothing: contract 14, 201 with the same reportId). Concurrent
-- identical reports meet on reports_one_open and answer one id.
create function app_private.file_report(p_type app.report_target, p_target uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_report uuid;
begin
  insert into app.reports (reporter_id, target_type, target_id, reason, details)
    values (v_viewer, p_type, p_target, p_reason, p_details)
    on conflict (reporter_id, target_type, target_id) where state = 'open' do nothing
    returning id into v_report;
  if v_report is null then
    select r.id into v_report from app.reports r
      where r.reporter_id = v_viewer and r.target_type = p_type and r.target_id = p_target and r.state = 'open';
  end if;
  return v_report;
end
$$;

-- The report endpoints' functions become security definer (the open report they answer is not a
-- column the reporter may read); each tests visibility with the same rule the target table's
-- policy applies to the viewer: users_select_public (a handle, not blocked either way), the hubs
-- policy (not removed), app.can_see_post (the posts policy).
create or replace function app.report_user(p_user_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_user_id = app.viewer_id()
     or not exists (select from app.users u where u.id = p_user_id and u.username is not null)
     or p_user_id = any (app.viewer_block_list()) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  return app_private.file_report('user', p_user_id, p_reason, p_details);
end
$$;

create or replace function app.report_hub(p_hub_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.hubs h where h.id = p_hub_id and h.removed_at is null) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  return app_private.file_report('hub', p_hub_id, p_reason, p_details);
end
$$;

create or replace function app.report_post(p_post_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if not app.can_see_post(p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  return app_private.file_report('post', p_post_id, p_reason, p_details);
end
$$;

-- Removed hubs (remove_hub below): out of every signed-in reader's sight by the hubs policy (GET
-- /hubs/{id}, search, member reads all go through it); internal tooling still reads them.
alter table app.hubs add column removed_at timestamptz;
drop policy hubs_select_signed_in on app.hubs;
create policy hubs_select_signed_in on app.hubs for select to app_user using (removed_at is null);

-- Whether a removed post was deleted already when it was removed (its author's deletion): restoring
-- it then leaves it deleted.
alter table app_private.removed_posts add column prior_deleted_at timestamptz;

-- The moderation log: one row per action, appended by the action's function, never changed.
create type app.moderation_action as enum (
  'remove_post', 'restore_post', 'suspend_user', 'unsuspend_user', 'remove_hub', 'resolve_report', 'dismiss_report', 'reopen_report');
create table app.moderation_log (
  id bigint generated always as identity primary key,
  action app.moderation_action not null,
  target_type app.report_target not null,
  target_id uuid not null,
  reason text,
  report_ids uuid[] not null default '{}',
  -- who: the operator's login for the CLI (npm run admin), "admin token" for internal GraphQL,
  -- "suspension ended" for the scheduled end of a suspension
  actor text not null,
  created_at timestamptz not null default now()
);
create index moderation_log_newest on app.moderation_log (created_at desc, id desc);
alter table app.moderation_log enable row level security;
alter table app.moderation_log force row level security;
-- Internal tooling reads the whole log; nobody else reads any of it.
create policy moderation_log_select_admin on app.moderation_log for select to app_admin using (true);
grant select on app.moderation_log to app_admin;

-- Append-only, for the owner too: an update, delete or truncate fails.
create function app_private.moderation_log_append_only()
  returns trigger
  language plpgsql
  as $$ begin raise exception 'the moderation log is append-only'; end $$;
create trigger moderation_log_append_only before update or delete on app.moderation_log
  for each row execute function app_private.moderation_log_append_only();
create trigger moderation_log_no_truncate before truncate on app.moderation_log
  for each statement execute function app_private.moderation_log_append_only();

-- Who acts: the CLI sets app.moderator (its operator); the admin token sets nothing.
create function app_private.moderator()
  returns text
  language sql stable
  as $$ select coalesce(nullif(current_setting('app.moderator', true), ''), 'admin token') $$;

-- Resolves the open reports of a target (an action on it answers them) and returns their ids.
create function app_private.resolve_target_reports(p_type app.report_target, p_target uuid)
  returns uuid[]
  language sql volatile
  set search_path = pg_catalog
  as $$
  with decided as (
    update app.reports r set state = 'resolved', decided_at = now(), decided_by = app_private.moderator()
    where r.target_type = p_type and r.target_id = p_target and r.state = 'open'
    returning r.id)
  select coalesce(array_agg(d.id order by d.id), '{}') from decided d
$$;

create function app_private.log_moderation(p_action app.moderation_action, p_type app.report_target, p_target uuid, p_reason text, p_reports uuid[])
  returns app.moderation_log
  language sql volatile
  set search_path = pg_catalog
  as $$
  insert into app.moderation_log (action, target_type, target_id, reason, report_ids, actor)
    values (p_action, p_type, p_target, p_reason, p_reports, app_private.moderator())
    returning *
$$;

create function app_private.require_reason(p_reason text)
  returns void
  language plpgsql
  as $$
begin
  if p_reason is null or btrim(p_reason) = '' or char_length(p_reason) > 1000 then
    perform app.fail('VALIDATION_FAILED');
  end if;
end
$$;

-- Removes a post: it disappears as a deleted post does, its author gets a post_removed row, and its
-- open reports are resolved. Removing a removed post changes nothing but the log.
create function app.remove_post(p_post_id uuid, p_reason text)
  returns app.moderation_log
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
begin
  perform app_private.require_reason(p_reason);
  select * into v_post from app.posts p where p.id = p_post_id for update;
  if not found then
    perform app.fail('POST_NOT_FOUND');
  end if;
  insert into app_private.removed_posts (post_id, reason, prior_deleted_at) values (p_post_id, p_reason, v_post.deleted_at)
    on conflict (post_id) do nothing;
  if found then
    update app.posts set deleted_at = now() where id = p_post_id and deleted_at is null;
    insert into app.notifications (recipient_id, type, post_id) values (v_post.author_id, 'post_removed', p_post_id);
  end if;
  return app_private.log_moderation('remove_post', 'post', p_post_id, p_reason, app_private.resolve_target_reports('post', p_post_id));
end
$$;

-- Restores a removed post: shown again, unless its author had deleted it before (it stays
-- deleted) or the author's account is hidden now (it comes back with the account).
create function app.restore_post(p_post_id uuid)
  returns app.moderation_log
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_post app.posts;
  v_removed app_private.removed_posts;
begin
  select * into v_post from app.posts p where p.id = p_post_id for update;
  if not found then
    perform app.fail('POST_NOT_FOUND');
  end if;
  delete from app_private.removed_posts r where r.post_id = p_post_id returning * into v_removed;
  if found and v_removed.prior_deleted_at is null then
    if app_private.account_hidden(v_post.author_id) then
      insert into app_private.hidden_rows (user_id, kind, row_id)
        select v_post.author_id, 'post', p_post_id
        where not exists (select from app_private.hidden_rows h where h.user_id = v_post.author_id and h.kind = 'post' and h.row_id = p_post_id);
    else
      update app.posts set deleted_at = null where id = p_post_id;
    end if;
  end if;
  return app_private.log_moderation('restore_post', 'post', p_post_id, null, '{}');
end
$$;

-- Suspends a user for p_days days (null: for good): signed out everywhere, push devices removed,
-- hidden like a deleted account (0261), sign-in and refresh refused with ACCOUNT_SUSPENDED. A
-- suspension for a time ends by itself (worker task lift_suspension at its end; a sign-in after the
-- end lifts it as well). Suspending a suspended user sets the new term.
create function app.suspend_user(p_user_id uuid, p_days integer, p_reason text)
  returns app.moderation_log
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_until timestamptz;
begin
  perform app_private.require_reason(p_reason);
  if p_days is not null and (p_days < 1 or p_days > 36500) then
    perform app.fail('VALIDATION_FAILED');
  end if;
  perform from app.users u where u.id = p_user_id and u.merged_into is null for update;
  if not found then
    perform app.fail('USER_NOT_FOUND');
  end if;
  perform app_private.hide_account(p_user_id);
  v_until := case when p_days is not null then now() + make_interval(days => p_days) end;
  update app_private.account_states s set suspended_at = now(), suspended_until = v_until, suspension_reason = p_reason
    where s.user_id = p_user_id;
  if v_until is not null then
    perform graphile_worker.add_job('lift_suspension', json_build_object('userId', p_user_id), run_at => v_until,
      job_key => 'lift_suspension:' || p_user_id, job_key_mode => 'replace');
  else
    perform graphile_worker.remove_job('lift_suspension:' || p_user_id);
  end if;
  return app_private.log_moderation('suspend_user', 'user', p_user_id, p_reason, app_private.resolve_target_reports('user', p_user_id));
end
$$;

create function app_private.end_suspension(p_user_id uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  update app_private.account_states s set suspended_at = null, suspended_until = null, suspension_reason = null
    where s.user_id = p_user_id;
  perform app_private.show_account(p_user_id);
  perform graphile_worker.remove_job('lift_suspension:' || p_user_id);
end
$$;

create function app.unsuspend_user(p_user_id uuid)
  returns app.moderation_log
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform from app.users u where u.id = p_user_id and u.merged_into is null for update;
  if not found then
    perform app.fail('USER_NOT_FOUND');
  end if;
  perform app_private.end_suspension(p_user_id);
  return app_private.log_moderation('unsuspend_user', 'user', p_user_id, null, '{}');
end
$$;

-- The worker's lift_suspension task: ends a suspension whose term is over (a job run early, or for
-- a suspension changed since, does nothing).
create function app_private.lift_suspension(p_user_id uuid)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform set_config('app.moderator', 'suspension ended', true);
  perform from app_private.account_states s where s.user_id = p_user_id and s.suspended_until <= now() for update;
  if not found then
    return false;
  end if;
  perform app_private.end_suspension(p_user_id);
  perform app_private.log_moderation('unsuspend_user', 'user', p_user_id, null, '{}');
  return true;
end
$$;

-- Removes a hub: out of everyone's sight (hubs policy), every membership ends (member counts
-- follow), pending invitations, invite links and join requests stop working.
create function app.remove_hub(p_hub_id uuid, p_reason text)
  returns app.moderation_log
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  perform app_private.require_reason(p_reason);
  perform from app.hubs h where h.id = p_hub_id for update;
  if not found then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  update app.hubs set removed_at = now() where id = p_hub_id and removed_at is null;
  if found then
    delete from app.hub_memberships where hub_id = p_hub_id;
    update app.hub_invitations set expires_at = now() where hub_id = p_hub_id and status = 'invited' and expires_at > now();
    update app.hub_invite_links set expires_at = now() where hub_id = p_hub_id and expires_at > now();
    update app.hub_join_requests set status = 'rejected', decided_at = now() where hub_id = p_hub_id and status = 'pending';
  end if;
  return app_private.log_moderation('remove_hub', 'hub', p_hub_id, p_reason, app_private.resolve_target_reports('hub', p_hub_id));
end
$$;

-- resolve, dismiss, reopen one report. Reopening a report while the same reporter has another open
-- report on that target leaves it as it is (one open report per reporter and target).
create function app_private.decide_report(p_report_id uuid, p_state app.report_state, p_action app.moderation_action)
  returns app.moderation_log
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_report app.reports;
begin
  select * into v_report from app.reports r where r.id = p_report_id for update;
  if not found then
    perform app.fail('REPORT_NOT_FOUND');
  end if;
  if p_state = 'open' then
    update app.reports r set state = 'open', decided_at = null, decided_by = null
      where r.id = p_report_id and r.state <> 'open'
        and not exists (select from app.reports o where o.reporter_id = v_report.reporter_id and o.target_type = v_report.target_type
                        and o.target_id = v_report.target_id and o.state = 'open');
  else
    update app.reports r set state = p_state, decided_at = now(), decided_by = app_private.moderator() where r.id = p_report_id;
  end if;
  return app_private.log_moderation(p_action, v_report.target_type, v_report.target_id, null, array[p_report_id]);
end
$$;

create function app.resolve_report(p_report_id uuid)
  returns app.moderation_log
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ select app_private.decide_report(p_report_id, 'resolved', 'resolve_report') $$;

create function app.dismiss_report(p_report_id uuid)
  returns app.moderation_log
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ select app_private.decide_report(p_report_id, 'dismissed', 'dismiss_report') $$;

create function app.reopen_report(p_report_id uuid)
  returns app.moderation_log
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ select app_private.decide_report(p_report_id, 'open', 'reopen_report') $$;

-- The queue: open reports grouped by target, most reported first, with the latest snapshot.
create function app.open_report_groups()
  returns table (target_type app.report_target, target_id uuid, report_ids uuid[], count integer, reasons text[], snapshot jsonb, first_reported_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select r.target_type, r.target_id, array_agg(r.id order by r.created_at, r.id), count(*)::integer,
         array_agg(distinct r.reason::text order by r.reason::text), (array_agg(r.snapshot order by r.created_at desc, r.id desc))[1], min(r.created_at)
  from app.reports r
  where r.state = 'open'
  group by r.target_type, r.target_id
  order by count(*) desc, min(r.created_at), r.target_id
$$;

revoke all on function app_private.report_snapshot(app.report_target, uuid), app_private.file_report(app.report_target, uuid, app.report_reason, text),
  app_private.moderator(), app_private.resolve_target_reports(app.report_target, uuid),
  app_private.log_moderation(app.moderation_action, app.report_target, uuid, text, uuid[]), app_private.require_reason(text),
  app_private.end_suspension(uuid), app_private.lift_suspension(uuid),
  app_private.decide_report(uuid, app.report_state, app.moderation_action) from public;
revoke all on function app.remove_post(uuid, text), app.restore_post(uuid), app.suspend_user(uuid, integer, text), app.unsuspend_user(uuid),
  app.remove_hub(uuid, text), app.resolve_report(uuid), app.dismiss_report(uuid), app.reopen_report(uuid), app.open_report_groups() from public;
grant execute on function app.remove_post(uuid, text), app.restore_post(uuid), app.suspend_user(uuid, integer, text), app.unsuspend_user(uuid),
  app.remove_hub(uuid, text), app.resolve_report(uuid), app.dismiss_report(uuid), app.reopen_report(uuid), app.open_report_groups() to app_admin;
grant execute on function app_private.lift_suspension(uuid) to app_worker;

-- Down Migration
revoke execute on function app_private.lift_suspension(uuid) from app_worker;
drop function app.open_report_groups();
drop function app.resolve_report(uuid), app.dismiss_report(uuid), app.reopen_report(uuid);
drop function app_private.decide_report(uuid, app.report_state, app.moderation_action);
drop function app.remove_hub(uuid, text), app_private.lift_suspension(uuid), app.unsuspend_user(uuid), app_private.end_suspension(uuid);
drop function app.suspend_user(uuid, integer, text), app.restore_post(uuid), app.remove_post(uuid, text);
drop function app_private.require_reason(text), app_private.log_moderation(app.moderation_action, app.report_target, uuid, text, uuid[]);
drop function app_private.resolve_target_reports(app.report_target, uuid), app_private.moderator();
drop table app.moderation_log;
drop function app_private.moderation_log_append_only();
drop type app.moderation_action;
alter table app_private.removed_posts drop column prior_deleted_at;
drop policy hubs_select_signed_in on app.hubs;
create policy hubs_select_signed_in on app.hubs for select to app_user using (true);
alter table app.hubs drop column removed_at;

create or replace function app.report_post(p_post_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile security invoker
  as $$
declare
  v_report uuid;
begin
  if not exists (select from app.posts p where p.id = p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  insert into app.reports (reporter_id, target_type, target_id, reason, details)
    values (app.viewer_id(), 'post', p_post_id, p_reason, p_details) returning id into v_report;
  return v_report;
end
$$;
alter function app.report_post(uuid, app.report_reason, text) reset search_path;

create or replace function app.report_hub(p_hub_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile security invoker
  as $$
declare
  v_report uuid;
begin
  if not exists (select from app.hubs h where h.id = p_hub_id) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  insert into app.reports (reporter_id, target_type, target_id, reason, details)
    values (app.viewer_id(), 'hub', p_hub_id, p_reason, p_details) returning id into v_report;
  return v_report;
end
$$;
alter function app.report_hub(uuid, app.report_reason, text) reset search_path;

create or replace function app.report_user(p_user_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile security invoker
  as $$
declare
  v_report uuid;
begin
  if p_user_id = app.viewer_id() or not exists (select from app.users u where u.id = p_user_id and u.username is not null) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  insert into app.reports (reporter_id, target_type, target_id, reason, details)
    values (app.viewer_id(), 'user', p_user_id, p_reason, p_details) returning id into v_report;
  return v_report;
end
$$;
alter function app.report_user(uuid, app.report_reason, text) reset search_path;

drop function app_private.file_report(app.report_target, uuid, app.report_reason, text);
drop trigger reports_snapshot on app.reports;
drop function app_private.report_filed(), app_private.report_snapshot(app.report_target, uuid);
drop index app.reports_open_targets;
drop index app.reports_one_open;
delete from app.reports where reporter_id is null;
alter table app.reports drop constraint reports_reporter_id_fkey,
  add constraint reports_reporter_id_fkey foreign key (reporter_id) references app.users (id);
alter table app.reports alter column reporter_id set not null;
alter table app.reports drop column snapshot, drop column decided_by, drop column decided_at, drop column state;
drop type app.report_state;
