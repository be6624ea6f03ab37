-- Uploads: upload intents, completed assets, which assets a user may attach, and the cleanup of replaced
-- or unused objects.

create or replace function app.profile_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select app.is_profile_photo_of(p_asset_id, app.viewer_id()) $$;
comment on function app.profile_asset_usable(uuid) is
  'Whether an asset may be the viewer''s profile image (app.is_profile_photo_of for the viewer). Called by PATCH /users/me/profile and PATCH /users/me/hub-profile before they write, and by app.complete_media.';
grant execute on function app.profile_asset_usable(uuid) to app_user;

-- The media step, answered with or without a photo. Returns false (and changes nothing) when the
-- photo is not an asset the viewer may use as a profile photo.
create or replace function app.complete_media(p_profile_asset_id uuid)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_profile_asset_id is not null and not app.profile_asset_usable(p_profile_asset_id) then
    return false;
  end if;
  update app.users
    set media_completed_at = coalesce(media_completed_at, now()),
        profile_asset_id = coalesce(p_profile_asset_id, profile_asset_id)
    where id = app.viewer_id();
  return true;
end
$$;
comment on function app.complete_media(uuid) is
  'The onboarding media step, answered with or without a photo: false, changing nothing, when the photo is not one the viewer may use. Called by PUT /users/me/onboarding/media.';
grant execute on function app.complete_media(uuid) to app_user;

-- Where an asset is used: a user's, hub's or hub profile's image, or an article's media, as far as
-- the caller may read those rows. Under the assets policy that is use the viewer may see; run by the
-- table owner (the cleanup functions below, security definer) it is any use at all.
create or replace function app.asset_in_visible_use(p_asset_id uuid)
  returns boolean
  language sql stable
  as $$
  select exists (select from app.users u where u.profile_asset_id = p_asset_id)
      or exists (select from app.hubs h where h.profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles hp where hp.profile_asset_id = p_asset_id)
      or exists (select from app.articles a where p_asset_id = any (a.asset_ids))
$$;
comment on function app.asset_in_visible_use(uuid) is
  'Whether an asset is in use where the caller may see it: a user''s, hub''s or hub profile''s image, or an article''s media. Used by the policy assets_select_visible, and (as the owner: any use) by app_private.unused_asset_key and app_private.forget_asset.';
grant execute on function app.asset_in_visible_use(uuid) to app_anonymous;

