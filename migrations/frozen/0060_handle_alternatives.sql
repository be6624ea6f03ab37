-- Up Migration
-- Handle alternatives always long enough: the numeric suffix is 2 to 4 digits, so a one-letter
-- base ("a!" typed, "a" usable) still yields 3-character handles. Replaces 0014's version.
create or replace function app.handle_availability(p_handle text,
  out available boolean, out reason text, out alternatives text[])
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_base text;
begin
  if p_handle !~ '^[a-z0-9_]{3,30}$' then
    reason := 'invalid';
  elsif exists (select from app.reserved_handles r where r.handle = p_handle) then
    reason := 'reserved';
  elsif exists (select from app.users u where u.username = p_handle) then
    reason := 'taken';
  end if;
  available := reason is null;
  alternatives := '{}';
  if available then
    return;
  end if;
  -- Up to three numeric-suffix alternatives that are free now: the usable part of the handle,
  -- or "user" when nothing usable is left, plus a random number of 2 to 4 digits.
  v_base := left(regexp_replace(p_handle, '[^a-z0-9_]', '', 'g'), 26);
  if v_base = '' then
    v_base := 'user';
  end if;
  select coalesce(array_agg(c.handle order by c.n), '{}') into alternatives
  from (
    select distinct on (handle) handle, n
    from (select v_base || n::text as handle, n
          from (select case when g <= 6 then 10 + floor(random() * 90) else 100 + floor(random() * 9900) end::int as n
                from generate_series(1, 12) g) r) k
    where k.handle ~ '^[a-z0-9_]{3,30}$'
      and not exists (select from app.users u where u.username = k.handle)
      and not exists (select from app.reserved_handles rh where rh.handle = k.handle)
    limit 3
  ) c;
end
$$;

-- Down Migration
create or replace function app.handle_availability(p_handle text,
  out available boolean, out reason text, out alternatives text[])
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_base text;
begin
  if p_handle !~ '^[a-z0-9_]{3,30}$' then
    reason := 'invalid';
  elsif exists (select from app.reserved_handles r where r.handle = p_handle) then
    reason := 'reserved';
  elsif exists (select from app.users u where u.username = p_handle) then
    reason := 'taken';
  end if;
  available := reason is null;
  alternatives := '{}';
  if available then
    return;
  end if;
  -- Up to three numeric-suffix alternatives that are free now: the usable part of the handle,
  -- or "user" when nothing usable is left, plus a short random number.
  v_base := left(regexp_replace(p_handle, '[^a-z0-9_]', '', 'g'), 26);
  if v_base = '' then
    v_base := 'user';
  end if;
  select coalesce(array_agg(c.handle order by c.n), '{}') into alternatives
  from (
    select distinct on (handle) handle, n
    from (select v_base || n::text as handle, n
          from (select (1 + floor(random() * case when g <= 6 then 99 else 9999 end))::int as n
                from generate_series(1, 12) g) r) k
    where k.handle ~ '^[a-z0-9_]{3,30}$'
      and not exists (select from app.users u where u.username = k.handle)
      and not exists (select from app.reserved_handles rh where rh.handle = k.handle)
    limit 3
  ) c;
end
$$;
