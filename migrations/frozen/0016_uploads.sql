-- Up Migration
-- Uploads (spec 2.6, 4.3; contract section 6). An upload intent is created at presign time; the
-- client PUTs the bytes straight to object storage; completion turns the intent into a reusable
-- asset after the API checked the object (existence, size, SHA-256).
create type app.upload_purpose as enum ('profile_photo', 'hub_photo', 'post_image', 'document');

create table app.upload_intents (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null references app.users (id),
  purpose app.upload_purpose not null,
  content_type text not null,
  content_length bigint not null check (content_length > 0),
  -- Made by the server, never from client input.
  object_key text not null unique,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  completed_at timestamptz
);
create index upload_intents_owner_id on app.upload_intents (owner_id);
create index upload_intents_pending_expiry on app.upload_intents (expires_at) where completed_at is null;

create table app.assets (
  id uuid primary key default gen_random_uuid(),
  upload_id uuid not null unique references app.upload_intents (id),
  owner_id uuid not null references app.users (id),
  purpose app.upload_purpose not null,
  content_type text not null,
  size bigint not null,
  checksum text not null check (checksum ~ '^[0-9a-f]{64}$'),
  object_key text not null unique,
  created_at timestamptz not null default now()
);
create index assets_owner_id on app.assets (owner_id);

alter table app.users add constraint users_profile_asset_id_fkey foreign key (profile_asset_id) references app.assets (id);
alter table app.hub_profiles add constraint hub_profiles_profile_asset_id_fkey foreign key (profile_asset_id) references app.assets (id);
create index users_profile_asset_id on app.users (profile_asset_id);
create index hub_profiles_profile_asset_id on app.hub_profiles (profile_asset_id);

alter table app.upload_intents enable row level security;
alter table app.upload_intents force row level security;
alter table app.assets enable row level security;
alter table app.assets force row level security;

-- An upload intent is private to its owner.
create policy upload_intents_select_owner on app.upload_intents
  for select to app_user
  using (owner_id = (select app.viewer_id()));

-- Whether an asset is in use somewhere the viewer may look: as the profile photo of a user the
-- viewer can see. Security invoker on purpose: the users policy decides "can see". Hubs and posts
-- widen this when they arrive.
create function app.asset_in_visible_use(p_asset_id uuid)
  returns boolean
  language sql stable
  as $$ select exists (select from app.users u where u.profile_asset_id = p_asset_id) $$;

-- An asset is visible to its owner, and to viewers of a profile, hub or post that uses it.
create policy assets_select_visible on app.assets
  for select to app_anonymous
  using (owner_id = (select app.viewer_id()) or app.asset_in_visible_use(id));

grant select on app.upload_intents to app_user;
grant select on app.assets to app_anonymous, app_admin;
grant execute on function app.asset_in_visible_use(uuid) to app_anonymous;

create policy assets_select_admin on app.assets for select to app_admin using (true);

-- Presign: records the intent for the viewer and makes the object key. 15 minutes to complete.
create function app.create_upload_intent(p_purpose app.upload_purpose, p_content_type text, p_content_length bigint,
  out upload_id uuid, out object_key text, out expires_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  upload_id := gen_random_uuid();
  object_key := format('%s/%s/%s', p_purpose, app.viewer_id(), upload_id);
  expires_at := now() + interval '15 minutes';
  insert into app.upload_intents (id, owner_id, purpose, content_type, content_length, object_key, expires_at)
    values (upload_id, app.viewer_id(), p_purpose, p_content_type, p_content_length, object_key, expires_at);
end
$$;

-- The viewer's intent in a completable state, locked when p_lock: raises UPLOAD_NOT_FOUND (not the
-- viewer's), UPLOAD_PURPOSE_MISMATCH, UPLOAD_ALREADY_COMPLETED, UPLOAD_EXPIRED.
create function app_private.completable_upload(p_upload_id uuid, p_purpose app.upload_purpose, p_lock boolean)
  returns app.upload_intents
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_intent app.upload_intents;
begin
  if p_lock then
    select * into v_intent from app.upload_intents i where i.id = p_upload_id and i.owner_id = app.viewer_id() for update;
  else
    select * into v_intent from app.upload_intents i where i.id = p_upload_id and i.owner_id = app.viewer_id();
  end if;
  if not found then
    perform app.fail('UPLOAD_NOT_FOUND');
  elsif v_intent.purpose <> p_purpose then
    perform app.fail('UPLOAD_PURPOSE_MISMATCH');
  elsif v_intent.completed_at is not null then
    perform app.fail('UPLOAD_ALREADY_COMPLETED');
  elsif v_intent.expires_at <= now() then
    perform app.fail('UPLOAD_EXPIRED');
  end if;
  return v_intent;
end
$$;

-- Step 1 of completion: the state checks, before the API looks at the object.
create function app.check_upload(p_upload_id uuid, p_purpose app.upload_purpose,
  out object_key text, out content_length bigint)
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ select i.object_key, i.content_length from app_private.completable_upload(p_upload_id, p_purpose, false) i $$;

-- Step 2: after the object was verified, the transition itself (the row lock makes two concurrent
-- completions one asset and one UPLOAD_ALREADY_COMPLETED).
create function app.complete_upload(p_upload_id uuid, p_purpose app.upload_purpose, p_checksum text)
  returns app.assets
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_intent app.upload_intents;
  v_asset app.assets;
begin
  v_intent := app_private.completable_upload(p_upload_id, p_purpose, true);
  update app.upload_intents set completed_at = now() where id = p_upload_id;
  insert into app.assets (upload_id, owner_id, purpose, content_type, size, checksum, object_key)
    values (v_intent.id, v_intent.owner_id, v_intent.purpose, v_intent.content_type, v_intent.content_length,
            lower(p_checksum), v_intent.object_key)
    returning * into v_asset;
  return v_asset;
end
$$;

grant execute on function app.create_upload_intent(app.upload_purpose, text, bigint),
  app.check_upload(uuid, app.upload_purpose), app.complete_upload(uuid, app.upload_purpose, text) to app_user;

-- Down Migration
drop function app.complete_upload(uuid, app.upload_purpose, text);
drop function app.check_upload(uuid, app.upload_purpose);
drop function app_private.completable_upload(uuid, app.upload_purpose, boolean);
drop function app.create_upload_intent(app.upload_purpose, text, bigint);
alter table app.hub_profiles drop constraint hub_profiles_profile_asset_id_fkey;
alter table app.users drop constraint users_profile_asset_id_fkey;
drop table app.assets;
drop function app.asset_in_visible_use(uuid);
drop table app.upload_intents;
drop type app.upload_purpose;
