-- Moderation: reports, the moderation log, removing and restoring posts and hubs, suspensions.
-- The report endpoints' functions become security definer (the open report they answer is not a
-- column the reporter may read); each tests visibility with the same rule the target table's
-- policy applies to the viewer: users_select_public (a handle, not blocked either way), the hubs
-- policy (not removed), app.can_see_post (the posts policy).
create or replace function app.report_user(
  p_user_id uuid,
  p_reason app.report_reason,
  p_details text
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if p_user_id = app.viewer_id()
     or not exists (select from app.users u where u.id = p_user_id and app.user_visible(u.id, u.username, app.viewer_id(), app.viewer_block_list())) then
    perform app.fail('USER_NOT_FOUND');
  end if;
  return app_private.file_report('user', p_user_id, p_reason, p_details);
end
$$;

comment on function app.report_user(uuid, app.report_reason, text) is
  'POST /reports/users/{userId} (server/reports/routes.ts): files the viewer''s report on a user the viewer may see (not themselves, a user with a handle, not blocked either way, else USER_NOT_FOUND), or answers the viewer''s open report on that user. Security definer: the open report it answers is not a row the reporter may read.';

grant execute on function app.report_user(uuid, app.report_reason, text) to app_user;

create or replace function app.report_hub(
  p_hub_id uuid,
  p_reason app.report_reason,
  p_details text
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if not exists (select from app.hubs h where h.id = p_hub_id and h.removed_at is null) then
    perform app.fail('HUB_NOT_FOUND');
  end if;
  return app_private.file_report('hub', p_hub_id, p_reason, p_details);
end
$$;

comment on function app.report_hub(uuid, app.report_reason, text) is
  'POST /reports/hubs/{hubId} (server/reports/routes.ts): files the viewer''s report on a hub that is not removed (else HUB_NOT_FOUND), or answers the viewer''s open report on that hub. Security definer: the open report it answers is not a row the reporter may read.';

grant execute on function app.report_hub(uuid, app.report_reason, text) to app_user;

create or replace function app.report_post(
  p_post_id uuid,
  p_reason app.report_reason,
  p_details text
)
  returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
begin
  if not app.can_see_post(p_post_id) then
    perform app.fail('POST_NOT_FOUND');
  end if;
  return app_private.file_report('post', p_post_id, p_reason, p_details);
end
$$;

comment on function app.report_post(uuid, app.report_reason, text) is
  'POST /reports/posts/{postId} (server/reports/routes.ts): files the viewer''s report on a post the viewer may see (app.can_see_post, the posts policy''s rule, else POST_NOT_FOUND), or answers the viewer''s open report on that post. Security definer: the open report it answers is not a row the reporter may read.';

grant execute on function app.report_post(uuid, app.report_reason, text) to app_user;

-- What a report is about, as it is when the report is filed. Read by internal tooling only (no API
-- role reads reports beyond their id). Never a vote position or tally: a post's slider labels only.
create or replace function app_private.report_snapshot(
  p_type app.report_target,
  p_target uuid
)
  returns jsonb
  language sql
  stable
  set search_path = pg_catalog
  as $$
  select
    case p_type
    when 'post' then
(
      select
        jsonb_build_object('authorId', p.author_id, 'authorUsername', coalesce(u.username, s.held_username), 'thoughtText',
          p.thought_text, 'sliderText', p.slider_text, 'sliderLabels', case when p.slider_text is not null then
            jsonb_build_array(p.slider_left_label, p.slider_right_label)
          end, 'articleTitle', a.title, 'articleUrl', a.url, 'sourcePostId', p.source_post_id, 'visibility', p.visibility, 'createdAt', p.created_at)
      from
        app.posts p
        join app.users u on u.id = p.author_id
        left join app_private.account_states s on s.user_id = p.author_id
        left join app.articles a on a.id = p.article_id
      where
        p.id = p_target)
    when 'user' then
(
      select
        jsonb_build_object('username', coalesce(u.username, s.held_username), 'fullName', u.full_name, 'bio', u.bio)
      from
        app.users u
      left join app_private.account_states s on s.user_id = u.id
    where
      u.id = p_target)
else
(
    select
      jsonb_build_object('name', h.name, 'description', h.description, 'customLink', h.custom_link)
    from
      app.hubs h
    where
      h.id = p_target)
    end
$$;

comment on function app_private.report_snapshot(app.report_target, uuid) is
  'What a report is about, as it is when the report is filed, so a moderator sees what was reported after an edit or a deletion; a post''s slider labels only, never a vote position or tally. Called by the trigger function app_private.report_filed; shown by app.open_report_groups.';

create or replace function app_private.report_filed()
  returns trigger
  language plpgsql
  security definer
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

comment on function app_private.report_filed() is
  'A new report is open, undecided and carries the snapshot of its target (app_private.report_snapshot), whatever the insert said: the function of the trigger _200_snapshot on app.reports.';

-- Files the viewer's report, or answers the viewer's open report on the same target (a second
-- report while one is open files nothing: contract 14, 201 with the same reportId). Concurrent
-- identical reports meet on reports_one_open and answer one id.
create or replace function app_private.file_report(
  p_type app.report_target,
  p_target uuid,
  p_reason app.report_reason,
  p_details text
)
  returns uuid
  language plpgsql
  volatile
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

comment on function app_private.file_report(app.report_target, uuid, app.report_reason, text) is
  'Files the viewer''s report, or answers the id of the viewer''s open report on the same target (contract 14: one open report per reporter and target, 201 with the same reportId; concurrent ones meet on the index reports_one_open). Called by app.report_user, app.report_hub and app.report_post once they checked the target.';

-- Append-only, for the owner too: an update, delete or truncate fails.
create or replace function app_private.moderation_log_append_only()
  returns trigger
  language plpgsql
  as $$ begin raise exception 'the moderation log is append-only'; end $$;

comment on function app_private.moderation_log_append_only() is
  'Makes the moderation log append-only, for the owner too: any update, delete or truncate fails. The function of the triggers _100_append_only and _100_no_truncate on app.moderation_log.';

-- Who acts: the CLI sets app.moderator (its operator); the admin token sets nothing.
create or replace function app_private.moderator()
  returns text
  language sql
  stable
  as $$
  select
    coalesce(nullif(current_setting('app.moderator', true), ''), 'admin token')
$$;

comment on function app_private.moderator() is
  'Who acts, as the moderation log and decided reports record it: the operator the admin CLI sets in app.moderator (cli:<login>; the lift_suspension task sets suspension ended), else admin token (internal GraphQL). Read by app_private.log_moderation, app_private.resolve_target_reports and app_private.decide_report.';

-- Resolves the open reports of a target (an action on it answers them) and returns their ids.
create or replace function app_private.resolve_target_reports(
  p_type app.report_target,
  p_target uuid
)
  returns uuid[]
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  with decided as(
    update
      app.reports r
    set
      state = 'resolved',
      decided_at = now(),
      decided_by = app_private.moderator()
    where
      r.target_type = p_type
      and r.target_id = p_target
      and r.state = 'open'
    returning
      r.id
)
  select
    coalesce(array_agg(d.id order by d.id), '{}')
  from
    decided d
$$;

comment on function app_private.resolve_target_reports(app.report_target, uuid) is
  'An action on a target answers its reports: resolves every open report of the target and returns their ids (for its log row). Called by app.remove_post, app.suspend_user and app.remove_hub.';

create or replace function app_private.log_moderation(
  p_action app.moderation_action,
  p_type app.report_target,
  p_target uuid,
  p_reason text,
  p_reports uuid[]
)
  returns app.moderation_log
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  insert into app.moderation_log(action, target_type, target_id, reason, report_ids, actor)
    values(p_action, p_type, p_target, p_reason, p_reports, app_private.moderator())
  returning
    *
$$;

comment on function app_private.log_moderation(app.moderation_action, app.report_target, uuid, text, uuid[]) is
  'Writes the moderation log row of an action, with the acting moderator (app_private.moderator), and returns it: every moderation function answers its log row. Called by each action of this file and by the lift_suspension task (app_private.lift_suspension).';

create or replace function app_private.require_reason(
  p_reason text
)
  returns void
  language plpgsql
  as $$
begin
  if p_reason is null or btrim(p_reason) = '' or char_length(p_reason) > 1000 then
    perform app.fail('VALIDATION_FAILED');
  end if;
end
$$;

comment on function app_private.require_reason(text) is
  'An action that hides something needs a reason of 1 to 1000 characters, not blank (else VALIDATION_FAILED). Called by app.remove_post, app.suspend_user and app.remove_hub.';

-- Removes a post: it disappears as a deleted post does, its author gets a post_removed row, and its
-- open reports are resolved. Removing a removed post changes nothing but the log.
create or replace function app.remove_post(
  p_post_id uuid,
  p_reason text
)
  returns app.moderation_log
  language plpgsql
  volatile
  security definer
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

comment on function app.remove_post(uuid, text) is
  'Removes a post (moderation, contract 14): it disappears as a deleted post does, its author gets a post_removed notification, its open reports are resolved, and the action is logged (with the reason). Removing a removed post changes nothing but the log. Admin token only: the GraphQL mutation removePost and npm run admin -- posts remove.';

grant execute on function app.remove_post(uuid, text) to app_admin;

-- Restores a removed post: shown again, unless its author had deleted it before (it stays
-- deleted) or the author's account is hidden now (it comes back with the account).
create or replace function app.restore_post(
  p_post_id uuid
)
  returns app.moderation_log
  language plpgsql
  volatile
  security definer
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

comment on function app.restore_post(uuid) is
  'Restores a removed post: shown again, unless its author had deleted it before (it stays deleted) or the author''s account is hidden now (it comes back with the account); logged. Admin token only: the GraphQL mutation restorePost and npm run admin -- posts restore.';

grant execute on function app.restore_post(uuid) to app_admin;

-- Suspends a user for p_days days (null: for good): signed out everywhere, push devices removed,
-- hidden like a deleted account (app_private.hide_account), sign-in and refresh refused with ACCOUNT_SUSPENDED. A
-- suspension for a time ends by itself (worker task lift_suspension at its end; a sign-in after the
-- end lifts it as well). Suspending a suspended user sets the new term.
create or replace function app.suspend_user(
  p_user_id uuid,
  p_days integer,
  p_reason text
)
  returns app.moderation_log
  language plpgsql
  volatile
  security definer
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

comment on function app.suspend_user(uuid, integer, text) is
  'Suspends a user for p_days days (null: for good): signed out everywhere, push devices removed, hidden as a deleted account is, sign-in and refresh refused with ACCOUNT_SUSPENDED; a term ends by itself (worker task lift_suspension). Suspending again sets the new term. Admin token only: the GraphQL mutation suspendUser and npm run admin -- users suspend.';

grant execute on function app.suspend_user(uuid, integer, text) to app_admin;

create or replace function app_private.end_suspension(
  p_user_id uuid
)
  returns void
  language plpgsql
  volatile
  set search_path = pg_catalog
  as $$
begin
  update app_private.account_states s set suspended_at = null, suspended_until = null, suspension_reason = null
    where s.user_id = p_user_id;
  perform app_private.show_account(p_user_id);
  perform graphile_worker.remove_job('lift_suspension:' || p_user_id);
end
$$;

comment on function app_private.end_suspension(uuid) is
  'Ends a suspension: clears it, shows the account again unless its deletion is requested (app_private.show_account), and cancels the queued lift_suspension job. Called by app.unsuspend_user and app_private.lift_suspension.';

create or replace function app.unsuspend_user(
  p_user_id uuid
)
  returns app.moderation_log
  language plpgsql
  volatile
  security definer
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

comment on function app.unsuspend_user(uuid) is
  'Ends a user''s suspension now and logs it (the account is shown again unless its deletion is requested). Admin token only: the GraphQL mutation unsuspendUser and npm run admin -- users unsuspend.';

grant execute on function app.unsuspend_user(uuid) to app_admin;

-- The worker's lift_suspension task: ends a suspension whose term is over (a job run early, or for
-- a suspension changed since, does nothing).
create or replace function app_private.lift_suspension(
  p_user_id uuid
)
  returns boolean
  language plpgsql
  volatile
  security definer
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

comment on function app_private.lift_suspension(uuid) is
  'Ends a suspension whose term is over, logged as by suspension ended; a job run early, or for a suspension changed since, does nothing (false). Called by the worker task lift_suspension (worker/tasks/reports/lift-suspension.ts) that app.suspend_user queues for the end of the term.';

grant execute on function app_private.lift_suspension(uuid) to app_worker;

-- Removes a hub: out of everyone's sight (hubs policy), every membership ends (member counts
-- follow), pending invitations, invite links and join requests stop working.
create or replace function app.remove_hub(
  p_hub_id uuid,
  p_reason text
)
  returns app.moderation_log
  language plpgsql
  volatile
  security definer
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

