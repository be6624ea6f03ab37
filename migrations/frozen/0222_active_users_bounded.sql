-- Up Migration
-- activeUsers24h (GET /hubs/{hubId}, every row of GET /search/hubs) counted every member active in
-- the hub's last day on every read: 100,000 active members, 100,000 index entries per hub card.
-- It is a window that moves with the clock, so no write can keep it (a member drops out of it by
-- doing nothing); it becomes a bounded count instead: exact up to 1,000, and 1,000 means at least
-- 1,000 (the OpenAPI document says so). The count reads at most 1,000 entries of the
-- (hub_id, last_active_at) index, whatever the hub's size.
create or replace function app.hub_active_users(p_hub_id uuid)
  returns integer
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select count(*)::int
  from (select from app.hub_activity a
        where a.hub_id = p_hub_id and a.last_active_at > now() - interval '24 hours'
        limit 1000) recent
$$;

-- Down Migration
create or replace function app.hub_active_users(p_hub_id uuid)
  returns integer
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select count(*)::int from app.hub_activity a
  where a.hub_id = p_hub_id and a.last_active_at > now() - interval '24 hours'
$$;
