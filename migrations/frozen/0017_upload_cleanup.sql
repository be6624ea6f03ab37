-- Up Migration
-- Object clean-up by the worker (worker/tasks): replaced profile images and expired intents.

-- Replacing a profile image queues the old asset for deletion in the same transaction, so the job
-- exists if and only if the replacement committed.
create function app_private.queue_replaced_asset() returns trigger
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

create trigger users_queue_replaced_photo
  after update of profile_asset_id on app.users
  for each row execute function app_private.queue_replaced_asset();

create trigger hub_profiles_queue_replaced_photo
  after update of profile_asset_id on app.hub_profiles
  for each row execute function app_private.queue_replaced_asset();

-- Whether anything still uses an asset. Hubs and posts add their references when they arrive.
create function app_private.asset_referenced(p_asset_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$
  select exists (select from app.users where profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles where profile_asset_id = p_asset_id)
$$;

-- The object key of an asset nothing uses any more (null otherwise). The task deletes the object,
-- then calls forget_asset, which removes the row if it is still unused.
create function app_private.unused_asset_key(p_asset_id uuid)
  returns text
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select a.object_key from app.assets a where a.id = p_asset_id and not app_private.asset_referenced(a.id) $$;

create function app_private.forget_asset(p_asset_id uuid)
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ delete from app.assets a where a.id = p_asset_id and not app_private.asset_referenced(a.id) $$;

-- Intents that expired without completion, oldest first; forget_upload_intents removes them after
-- their objects (if any were uploaded) are gone.
create function app_private.expired_upload_intents(p_limit int)
  returns table (id uuid, object_key text)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select i.id, i.object_key from app.upload_intents i
  where i.completed_at is null and i.expires_at < now()
  order by i.expires_at limit p_limit
$$;

create function app_private.forget_upload_intents(p_ids uuid[])
  returns void
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ delete from app.upload_intents where id = any (p_ids) and completed_at is null $$;

grant execute on function app_private.unused_asset_key(uuid), app_private.forget_asset(uuid),
  app_private.expired_upload_intents(int), app_private.forget_upload_intents(uuid[]) to app_worker;

-- Down Migration
drop function app_private.forget_upload_intents(uuid[]);
drop function app_private.expired_upload_intents(int);
drop function app_private.forget_asset(uuid);
drop function app_private.unused_asset_key(uuid);
drop function app_private.asset_referenced(uuid);
drop trigger hub_profiles_queue_replaced_photo on app.hub_profiles;
drop trigger users_queue_replaced_photo on app.users;
drop function app_private.queue_replaced_asset();