comment on function app.remove_hub(uuid, text) is
  'Removes a hub (moderation, contract 14): out of everyone''s sight (hubs policy), every membership ends, pending invitations, invite links and join requests stop working, its open reports are resolved, and the action is logged. Admin token only: the GraphQL mutation removeHub and npm run admin -- hubs remove.';

grant execute on function app.remove_hub(uuid, text) to app_admin;

-- resolve, dismiss, reopen one report. Reopening a report while the same reporter has another open
-- report on that target leaves it as it is (one open report per reporter and target).
create or replace function app_private.decide_report(
  p_report_id uuid,
  p_state app.report_state,
  p_action app.moderation_action
)
  returns app.moderation_log
  language plpgsql
  volatile
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

comment on function app_private.decide_report(uuid, app.report_state, app.moderation_action) is
  'Sets one report''s state (resolved, dismissed, or open again unless its reporter has another open report on that target) and logs the decision; REPORT_NOT_FOUND for an unknown id. Called by app.resolve_report, app.dismiss_report and app.reopen_report.';

create or replace function app.resolve_report(
  p_report_id uuid
)
  returns app.moderation_log
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    app_private.decide_report(p_report_id, 'resolved', 'resolve_report')
$$;

comment on function app.resolve_report(uuid) is
  'Marks one report resolved and logs it. Admin token only: the GraphQL mutation resolveReport and npm run admin -- reports resolve.';

