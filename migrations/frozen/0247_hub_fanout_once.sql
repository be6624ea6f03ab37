-- Up Migration
-- A hub fan-out is exactly once per recipient (design.md: a key per effect). A worker killed after
-- its fan-out committed, but before graphile-worker recorded the job done, left the job to run
-- again, and the retry inserted every row again (598 rows for 299 recipients). Each queued fan-out
-- now carries a key of its own (a fresh uuid in its payload, made by the transaction that caused
-- it), its rows record that key, and one row per key and recipient is all the database accepts:
-- a retry inserts nothing for a recipient the fan-out reached. Rows written outside a fan-out have
-- no key. The column is granted to no API role (it is no part of what a viewer sees).
alter table app.notifications add column fanout_key uuid;

create unique index notifications_fanout_once on app.notifications (fanout_key, recipient_id) where fanout_key is not null;

create or replace function app_private.queue_hub_fanout(p_hub_id uuid, p_type app.notification_type, p_audience text,
  p_except uuid[], p_join_request_id uuid default null, p_post_id uuid default null)
  returns void
  language sql volatile
  set search_path = pg_catalog
  as $$
  select graphile_worker.add_job('hub_notification_fanout', json_build_object(
    'hubId', p_hub_id, 'type', p_type, 'audience', p_audience, 'actorId', app.viewer_id(),
    'except', p_except, 'joinRequestId', p_join_request_id, 'postId', p_post_id, 'key', gen_random_uuid()));
$$;

-- The fan-out (worker/tasks/hub-notification-fanout.ts): one set-based insert over the hub's
-- current members, skipping every recipient this fan-out's key already reached. A payload queued
-- before this migration has no key and inserts as before.
create or replace function app_private.fan_out_hub_notification(p_payload jsonb)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
declare
  v_type app.notification_type := (p_payload ->> 'type')::app.notification_type;
  v_count int;
begin
  insert into app.notifications (recipient_id, type, actor_id, hub_id, join_request_id, post_id, fanout_key)
  select m.user_id, v_type, (p_payload ->> 'actorId')::uuid, m.hub_id,
         (p_payload ->> 'joinRequestId')::uuid, (p_payload ->> 'postId')::uuid, (p_payload ->> 'key')::uuid
  from app.hub_memberships m
  where m.hub_id = (p_payload ->> 'hubId')::uuid
    and not m.user_id = any (coalesce(array(select jsonb_array_elements_text(p_payload -> 'except'))::uuid[], '{}'))
    and (p_payload ->> 'audience' = 'members' or m.role in ('admin', 'super_admin'))
    and not (m.content_muted and v_type in ('hub_post_created', 'post_shared_to_hub', 'post_reposted'))
  on conflict (fanout_key, recipient_id) where fanout_key is not null do nothing;
  get diagnostics v_count = row_count;
  return v_count;
end
$$;

-- Down Migration
create or replace function app_private.fan_out_hub_notification(p_payload jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
declare
  v_type app.notification_type := (p_payload ->> 'type')::app.notification_type;
  v_count int;
begin
  insert into app.notifications (recipient_id, type, actor_id, hub_id, join_request_id, post_id)
  select m.user_id, v_type, (p_payload ->> 'actorId')::uuid, m.hub_id,
         (p_payload ->> 'joinRequestId')::uuid, (p_payload ->> 'postId')::uuid
  from app.hub_memberships m
  where m.hub_id = (p_payload ->> 'hubId')::uuid
    and not m.user_id = any (coalesce(array(select jsonb_array_elements_text(p_payload -> 'except'))::uuid[], '{}'))
    and (p_payload ->> 'audience' = 'members' or m.role in ('admin', 'super_admin'))
    and not (m.content_muted and v_type in ('hub_post_created', 'post_shared_to_hub', 'post_reposted'));
  get diagnostics v_count = row_count;
  return v_count;
end
$$;

create or replace function app_private.queue_hub_fanout(p_hub_id uuid, p_type app.notification_type, p_audience text, p_except uuid[], p_join_request_id uuid DEFAULT NULL::uuid, p_post_id uuid DEFAULT NULL::uuid) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog'
    AS $$
  select graphile_worker.add_job('hub_notification_fanout', json_build_object(
    'hubId', p_hub_id, 'type', p_type, 'audience', p_audience, 'actorId', app.viewer_id(),
    'except', p_except, 'joinRequestId', p_join_request_id, 'postId', p_post_id));
$$;

drop index app.notifications_fanout_once;
alter table app.notifications drop column fanout_key;