-- Presign: records the intent for the viewer and makes the object key. 15 minutes to complete.
create or replace function app.create_upload_intent(p_purpose app.upload_purpose, p_content_type text, p_content_length bigint,
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
comment on function app.create_upload_intent(app.upload_purpose, text, bigint) is
  'Records the viewer''s upload intent and makes its object key; it must be completed within 15 minutes. Called by POST /uploads/presign.';
grant execute on function app.create_upload_intent(app.upload_purpose, text, bigint) to app_user;

-- The viewer's intent in a completable state, locked when p_lock: raises UPLOAD_NOT_FOUND (not the
-- viewer's), UPLOAD_PURPOSE_MISMATCH, UPLOAD_ALREADY_COMPLETED, UPLOAD_EXPIRED.
create or replace function app_private.completable_upload(p_upload_id uuid, p_purpose app.upload_purpose, p_lock boolean)
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
comment on function app_private.completable_upload(uuid, app.upload_purpose, boolean) is
  'The one completability rule of an upload intent (the viewer''s, of the purpose, not completed, not expired), locking the row when asked. Used by app.check_upload and app.complete_upload.';

create or replace function app.check_upload(p_upload_id uuid, p_purpose app.upload_purpose,
  out object_key text, out content_length bigint, out content_type text)
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  select i.object_key, i.content_length, i.content_type from app_private.completable_upload(p_upload_id, p_purpose, false) i
$$;
comment on function app.check_upload(uuid, app.upload_purpose) is
  'Step 1 of completing an upload: the intent''s object key, length and type, for Node to verify the stored object against, when the intent is completable. Called by POST /uploads/complete.';
grant execute on function app.check_upload(uuid, app.upload_purpose) to app_user;

-- Step 2: after the object was verified, the transition itself (the row lock makes two concurrent
-- completions one asset and one UPLOAD_ALREADY_COMPLETED).
create or replace function app.complete_upload(p_upload_id uuid, p_purpose app.upload_purpose, p_checksum text)
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
comment on function app.complete_upload(uuid, app.upload_purpose, text) is
  'Step 2 of completing an upload, after the object was verified: marks the intent completed and creates the asset; the row lock makes two concurrent completions one asset and one UPLOAD_ALREADY_COMPLETED. Called by POST /uploads/complete.';
grant execute on function app.complete_upload(uuid, app.upload_purpose, text) to app_user;

-- Replacing a profile image queues the old asset for deletion in the same transaction, so the job
-- exists if and only if the replacement committed.
create or replace function app_private.queue_replaced_asset() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if old.profile_asset_id is not null and old.profile_asset_id is distinct from new.profile_asset_id then
    perform graphile_worker.add_job('delete_asset', json_build_object('assetId', old.profile_asset_id),
      job_key => 'delete_asset:' || old.profile_asset_id);
  end if;
  return new;
end
$$;
comment on function app_private.queue_replaced_asset() is
  'Replacing a profile image queues the delete_asset job for the old asset in the same transaction, so the job exists exactly when the replacement committed. Runs from the triggers users_queue_replaced_photo and hub_profiles_queue_replaced_photo.';

-- Was the cleanup's copy of app.asset_in_visible_use's four tests: dropped (the cleanup functions
-- below call that rule; run by the owner, it sees every row).
drop function if exists app_private.asset_referenced(uuid);

-- The object key of an asset nothing uses any more (null otherwise). The task deletes the object,
-- then calls forget_asset, which removes the row if it is still unused.
create or replace function app_private.unused_asset_key(p_asset_id uuid)
  returns text
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select a.object_key from app.assets a where a.id = p_asset_id and not app.asset_in_visible_use(a.id) $$;
comment on function app_private.unused_asset_key(uuid) is
  'The object key of an asset nothing uses (null otherwise), for the worker task delete_asset to delete the object.';
grant execute on function app_private.unused_asset_key(uuid) to app_worker;

create or replace function app_private.forget_asset(p_asset_id uuid)
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ delete from app.assets a where a.id = p_asset_id and not app.asset_in_visible_use(a.id) $$;
comment on function app_private.forget_asset(uuid) is
  'Removes an asset row if it is still unused, after the worker task delete_asset deleted its object.';
grant execute on function app_private.forget_asset(uuid) to app_worker;

-- Intents that expired without completion, oldest first; forget_upload_intents removes them after
-- their objects (if any were uploaded) are gone.
create or replace function app_private.expired_upload_intents(p_limit int)
  returns table (id uuid, object_key text)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select i.id, i.object_key from app.upload_intents i
  where i.completed_at is null and i.expires_at < now()
  order by i.expires_at limit p_limit
$$;
comment on function app_private.expired_upload_intents(integer) is
  'Upload intents that expired without completion, oldest first, for the worker task purge_expired_uploads to delete their objects.';
grant execute on function app_private.expired_upload_intents(integer) to app_worker;

create or replace function app_private.forget_upload_intents(p_ids uuid[])
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ delete from app.upload_intents where id = any (p_ids) and completed_at is null $$;
comment on function app_private.forget_upload_intents(uuid[]) is
  'Removes expired, uncompleted upload intents once the worker task purge_expired_uploads deleted their objects.';
grant execute on function app_private.forget_upload_intents(uuid[]) to app_worker;

-- Whether an asset may become a hub's image: a completed hub_photo asset of the viewer.
create or replace function app.hub_asset_usable(p_asset_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select exists (select from app.assets a where a.id = p_asset_id and a.owner_id = app.viewer_id() and a.purpose = 'hub_photo')
$$;
comment on function app.hub_asset_usable(uuid) is
  'Whether an asset may become a hub''s image: a completed hub_photo asset of the viewer. Called by POST /hubs and PATCH /hubs/{hubId} before they write, and by app.create_hub and app.update_hub.';
grant execute on function app.hub_asset_usable(uuid) to app_user;

-- Whether assets may illustrate a media article: completed post_image assets of the viewer.
create or replace function app.post_assets_usable(p_asset_ids uuid[])
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(array_length(p_asset_ids, 1), 0) = (
    select count(*) from app.assets a
    where a.id = any (p_asset_ids) and a.owner_id = app.viewer_id() and a.purpose = 'post_image')
$$;
comment on function app.post_assets_usable(uuid[]) is
  'Whether assets may illustrate a media article: all are completed post_image assets of the viewer. Called by POST /posts and by app.create_post.';
grant execute on function app.post_assets_usable(uuid[]) to app_user;

-- TG_ARGV[0] names the column holding the row's user (id on users, user_id on hub_profiles).
create or replace function app_private.check_profile_asset() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if new.profile_asset_id is not null
     and (tg_op = 'INSERT' or new.profile_asset_id is distinct from old.profile_asset_id)
     and not app.is_profile_photo_of(new.profile_asset_id, (to_jsonb(new) ->> tg_argv[0])::uuid) then
    perform app.fail('VALIDATION_FAILED');
  end if;
  return new;
end
$$;
comment on function app_private.check_profile_asset() is
  'A profile image must be the user''s own profile photo (VALIDATION_FAILED otherwise), whoever writes it. Runs from the triggers users_check_profile_asset (tg_argv: id) and hub_profiles_check_profile_asset (user_id).';

create policy assets_select_admin on app.assets for select to app_admin using (true);
comment on policy assets_select_admin on app.assets is
  'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every asset.';

-- An asset is visible to its owner, and to viewers of a profile, hub or post that uses it.
create policy assets_select_visible on app.assets
  for select to app_anonymous
  using (owner_id = (select app.viewer_id()) or app.asset_in_visible_use(id));
comment on policy assets_select_visible on app.assets is
  'An asset is visible to its owner and to viewers of a profile, hub or post that uses it. Serves GET /uploads/{assetId}/download-url and the image keys of profiles, hubs, members and cards.';

grant select on app.assets to app_admin;
grant select (id, object_key) on app.assets to app_anonymous;

-- An upload intent is private to its owner.
create policy upload_intents_select_owner on app.upload_intents
  for select to app_user
  using (owner_id = (select app.viewer_id()));
comment on policy upload_intents_select_owner on app.upload_intents is
  'An upload intent is private to its owner (the internal GraphQL API; the upload endpoints use security-definer functions).';

grant select (id, owner_id, purpose, content_type, content_length, object_key, created_at, expires_at, completed_at) on app.upload_intents to app_user;

create trigger hub_profiles_check_profile_asset
  before insert or update of profile_asset_id on app.hub_profiles
  for each row execute function app_private.check_profile_asset('user_id');
comment on trigger hub_profiles_check_profile_asset on app.hub_profiles is
  'A hub profile''s image must be the user''s own profile photo (app_private.check_profile_asset).';

create trigger hub_profiles_queue_replaced_photo
  after update of profile_asset_id on app.hub_profiles
  for each row execute function app_private.queue_replaced_asset();
comment on trigger hub_profiles_queue_replaced_photo on app.hub_profiles is
  'Queues the replaced hub profile image for deletion (app_private.queue_replaced_asset).';

create trigger users_check_profile_asset
  before update of profile_asset_id on app.users
  for each row execute function app_private.check_profile_asset('id');
comment on trigger users_check_profile_asset on app.users is
  'A user''s profile image must be their own profile photo (app_private.check_profile_asset).';

create trigger users_queue_replaced_photo
  after update of profile_asset_id on app.users
  for each row execute function app_private.queue_replaced_asset();
comment on trigger users_queue_replaced_photo on app.users is
  'Queues the replaced profile image for deletion (app_private.queue_replaced_asset).';
