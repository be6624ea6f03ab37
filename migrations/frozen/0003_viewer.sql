-- Up Migration
-- Identity of the current request. The API sets both with set_config(..., true) at the start of each
-- transaction (db/viewer.ts); nothing else passes identity to SQL. After a transaction the settings
-- read back as '' rather than NULL, hence nullif.
create function app.viewer_id() returns uuid
  language sql stable parallel safe
  as $$ select nullif(current_setting('app.user_id', true), '')::uuid $$;

create function app.viewer_session_id() returns uuid
  language sql stable parallel safe
  as $$ select nullif(current_setting('app.session_id', true), '')::uuid $$;

grant execute on function app.viewer_id(), app.viewer_session_id() to app_anonymous, app_admin, app_worker;

-- A failed check raises P0001 with the catalog code as the message; the HTTP layer maps it 1:1.
create function app.fail(code text) returns void
  language plpgsql
  as $$ begin raise exception using errcode = 'P0001', message = code; end $$;

grant execute on function app.fail(text) to app_anonymous, app_admin, app_worker;

-- Down Migration
drop function app.fail(text);
drop function app.viewer_session_id();
drop function app.viewer_id();
