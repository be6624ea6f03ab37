-- Up Migration
-- Reports on users, hubs and posts (spec 4.5 list; contract section 7). A report notifies nobody.
create type app.report_target as enum ('user', 'hub', 'post');
create type app.report_reason as enum ('spam', 'harassment', 'hate', 'violence', 'sexual', 'misinformation', 'other');

create table app.reports (
  id uuid primary key default gen_random_uuid(),
  reporter_id uuid not null references app.users (id),
  target_type app.report_target not null,
  target_id uuid not null,
  reason app.report_reason not null,
  details text check (char_length(details) <= 1000),
  created_at timestamptz not null default now()
);
create index reports_target on app.reports (target_type, target_id);

alter table app.reports enable row level security;
alter table app.reports force row level security;

-- A reporter sees their own reports; internal tooling sees all.
create policy reports_select_own on app.reports for select to app_user using (reporter_id = (select app.viewer_id()));
create policy reports_select_admin on app.reports for select to app_admin using (true);

grant select on app.reports to app_user, app_admin;

-- A user files reports as themselves, and only that way.
create policy reports_insert_own on app.reports for insert to app_user with check (reporter_id = (select app.viewer_id()));
grant insert (reporter_id, target_type, target_id, reason, details) on app.reports to app_user;

-- Files a report on a target the viewer can see. Security invoker on purpose: the target table's
-- own policy decides visibility (USER_NOT_FOUND, HUB_NOT_FOUND; posts add POST_NOT_FOUND), and
-- the insert is checked by the policy above.
create function app.report_user(p_user_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile
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

create function app.report_hub(p_hub_id uuid, p_reason app.report_reason, p_details text)
  returns uuid
  language plpgsql volatile
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

grant execute on function app.report_user(uuid, app.report_reason, text), app.report_hub(uuid, app.report_reason, text) to app_user;

-- Down Migration
drop function app.report_hub(uuid, app.report_reason, text);
drop function app.report_user(uuid, app.report_reason, text);
drop table app.reports;
drop type app.report_reason;
drop type app.report_target;
