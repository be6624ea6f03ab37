-- Up Migration
-- Per-user write limits (contract section 3, amended): every write endpoint has a limit per user,
-- and writes that fan out to a hub's members (posts, reposts and shares into a hub) one per user
-- and hub too. The API names the limit and its size (server/http/write-limits.ts, one declaration
-- per endpoint); the count lives here, in the sliding windows of the sign-in limits (0095), so
-- every API process shares it. The check is one statement sent with the write's own transaction
-- (its opening), so a refused write writes nothing and a write that fails for another reason
-- (404, 409, ...) is rolled back with its count: only writes that happened are counted.

-- Counts one write of the viewer under limit p_name: at most p_max in any p_window_seconds, for
-- the viewer alone, or for the viewer in each hub of p_hub_ids when given. Raises RATE_LIMITED
-- with the seconds to wait in DETAIL (the API answers 429 with Retry-After) when any is full.
create function app.consume_write_limit(p_name text, p_max int, p_window_seconds int, p_hub_ids uuid[] default null)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_window interval := make_interval(secs => p_window_seconds);
  v_wait int := 0;
  v_hub uuid;
begin
  if v_viewer is null or p_name !~ '^[a-z_]+$' or p_max < 1 or p_window_seconds < 1 then
    raise exception 'invalid write limit %', p_name;
  end if;
  if p_hub_ids is null then
    v_wait := app_private.consume_sliding_limit('write:' || p_name || ':' || v_viewer, p_max, v_window);
  else
    -- In hub order, so that two writes naming the same hubs lock their rows in the same order.
    for v_hub in select distinct h from unnest(p_hub_ids) h order by h loop
      v_wait := greatest(v_wait, app_private.consume_sliding_limit('write:' || p_name || ':' || v_viewer || ':' || v_hub, p_max, v_window));
    end loop;
  end if;
  if v_wait > 0 then
    raise exception using errcode = 'P0001', message = 'RATE_LIMITED', detail = v_wait::text;
  end if;
end
$$;

grant execute on function app.consume_write_limit(text, int, int, uuid[]) to app_user;

-- Down Migration
drop function app.consume_write_limit(text, int, int, uuid[]);
