-- Up Migration
-- Notification visibility, rule 4 of spec 6.3: a post_reposted row without a hub_id is global when
-- its repost is public or public_hub; when the repost is private_locked_hub (legacy rows), only a
-- recipient who is a Hub-ready active member of at least one current target hub of the repost
-- sees it. A null post_id, a missing or deleted repost, or any other visibility fails closed.
-- Replaces the version of 0033 (rule 3 is unchanged).
create function app_private.repost_row_visible(p_repost_id uuid, p_user_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$
  select coalesce((
    select case p.visibility
             when 'public' then true
             when 'public_hub' then true
             when 'private_locked_hub' then exists (
               select from app.post_hubs ph
               where ph.post_id = p.id and ph.kind = 'target' and app.is_active_member(ph.hub_id, p_user_id))
             else false
           end
    from app.posts p where p.id = p_repost_id and p.deleted_at is null), false)
$$;

create or replace function app.notification_visible_to(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select p_notification.recipient_id = p_user_id
     and case
           when p_notification.hub_id is not null then app.is_active_member(p_notification.hub_id, p_user_id)
           when p_notification.type = 'post_reposted' then app_private.repost_row_visible(p_notification.post_id, p_user_id)
           else true
         end
$$;

-- Down Migration
create or replace function app.notification_visible_to(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select p_notification.recipient_id = p_user_id
     and (p_notification.hub_id is null or app.is_active_member(p_notification.hub_id, p_user_id))
$$;
drop function app_private.repost_row_visible(uuid, uuid);
