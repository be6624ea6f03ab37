-- Up Migration
-- Default feed users (spec 2.8; contract sections 7 and 10): admin-managed users whose public posts
-- make the Home feed of guests and of users with no personal source. Managed by internal tooling
-- only (`npm run admin -- default-feed-users ...` and internal GraphQL with the admin token); the
-- feeds read the table inside their own functions, so no user role reads it.
create table app.default_feed_users (
  user_id uuid primary key references app.users (id),
  added_at timestamptz not null default now()
);

alter table app.default_feed_users enable row level security;
alter table app.default_feed_users force row level security;

-- Internal tooling (app_admin) lists them; it adds and removes through the two functions below,
-- which only app_admin may execute. No other API role has any privilege.
create policy default_feed_users_select_admin on app.default_feed_users
  for select to app_admin
  using (true);

grant select (user_id, added_at) on app.default_feed_users to app_admin;

-- The user with this handle (canonicalised like profile basics: trimmed, lowercased, a leading @
-- removed), or USER_NOT_FOUND.
create function app.user_id_by_handle(p_handle text)
  returns uuid
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
declare
  v_id uuid;
begin
  select u.id into v_id from app.users u
  where u.username = lower(regexp_replace(btrim(p_handle), '^@', '')) and u.merged_into is null;
  if v_id is null then
    perform app.fail('USER_NOT_FOUND');
  end if;
  return v_id;
end
$$;

-- Adds a default feed user by handle (a no-op when already one); returns the row.
create function app.add_default_feed_user(username text)
  returns app.default_feed_users
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_user uuid := app.user_id_by_handle(add_default_feed_user.username);
  v_row app.default_feed_users;
begin
  insert into app.default_feed_users (user_id) values (v_user) on conflict do nothing;
  select * into v_row from app.default_feed_users d where d.user_id = v_user;
  return v_row;
end
$$;

-- Removes a default feed user by handle; true when one was removed.
create function app.remove_default_feed_user(username text)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  delete from app.default_feed_users d where d.user_id = app.user_id_by_handle(remove_default_feed_user.username);
  return found;
end
$$;

grant execute on function app.user_id_by_handle(text), app.add_default_feed_user(text), app.remove_default_feed_user(text) to app_admin;

-- Down Migration
drop function app.remove_default_feed_user(text);
drop function app.add_default_feed_user(text);
drop function app.user_id_by_handle(text);
drop table app.default_feed_users;
