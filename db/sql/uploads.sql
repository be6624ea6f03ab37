-- Uploads: upload intents, completed assets, which assets a user may attach, and the cleanup of replaced
-- or unused objects.
create or replace function app.profile_asset_usable(
  p_asset_id uuid
)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    app.is_profile_photo_of(p_asset_id, app.viewer_id())
$$;

comment on function app.profile_asset_usable(uuid) is
  'Whether an asset may be the viewer''s profile image (app.is_profile_photo_of for the viewer). Called by PATCH /users/me/profile and PATCH /users/me/hub-profile before they write, and by app.complete_media.';

grant execute on function app.profile_asset_usable(uuid) to app_user;

-- The media step, answered with or without a photo. Returns false (and changes nothing) when the
-- photo is not an asset the viewer may use as a profile photo.
create or replace function app.complete_media(
  p_profile_asset_id uuid
)
  returns boolean
  language plpgsql
  volatile
  security definer
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
create or replace function app.asset_in_visible_use(
  p_asset_id uuid
)
  returns boolean
  language sql
  stable
  as $$
  select
    exists(
      select
      from
        app.users u
      where
        u.profile_asset_id = p_asset_id)
    or exists(
      select
      from
        app.hubs h
      where
        h.profile_asset_id = p_asset_id)
    or exists(
      select
      from
        app.hub_profiles hp
      where
        hp.profile_asset_id = p_asset_id)
    or exists(
      select
      from
        app.articles a
      where
        p_asset_id = any(a.asset_ids))
$$;

comment on function app.asset_in_visible_use(uuid) is
  'Whether an asset is in use where the caller may see it: a user''s, hub''s or hub profile''s image, or an article''s media. Used by the policy assets_select_visible, and (as the owner: any use) by app_private.unused_asset_key and app_private.forget_asset.';

grant execute on function app.asset_in_visible_use(uuid) to app_anonymous;

-- Presign: records the intent for the viewer and makes the object key. 15 minutes to complete.
create or replace function app.create_upload_intent(
  p_purpose app.upload_purpose,
  p_content_type text,
  p_content_length bigint,
  out upload_id uuid,
  out object_key text,
  out expires_at timestamptz
)
language plpgsql
volatile
security definer
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
create or replace function app_private.completable_upload(
  p_upload_id uuid,
  p_purpose app.upload_purpose,
  p_lock boolean
)
  returns app.upload_intents
  language plpgsql
  volatile
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

create or replace function app.check_upload(
  p_upload_id uuid,
  p_purpose app.upload_purpose,
  out object_key text,
  out content_length bigint,
  out content_type text
)
language sql
volatile
security definer
set search_path = pg_catalog
as $$
  select
    i.object_key,
    i.content_length,
    i.content_type
  from
    app_private.completable_upload(p_upload_id, p_purpose, false) i
$$;

comment on function app.check_upload(uuid, app.upload_purpose) is
  'Step 1 of completing an upload: the intent''s object key, length and type, for Node to verify the stored object against, when the intent is completable. Called by POST /uploads/complete.';

grant execute on function app.check_upload(uuid, app.upload_purpose) to app_user;

-- Where an image's JPEG variant is stored: what object_key names once the asset is an image.
create or replace function app_private.image_jpeg_key(
  p_asset_id uuid
)
  returns text
  language sql
  immutable
  set search_path = pg_catalog
  as $$
  select
    'images/' || p_asset_id || '.jpg'
$$;

comment on function app_private.image_jpeg_key(uuid) is
  'The object key of an image''s JPEG variant (images/<assetId>.jpg): set as object_key by app.complete_upload, written by the worker task process_image (app_private.image_to_process answers it).';

