-- Up Migration
-- The notification list's rows (app.notification_rows: a page of ids, read as the viewer) joined
-- each row's actor and the actor's photo freely. For a user with 1,000,000 notifications the
-- statistics led the planner to a plan kept for any page (a generic plan, after a few calls) that
-- scanned app.assets once per notification row, testing the assets policy
-- (app.asset_in_visible_use: four probes) on every scanned asset, actor or not: rows without an
-- actor (post_voted, most of such a list) paid for it too, and the list's p95 was 1.7 times that of
-- a user with 1,000. The actor and the photo are now lateral subqueries with a limit, read only for
-- a row that has them; the columns are the same.
create or replace function app.notification_rows(p_ids uuid[])
  returns table (notification_id uuid, type app.notification_type, created_at timestamptz, is_read boolean, post_id uuid,
                 comment_id uuid, hub_id uuid, invitation_id uuid, join_request_id uuid, actor_id uuid, actor_username text,
                 actor_full_name text, actor_photo_key text)
  language sql stable
  set search_path = pg_catalog
  as $$
  select n.id, n.type, n.created_at, n.read_at is not null, n.post_id, n.comment_id, n.hub_id, n.invitation_id,
         n.join_request_id, u.id, u.username, u.full_name, a.object_key
  from app.notifications n
  -- `... is not null` first: a test of the outer row alone, made once per row before the scan (a
  -- one-time filter), so a row without an actor or photo reads neither table nor runs a policy.
  left join lateral (select u.id, u.username, u.full_name, u.profile_asset_id from app.users u
                     where n.actor_id is not null and u.id = n.actor_id limit 1) u on true
  left join lateral (select a.object_key from app.assets a
                     where u.profile_asset_id is not null and a.id = u.profile_asset_id limit 1) a on true
  where n.id = any (p_ids)
$$;

-- The page's ids (app.notification_page) are planned once and the plan kept (a generic plan). On
-- its own, PostgreSQL kept planning its statement again on every call for a user of the scale
-- benchmark's large world: with the statistics of a table where one user has 1,000,000 rows and
-- another 100,000 hub memberships, the plan for any user is estimated costlier than one planned for
-- the user at hand, though both are the same index ranges. Planning (about 0.3 ms) then made the
-- list of a user with 1,000,000 notifications dearer than the list of a user with 1,000, whose
-- plan is kept. The kept plan reads the same ranges: one per scope, each stopping at the page.
alter function app.notification_page(timestamptz, uuid, boolean, int) set plan_cache_mode = force_generic_plan;
