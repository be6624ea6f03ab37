-- Up Migration
-- Notification settings (contract 12 "Settings"): push on or off, and per notification type. They
-- decide push only (rows, the list, the stream and the badges are unchanged). Stored as the types
-- turned off, so every type is on until its user turns it off, types added to the enum later
-- included. A user without a row has every default. Read and written only through the two
-- functions below (no table grant: GraphQL does not show them).

create table app_private.notification_settings (
  user_id uuid primary key references app.users (id),
  push_enabled boolean not null default true,
  push_disabled_types app.notification_type[] not null default '{}',
  updated_at timestamptz not null default now()
);

-- The viewer's settings: one row per notification type of the enum (in enum order), with the
-- master switch repeated on each.
create function app.notification_settings()
  returns table (push_enabled boolean, type app.notification_type, type_enabled boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(s.push_enabled, true), t.type, not coalesce(t.type = any (s.push_disabled_types), false)
  from unnest(enum_range(null::app.notification_type)) as t(type)
  left join app_private.notification_settings s on s.user_id = app.viewer_id()
$$;

-- PATCH: p_enabled (null: unchanged), the types to turn on and off (each at most once). One
-- statement, so concurrent changes of one user never fail (the later one wins per field).
create function app.update_notification_settings(p_enabled boolean, p_enable app.notification_type[], p_disable app.notification_type[])
  returns table (push_enabled boolean, type app.notification_type, type_enabled boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  insert into app_private.notification_settings as s (user_id, push_enabled, push_disabled_types)
    values (app.viewer_id(), coalesce(p_enabled, true), coalesce(p_disable, '{}'))
    on conflict (user_id) do update
      set push_enabled = coalesce(p_enabled, s.push_enabled),
          push_disabled_types = array(
            select distinct t from unnest(s.push_disabled_types || coalesce(p_disable, '{}')) t
            where not t = any (coalesce(p_enable, '{}')) order by t),
          updated_at = now();
  return query select * from app.notification_settings();
end
$$;

grant execute on function app.notification_settings(), app.update_notification_settings(boolean, app.notification_type[], app.notification_type[]) to app_user;

-- Down Migration
drop function app.update_notification_settings(boolean, app.notification_type[], app.notification_type[]);
drop function app.notification_settings();
drop table app_private.notification_settings;