-- An image's processing job (worker task process_image), one per asset: new uploads at priority 0,
-- the backfill of older images behind them (graphile-worker runs lower numbers first).
create or replace function app_private.queue_image_processing(
  p_asset_id uuid,
  p_priority int
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    graphile_worker.add_job('process_image', json_build_object('assetId', p_asset_id), job_key => 'process_image:' || p_asset_id,
      priority => p_priority, max_attempts => 3)
$$;

comment on function app_private.queue_image_processing(uuid, integer) is
  'Queues the worker task process_image for one asset (job_key process_image:<assetId>), at the given priority: 0 for a new upload (app.complete_upload), 10 for the backfill (app_private.queue_image_backfill).';

-- Step 2: after the object was verified, the transition itself (the row lock makes two concurrent
-- completions one asset and one UPLOAD_ALREADY_COMPLETED).
create or replace function app.complete_upload(
  p_upload_id uuid,
  p_purpose app.upload_purpose,
  p_checksum text
)
  returns app.assets
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_intent app.upload_intents;
  v_asset app.assets;
  v_id uuid;
begin
  v_intent := app_private.completable_upload(p_upload_id, p_purpose, true);
  update app.upload_intents set completed_at = now() where id = p_upload_id;
  v_id := gen_random_uuid();
  -- A document is served as uploaded; an image's object_key names its JPEG variant from the start,
  -- so no reader of object_key (download URLs, the previous release) ever gets the upload.
  insert into app.assets (id, upload_id, owner_id, purpose, content_type, size, checksum, object_key, status)
    values (v_id, v_intent.id, v_intent.owner_id, v_intent.purpose, v_intent.content_type, v_intent.content_length,
            lower(p_checksum),
            case when v_intent.purpose = 'document' then v_intent.object_key else app_private.image_jpeg_key(v_id) end,
            case when v_intent.purpose = 'document' then 'ready' else 'processing' end::app.asset_status)
    returning * into v_asset;
  if v_asset.status = 'processing' then
    perform app_private.queue_image_processing(v_asset.id, 0);
  end if;
  return v_asset;
end
$$;

comment on function app.complete_upload(uuid, app.upload_purpose, text) is
  'Step 2 of completing an upload, after the object was verified: marks the intent completed and creates the asset; an image starts processing, its job queued in the same transaction. The row lock makes two concurrent completions one asset and one UPLOAD_ALREADY_COMPLETED. Called by POST /uploads/complete.';

grant execute on function app.complete_upload(uuid, app.upload_purpose, text) to app_user;

-- Replacing a profile image queues the old asset for deletion in the same transaction, so the job
-- exists if and only if the replacement committed.
create or replace function app_private.queue_replaced_asset()
  returns trigger
  language plpgsql
  security definer
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
  'Replacing a profile image queues the delete_asset job for the old asset in the same transaction, so the job exists exactly when the replacement committed. Runs from the triggers _800_queue_replaced_photo on app.users and app.hub_profiles.';

-- Was the cleanup's copy of app.asset_in_visible_use's four tests: dropped (the cleanup functions
-- below call that rule; run by the owner, it sees every row).
drop function if exists app_private.asset_referenced(uuid);

-- The object key of an asset nothing uses any more (null otherwise). The task deletes the object,
-- then calls forget_asset, which removes the row if it is still unused.
create or replace function app_private.unused_asset_key(
  p_asset_id uuid
)
  returns text
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    a.object_key
  from
    app.assets a
  where
    a.id = p_asset_id
    and not app.asset_in_visible_use(a.id)
$$;

comment on function app_private.unused_asset_key(uuid) is
  'The object key of an asset nothing uses (null otherwise), for the worker task delete_asset to delete the object.';

grant execute on function app_private.unused_asset_key(uuid) to app_worker;

create or replace function app_private.forget_asset(
  p_asset_id uuid
)
  returns void
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  delete from app.assets a
  where a.id = p_asset_id
    and not app.asset_in_visible_use(a.id)
$$;

comment on function app_private.forget_asset(uuid) is
  'Removes an asset row if it is still unused, after the worker task delete_asset deleted its object.';

grant execute on function app_private.forget_asset(uuid) to app_worker;

-- Every object of an asset nothing uses any more: the one object_key names, its upload (deleted
-- already once processed) and every variant (none when the asset is in use). The task
-- delete_asset deletes them, then calls forget_asset.
create or replace function app_private.unused_asset_keys(
  p_asset_id uuid
)
  returns setof text
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    k.key
  from
    app.assets a
    join app.upload_intents i on i.id = a.upload_id
    cross join lateral(
      select
        a.object_key as key
    union
    select
      i.object_key
    union
    select
      v ->> 'key'
    from
      jsonb_array_elements(coalesce(a.variants, '[]')) v) k
  where
    a.id = p_asset_id
    and not app.asset_in_visible_use(a.id)
$$;

comment on function app_private.unused_asset_keys(uuid) is
  'Every stored object of an asset nothing uses (none otherwise): its object_key, its upload and its variants, for the worker task delete_asset.';

grant execute on function app_private.unused_asset_keys(uuid) to app_worker;

-- Intents that expired without completion, oldest first; forget_upload_intents removes them after
-- their objects (if any were uploaded) are gone.
create or replace function app_private.expired_upload_intents(
  p_limit int
)
  returns table(
      id uuid,
      object_key text
)
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    i.id,
    i.object_key
  from
    app.upload_intents i
  where
    i.completed_at is null
    and i.expires_at < now()
  order by
    i.expires_at
  limit p_limit
$$;

comment on function app_private.expired_upload_intents(integer) is
  'Upload intents that expired without completion, oldest first, for the worker task purge_expired_uploads to delete their objects.';

grant execute on function app_private.expired_upload_intents(integer) to app_worker;

create or replace function app_private.forget_upload_intents(
  p_ids uuid[]
)
  returns void
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  delete from app.upload_intents
  where id = any(p_ids)
    and completed_at is null
$$;

comment on function app_private.forget_upload_intents(uuid[]) is
  'Removes expired, uncompleted upload intents once the worker task purge_expired_uploads deleted their objects.';

grant execute on function app_private.forget_upload_intents(uuid[]) to app_worker;

-- The one rule of attaching an asset: the owner's own asset of the purpose, never a failed one.
-- The API answers 409 ASSET_NOT_READY for one still processing before it writes
-- (app.assets_processing); a writer that does not ask (the previous release during a deploy) may
-- attach it, and it shows once processed (app.image_key shows nothing before).
create or replace function app_private.asset_usable_as(
  p_asset_id uuid,
  p_owner_id uuid,
  p_purpose app.upload_purpose
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
        app.assets a
      where
        a.id = p_asset_id
        and a.owner_id = p_owner_id
        and a.purpose = p_purpose
        and a.status <> 'failed')
$$;

comment on function app_private.asset_usable_as(uuid, uuid, app.upload_purpose) is
  'The rule of attaching an asset: the owner''s own asset of the purpose, not failed (the API refuses one still processing first). Used by app.is_profile_photo_of, app.hub_asset_usable and app.post_assets_usable.';

-- Whether any of the viewer's assets among these is still processing: the API answers 409
-- ASSET_NOT_READY (Retry-After: 1) for it, before the usable check that refuses it.
create or replace function app.assets_processing(
  p_asset_ids uuid[]
)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    exists(
      select
      from
        app.assets a
      where
        a.id = any(p_asset_ids)
        and a.owner_id = app.viewer_id()
        and a.status = 'processing')
$$;

comment on function app.assets_processing(uuid[]) is
  'Whether any of these assets of the viewer is still being processed: the API answers 409 ASSET_NOT_READY for it. Called with the usable checks of onboarding media, profiles, hubs and posts.';

grant execute on function app.assets_processing(uuid[]) to app_user;

-- Which object to show for an image in lists, cards and profiles: once processed, its display
-- variant; from before processing existed and not yet processed, its upload as the previous
-- release served it; nothing while processing or after a failure.
create or replace function app.image_key(
  p_status app.asset_status,
  p_display_key text,
  p_object_key text
)
  returns text
  language sql
  immutable
  set search_path = pg_catalog
  as $$
  select
    case when p_status = 'ready' then
      coalesce(p_display_key, p_object_key)
    end
$$;

comment on function app.image_key(app.asset_status, text, text) is
  'The object shown for an image asset (status, display_key, object_key): the display variant once processed, the upload until the backfill processed an older image, nothing while processing or failed. Every profile photo and card image is read through it.';

grant execute on function app.image_key(app.asset_status, text, text) to app_anonymous;

-- An image still to be processed: one uploaded before processing existed (ready, never processed)
-- or one processing; never a document, a processed or a failed asset.
create or replace function app_private.image_unprocessed(
  p_purpose app.upload_purpose,
  p_processed_at timestamptz,
  p_status app.asset_status
)
  returns boolean
  language sql
  immutable
  set search_path = pg_catalog
  as $$
  select
    p_purpose <> 'document'
    and p_processed_at is null
    and p_status in('processing', 'ready')
$$;

comment on function app_private.image_unprocessed(app.upload_purpose, timestamp with time zone, app.asset_status) is
  'The rule of an image still to be processed (purpose, processed_at, status): not a document, never processed, not failed. Used by app_private.image_to_process and app_private.lock_unprocessed_image.';

-- Locks an image still to be processed and answers its upload's key (null when it is not one):
-- the first step of recording its variants or its failure, once.
create or replace function app_private.lock_unprocessed_image(
  p_asset_id uuid
)
  returns text
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    i.object_key
  from
    app.assets a
    join app.upload_intents i on i.id = a.upload_id
  where
    a.id = p_asset_id
    and app_private.image_unprocessed(a.purpose, a.processed_at, a.status)
  for update
    of a
$$;

comment on function app_private.lock_unprocessed_image(uuid) is
  'Locks the asset when it is an image still to be processed and answers its upload''s object key, else null. Used by app_private.finish_image and app_private.fail_image.';

-- What follows an image's processing, whichever way it ended: its upload is deleted by its own job,
-- and the request waiting for it is told on channel asset_processed (the asset id only).
create or replace function app_private.image_settled(
  p_asset_id uuid,
  p_upload_key text
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    app_private.queue_object_deletion(p_upload_key);
    select
      pg_notify('asset_processed', p_asset_id::text);
$$;

comment on function app_private.image_settled(uuid, text) is
  'After an image''s variants or failure are recorded: queues the deletion of its upload and announces the asset id on channel asset_processed. Used by app_private.finish_image and app_private.fail_image.';

-- Processing, the worker's side (worker/tasks/uploads/process-image.ts): what to process, then its variants
-- or its failure. An asset is to be processed while it is processing, or when it is an image from
-- before processing existed (ready, never processed). Every step is keyed by the asset: a job that
-- runs again after its worker died finds the asset done and does nothing.
create or replace function app_private.image_to_process(
  p_asset_id uuid,
  out upload_key text,
  out jpeg_key text,
  out content_type text,
  out purpose app.upload_purpose
)
  returns setof record
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    i.object_key,
    app_private.image_jpeg_key(a.id),
    a.content_type,
    a.purpose
  from
    app.assets a
    join app.upload_intents i on i.id = a.upload_id
  where
    a.id = p_asset_id
    and app_private.image_unprocessed(a.purpose, a.processed_at, a.status)
$$;

comment on function app_private.image_to_process(uuid) is
  'An image still to be processed: its upload''s key, the key its JPEG variant goes to, its declared type and purpose; no row when it was processed, failed, or is a document. Read by the worker task process_image.';

grant execute on function app_private.image_to_process(uuid) to app_worker;

-- The variants are written: the asset shows them from now on, its object_key names its JPEG variant
-- (download URLs, the previous release's readers; an image from before processing existed gets it
-- only now), the upload is deleted by its own job, and
-- the waiting POST /uploads/complete is told on channel asset_processed (the asset id only).
create or replace function app_private.finish_image(
  p_asset_id uuid,
  p_width int,
  p_height int,
  p_placeholder text,
  p_variants jsonb,
  p_display_key text,
  p_jpeg_key text
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_upload_key text;
begin
  v_upload_key := app_private.lock_unprocessed_image(p_asset_id);
  if v_upload_key is null then
    return;
  end if;
  update app.assets
    set status = 'ready', processed_at = now(), width = p_width, height = p_height, placeholder = p_placeholder,
        variants = p_variants, display_key = p_display_key, object_key = p_jpeg_key
    where id = p_asset_id;
  perform app_private.image_settled(p_asset_id, v_upload_key);
end
$$;

comment on function app_private.finish_image(uuid, integer, integer, text, jsonb, text, text) is
  'Records an image''s variants (once: nothing for an asset already processed or failed), points object_key at its JPEG variant, queues the deletion of the upload and announces the asset id on channel asset_processed. The last step of the worker task process_image.';

grant execute on function app_private.finish_image(uuid, integer, integer, text, jsonb, text, text) to app_worker;

-- The image could not be processed (IMAGE_UNREADABLE, IMAGE_TOO_LARGE): it is never served, its
-- upload is deleted, and the waiting request is told.
create or replace function app_private.fail_image(
  p_asset_id uuid,
  p_code text
)
  returns void
  language plpgsql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
declare
  v_upload_key text;
begin
  if p_code not in ('IMAGE_UNREADABLE', 'IMAGE_TOO_LARGE') then
    raise exception 'unknown image error %', p_code;
  end if;
  v_upload_key := app_private.lock_unprocessed_image(p_asset_id);
  if v_upload_key is null then
    return;
  end if;
  update app.assets set status = 'failed', error_code = p_code where id = p_asset_id;
  perform app_private.image_settled(p_asset_id, v_upload_key);
end
$$;

comment on function app_private.fail_image(uuid, text) is
  'Marks an image failed with its error code (once), queues the deletion of its upload and announces the asset id on channel asset_processed. Run by the worker task process_image when the image is refused.';

grant execute on function app_private.fail_image(uuid, text) to app_worker;

-- One object to delete (worker task delete_object), keyed by its key: queued in the transaction that
-- stops using it, so it is deleted exactly when that transaction committed.
create or replace function app_private.queue_object_deletion(
  p_key text
)
  returns void
  language sql
  volatile
  set search_path = pg_catalog
  as $$
  select
    graphile_worker.add_job('delete_object', json_build_object('key', p_key), job_key => 'delete_object:' || p_key)
$$;

comment on function app_private.queue_object_deletion(text) is
  'Queues the worker task delete_object for one stored object (job_key delete_object:<key>). Used by app_private.image_settled for the processed or refused upload.';

-- The backfill: queues up to p_limit images never processed, oldest first, behind new uploads
-- (worker cron process_image_backfill: the limit per run is the rate). A queued job keeps its key,
-- so queueing again while it waits changes nothing.
create or replace function app_private.queue_image_backfill(
  p_limit int
)
  returns int
  language sql
  volatile
  security definer
  set search_path = pg_catalog
  as $$
  with batch as(
    select
      a.id
    from
      app.assets a
    where
      a.processed_at is null
      and a.status = 'ready'
      and a.purpose <> 'document'
    order by
      a.created_at,
      a.id
    limit p_limit
)
select
  count(app_private.queue_image_processing(batch.id, 10))::int
from
  batch
$$;

comment on function app_private.queue_image_backfill(integer) is
  'Queues process_image for up to p_limit images uploaded before processing existed, oldest first, at a lower priority than new uploads; returns how many. Run by the worker cron process_image_backfill.';

grant execute on function app_private.queue_image_backfill(integer) to app_worker;

-- Whether an asset may become a hub's image: a hub_photo asset of the viewer, not failed.
create or replace function app.hub_asset_usable(
  p_asset_id uuid
)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    app_private.asset_usable_as(p_asset_id, app.viewer_id(), 'hub_photo')
$$;

comment on function app.hub_asset_usable(uuid) is
  'Whether an asset may become a hub''s image: a hub_photo asset of the viewer, not failed (app_private.asset_usable_as). Called by POST /hubs and PATCH /hubs/{hubId} before they write, and by app.create_hub and app.update_hub.';

grant execute on function app.hub_asset_usable(uuid) to app_user;

-- Whether assets may illustrate a media article: post_image assets of the viewer, none failed.
create or replace function app.post_assets_usable(
  p_asset_ids uuid[]
)
  returns boolean
  language sql
  stable
  security definer
  set search_path = pg_catalog
  as $$
  select
    coalesce(array_length(p_asset_ids, 1), 0) =(
      select
        count(*)
      from
        unnest(p_asset_ids) ids(id)
      where
        app_private.asset_usable_as(ids.id, app.viewer_id(), 'post_image'))
$$;

comment on function app.post_assets_usable(uuid[]) is
  'Whether assets may illustrate a media article: all are post_image assets of the viewer, none failed (app_private.asset_usable_as). Called by POST /posts and by app.create_post.';

grant execute on function app.post_assets_usable(uuid[]) to app_user;

-- TG_ARGV[0] names the column holding the row's user (id on users, user_id on hub_profiles).
create or replace function app_private.check_profile_asset()
  returns trigger
  language plpgsql
  security definer
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
  'A profile image must be the user''s own profile photo (VALIDATION_FAILED otherwise), whoever writes it. Runs from the triggers _100_check_profile_asset on app.users (tg_argv: id) and on app.hub_profiles (user_id).';

create policy assets_select_admin on app.assets
  for select to app_admin
    using (true);

comment on policy assets_select_admin on app.assets is 'Admin tooling (app_admin: admin GraphQL, npm run admin) reads every asset.';

-- An asset is visible to its owner, and to viewers of a profile, hub or post that uses it.
create policy assets_select_visible on app.assets
  for select to app_anonymous
    using (owner_id =(
      select
        app.viewer_id())
        or app.asset_in_visible_use(id));

comment on policy assets_select_visible on app.assets is
  'An asset is visible to its owner and to viewers of a profile, hub or post that uses it. Serves GET /uploads/{assetId}/download-url and the image keys of profiles, hubs, members and cards.';

grant select on app.assets to app_admin;

grant select (id, object_key, status, width, height, placeholder, variants, display_key) on app.assets to app_anonymous;

grant select (purpose, content_type, size, checksum, error_code) on app.assets to app_user;

-- An upload intent is private to its owner.
create policy upload_intents_select_owner on app.upload_intents
  for select to app_user
    using (owner_id =(
      select
        app.viewer_id()));

comment on policy upload_intents_select_owner on app.upload_intents is
  'An upload intent is private to its owner (the internal GraphQL API; the upload endpoints use security-definer functions).';

grant select (id, owner_id, purpose, content_type, content_length, object_key, created_at, expires_at, completed_at) on app.upload_intents to app_user;

create trigger _100_check_profile_asset
  before insert or update of profile_asset_id on app.hub_profiles for each row
  execute function app_private.check_profile_asset('user_id');

comment on trigger _100_check_profile_asset on app.hub_profiles is
  'A hub profile''s image must be the user''s own profile photo (app_private.check_profile_asset).';

create trigger _800_queue_replaced_photo
  after update of profile_asset_id on app.hub_profiles for each row
  execute function app_private.queue_replaced_asset();

comment on trigger _800_queue_replaced_photo on app.hub_profiles is
  'Queues the replaced hub profile image for deletion (app_private.queue_replaced_asset).';

create trigger _100_check_profile_asset
  before update of profile_asset_id on app.users for each row
  execute function app_private.check_profile_asset('id');

comment on trigger _100_check_profile_asset on app.users is
  'A user''s profile image must be their own profile photo (app_private.check_profile_asset).';

create trigger _800_queue_replaced_photo
  after update of profile_asset_id on app.users for each row
  execute function app_private.queue_replaced_asset();

comment on trigger _800_queue_replaced_photo on app.users is
  'Queues the replaced profile image for deletion (app_private.queue_replaced_asset).';
