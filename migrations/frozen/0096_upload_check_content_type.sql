-- Up Migration
-- Upload completion checks the object's first bytes against the declared content type (contract
-- section 6, UPLOAD_CONTENT_MISMATCH): step 1 of completion also returns the intent's content type.
drop function app.check_upload(uuid, app.upload_purpose);

create function app.check_upload(p_upload_id uuid, p_purpose app.upload_purpose,
  out object_key text, out content_length bigint, out content_type text)
  language sql volatile security definer
  set search_path = pg_catalog
  as $$
  select i.object_key, i.content_length, i.content_type from app_private.completable_upload(p_upload_id, p_purpose, false) i
$$;

grant execute on function app.check_upload(uuid, app.upload_purpose) to app_user;

-- Down Migration
drop function app.check_upload(uuid, app.upload_purpose);

create function app.check_upload(p_upload_id uuid, p_purpose app.upload_purpose,
  out object_key text, out content_length bigint)
  language sql volatile security definer
  set search_path = pg_catalog
  as $$ select i.object_key, i.content_length from app_private.completable_upload(p_upload_id, p_purpose, false) i $$;

grant execute on function app.check_upload(uuid, app.upload_purpose) to app_user;
