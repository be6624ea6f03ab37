-- Up Migration
-- Fixed-window rate limits shared by every API process. One row per bucket and subject.
create table app_private.rate_limits (
  key text primary key,
  window_started_at timestamptz not null,
  hits int not null
);

-- Counts one hit for the viewer in a bucket. Returns 0 when allowed, otherwise the seconds until
-- the window ends (the Retry-After of a 429 RATE_LIMITED).
create function app.consume_rate_limit(p_bucket text, p_limit int, p_window_seconds int)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_row app_private.rate_limits;
  v_window interval := make_interval(secs => p_window_seconds);
begin
  insert into app_private.rate_limits as r (key, window_started_at, hits)
    values (p_bucket || ':' || app.viewer_id(), now(), 1)
    on conflict (key) do update
      set hits = case when r.window_started_at <= now() - v_window then 1 else r.hits + 1 end,
          window_started_at = case when r.window_started_at <= now() - v_window then now() else r.window_started_at end
    returning r.* into v_row;
  if v_row.hits <= p_limit then
    return 0;
  end if;
  return greatest(1, ceil(extract(epoch from v_row.window_started_at + v_window - now())))::int;
end
$$;

grant execute on function app.consume_rate_limit(text, int, int) to app_user;

-- Down Migration
drop function app.consume_rate_limit(text, int, int);
drop table app_private.rate_limits;
