-- Up Migration
-- Notification visibility by scope (spec 6.3 rules 3 and 4), so that the badge counters (0201) and
-- the list's pages (0202) can apply the visibility rule once to a whole group of rows instead of
-- once per row. The rule itself is unchanged; it is now written in two halves:
--   * a row's scope, from the row alone: 'h' a hub row (its hub_id), 'r' a global post_reposted row
--     (its post_id, the repost), 'g' any other global row;
--   * app_private.scope_visible(kind, scope, user): 'h' while the user is an active member of that
--     hub (rule 3), 'r' while the repost is visible to the user (rule 4), 'g' always.
-- app_private.notification_visible(row, user) (0180: the list's policy, mark-read, the live stream)
-- is the recipient's own row whose scope is visible; the counters and the list's pages call
-- scope_visible for a scope; nothing else decides.
--
-- Rule 4 over a posts row (app_private.repost_visible), so that a trigger can evaluate it on the
-- old and new versions of a post (0201). With no user (null) it answers whether the repost is
-- visible to every recipient (a live public or public_hub repost): 0201 relies on "visible with no
-- user" implying "visible to every user".

-- Rule 4 of spec 6.3 for one repost: a public or public_hub repost is global; a private_locked_hub
-- one (legacy rows) needs a Hub-ready active member of one of its current target hubs; a deleted
-- repost, or any other visibility, fails closed.
create function app_private.repost_visible(p_repost app.posts, p_user_id uuid)
  returns boolean
  language sql stable
  as $$
  select p_repost.deleted_at is null
     and case p_repost.visibility
           when 'public' then true
           when 'public_hub' then true
           when 'private_locked_hub' then exists (
             select from app.post_hubs ph
             where ph.post_id = p_repost.id and ph.kind = 'target' and app.is_active_member(ph.hub_id, p_user_id))
           else false
         end
$$;

-- A missing repost (or a null id) fails closed.
create or replace function app_private.repost_row_visible(p_repost_id uuid, p_user_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$ select coalesce((select app_private.repost_visible(p, p_user_id) from app.posts p where p.id = p_repost_id), false) $$;

-- The scope kind of a row: 'h' hub row, 'r' global post_reposted row, 'g' any other global row.
create function app_private.notification_scope_kind(p_type app.notification_type, p_hub_id uuid)
  returns "char"
  language sql immutable
  as $$
  select case when p_hub_id is not null then 'h' when p_type = 'post_reposted' then 'r' else 'g' end::"char"
$$;

-- Whether p_user_id may see the rows of a scope now (p_scope: the hub for 'h', the repost for 'r').
create function app_private.scope_visible(p_kind "char", p_scope uuid, p_user_id uuid)
  returns boolean
  language sql stable
  as $$
  select case p_kind
           when 'h' then app.is_active_member(p_scope, p_user_id)
           when 'r' then app_private.repost_row_visible(p_scope, p_user_id)
           else true
         end
$$;

-- The rule of 0180, written through the scope: the recipient's own row whose scope is visible.
create or replace function app_private.notification_visible(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable
  as $$
  select p_notification.recipient_id = p_user_id
     and app_private.scope_visible(app_private.notification_scope_kind(p_notification.type, p_notification.hub_id),
                                   coalesce(p_notification.hub_id, p_notification.post_id), p_user_id)
$$;

revoke all on function app_private.repost_visible(app.posts, uuid), app_private.notification_scope_kind(app.notification_type, uuid),
  app_private.scope_visible("char", uuid, uuid) from public;

-- Down Migration
create or replace function app_private.notification_visible(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable
  as $$
  select p_notification.recipient_id = p_user_id
     and case
           when p_notification.hub_id is not null then app.is_active_member(p_notification.hub_id, p_user_id)
           when p_notification.type = 'post_reposted' then app_private.repost_row_visible(p_notification.post_id, p_user_id)
           else true
         end
$$;
drop function app_private.scope_visible("char", uuid, uuid);
drop function app_private.notification_scope_kind(app.notification_type, uuid);
create or replace function app_private.repost_row_visible(p_repost_id uuid, p_user_id uuid)
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
drop function app_private.repost_visible(app.posts, uuid);
