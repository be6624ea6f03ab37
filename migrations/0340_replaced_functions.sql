-- Up Migration
-- Functions db/sql no longer defines under these names or argument lists (a migration runs before
-- db/sql is applied; PL/pgSQL bodies that still name them are replaced in the same run):
-- app_private.touch_hub_activity(uuid, uuid): the hub-activity writer takes the hubs of an action
-- as one array (activity.sql), so the vote writes through it.
drop function if exists app_private.touch_hub_activity(uuid, uuid);
-- The readers of a feed card's events at or after the cursor are named for what they hold (they were
-- home_later, profile_later and hub_later).
drop function if exists app_private.home_later(uuid, app.post_visibility, uuid, uuid[], uuid[], timestamptz, timestamptz, uuid);
drop function if exists app_private.profile_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);
drop function if exists app_private.hub_later(uuid, uuid, uuid[], timestamptz, timestamptz, uuid);