grant execute on function app.resolve_report(uuid) to app_admin;

create or replace function app.dismiss_report(
  p_report_id uuid
)
  returns app.moderation_log
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    app_private.decide_report(p_report_id, 'dismissed', 'dismiss_report')
$$;

comment on function app.dismiss_report(uuid) is
  'Marks one report dismissed (no action taken) and logs it. Admin token only: the GraphQL mutation dismissReport and npm run admin -- reports dismiss.';

grant execute on function app.dismiss_report(uuid) to app_admin;

create or replace function app.reopen_report(
  p_report_id uuid
)
  returns app.moderation_log
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  select
    app_private.decide_report(p_report_id, 'open', 'reopen_report')
$$;

comment on function app.reopen_report(uuid) is
  'Opens a decided report again (unchanged while its reporter has another open report on that target) and logs it. Admin token only: the GraphQL mutation reopenReport and npm run admin -- reports reopen.';

grant execute on function app.reopen_report(uuid) to app_admin;

-- The queue: open reports grouped by target, most reported first, with the latest snapshot.
create or replace function app.open_report_groups()
  returns table(
      target_type app.report_target,
      target_id uuid,
      report_ids uuid[],
      count integer,
      reasons text[],
      snapshot jsonb,
      first_reported_at timestamptz
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    r.target_type,
    r.target_id,
    array_agg(r.id order by r.created_at, r.id),
    count(*)::integer,
    array_agg(distinct r.reason::text order by r.reason::text),
(array_agg(r.snapshot order by r.created_at desc, r.id desc))[1],
    min(r.created_at)
  from
    app.reports r
  where
    r.state = 'open'
  group by
    r.target_type,
    r.target_id
  order by
    count(*) desc,
      min(r.created_at),
        r.target_id
$$;

comment on function app.open_report_groups() is
  'The moderation queue: open reports grouped by target, most reported first, with their ids, reasons and the latest snapshot of the target. Admin token only: the GraphQL query openReportGroups and npm run admin -- reports list.';

grant execute on function app.open_report_groups() to app_admin;

create or replace function app_private.delete_hub(
  p_hub_id uuid
)
  returns void
  language plpgsql
  volatile
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
  delete from app_private.sealed_ballots where hub_id = p_hub_id;
  delete from app.post_hubs where hub_id = p_hub_id;
  delete from app.notifications where hub_id = p_hub_id;
  delete from app.hubs where id = p_hub_id;
  if v_photo is not null then
    perform graphile_worker.add_job('delete_asset', json_build_object('assetId', v_photo), job_key => 'delete_asset:' || v_photo);
  end if;
end
$$;

comment on function app_private.delete_hub(uuid) is
  'Deletes a hub with everything in it (discussions, memberships, invitations, invite links, join requests, activity, its vote counters, scope receipts and sealed ballots, its post links, notifications) and queues the deletion of its image (worker task delete_asset). Called by app_private.purge_account_content when a purged user leaves a hub that nobody, hidden members included, belongs to any more.';

-- Internal tooling reads the whole log; nobody else reads any of it.
create policy moderation_log_select_admin on app.moderation_log
  for select to app_admin
    using (true);

comment on policy moderation_log_select_admin on app.moderation_log is
  'Internal tooling reads the whole moderation log (npm run admin -- moderation-log, the GraphQL query allModerationLogs of the admin token); no other role reads any of it, and nobody writes it but the moderation functions.';

grant select on app.moderation_log to app_admin;

-- Nobody inserts reports as app_user: POST /reports/users|hubs|posts/... go through the security
-- definer app.report_* functions, which file the viewer as reporter (app_private.file_report), and
-- the user token's GraphQL has no mutations. So app_user holds no insert grant and no insert policy.
create policy reports_select_admin on app.reports
  for select to app_admin
    using (true);

comment on policy reports_select_admin on app.reports is
  'Internal tooling reads every report (the GraphQL query allReports of the admin token); the queue itself is app.open_report_groups.';

-- A reporter sees their own reports; internal tooling sees all.
create policy reports_select_own on app.reports
  for select to app_user
    using (reporter_id =(
      select
        app.viewer_id()));

comment on policy reports_select_own on app.reports is
  'A reporter sees their own reports and nobody else''s, and of them only the id (column grant): the user token''s internal GraphQL (allReports).';

grant select on app.reports to app_admin;

grant select (id) on app.reports to app_user;

create trigger _100_append_only
  before update or delete on app.moderation_log for each row
  execute function app_private.moderation_log_append_only();

comment on trigger _100_append_only on app.moderation_log is
  'Refuses every update and delete of a log row (app_private.moderation_log_append_only): the log is append-only, for the owner too.';

create trigger _100_no_truncate
  before truncate on app.moderation_log for each statement
  execute function app_private.moderation_log_append_only();

comment on trigger _100_no_truncate on app.moderation_log is
  'Refuses a truncate of the log (app_private.moderation_log_append_only): the log is append-only, for the owner too.';

create trigger _200_snapshot
  before insert on app.reports for each row
  execute function app_private.report_filed();

comment on trigger _200_snapshot on app.reports is
  'Every new report starts open, undecided, with the snapshot of its target (app_private.report_filed), whoever inserts it.';
