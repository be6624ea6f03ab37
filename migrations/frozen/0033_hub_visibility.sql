-- Up Migration
-- What hub membership reveals, now that hubs exist.

-- Notifications (spec 6.3 rule 3): a row with a hub_id is visible only while its recipient is
-- Hub-ready and an active member of that exact hub. Leavers lose such rows at once, rejoining shows
-- them again, new joiners are not backfilled (rows are only written for members at the time).
-- Replaces the fail-closed version of 0019; the posts migrations add rule 4.
create or replace function app.notification_visible_to(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select p_notification.recipient_id = p_user_id
     and (p_notification.hub_id is null or app.is_active_member(p_notification.hub_id, p_user_id))
$$;

-- Phone numbers: also visible between Hub-ready users who share an active hub (spec 2.2, 2.5).
create policy phone_identities_select_co_members on app.phone_identities
  for select to app_user
  using (user_id = any ((select app.viewer_co_member_ids())::uuid[]));

-- The Hub identity (display name, image): visible to co-members of an active hub.
create policy hub_profiles_select_co_members on app.hub_profiles
  for select to app_user
  using (user_id = any ((select app.viewer_co_member_ids())::uuid[]));

-- Assets in visible use now include hub images (hubs are visible to signed-in users) and the Hub
-- identity images of co-members. Requests without a token may read both tables, so that this
-- check runs for them too, but no policy lets them see a row.
grant select on app.hubs, app.hub_profiles to app_anonymous;
create or replace function app.asset_in_visible_use(p_asset_id uuid)
  returns boolean
  language sql stable
  as $$
  select exists (select from app.users u where u.profile_asset_id = p_asset_id)
      or exists (select from app.hubs h where h.profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles hp where hp.profile_asset_id = p_asset_id)
$$;

create or replace function app_private.asset_referenced(p_asset_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$
  select exists (select from app.users where profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles where profile_asset_id = p_asset_id)
      or exists (select from app.hubs where profile_asset_id = p_asset_id)
$$;

-- The public profile lists the hubs the user administers, when the viewer may see hubs
-- (signed-in viewers; none for requests without a token).
create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint,
  out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(c.followers, 0), coalesce(c.following, 0), 0::bigint, 0::bigint, 0::bigint,
         coalesce((select jsonb_agg(jsonb_build_object('id', h.id, 'name', h.name, 'photoKey', a.object_key) order by h.name)
                   from app.hub_memberships m
                   join app.hubs h on h.id = m.hub_id
                   left join app.assets a on a.id = h.profile_asset_id
                   where m.user_id = p_user_id and m.role in ('admin', 'super_admin') and app.viewer_id() is not null), '[]'),
         app.viewer_follows(p_user_id),
         exists (select from app.follows f where f.follower_id = p_user_id and f.followee_id = app.viewer_id()),
         exists (select from app.blocks b where b.blocker_id = app.viewer_id() and b.blocked_id = p_user_id)
  from (select) one
  left join app.follow_counts c on c.user_id = p_user_id
$$;

-- Down Migration
create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint,
  out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(c.followers, 0), coalesce(c.following, 0), 0::bigint, 0::bigint, 0::bigint, '[]'::jsonb,
         app.viewer_follows(p_user_id),
         exists (select from app.follows f where f.follower_id = p_user_id and f.followee_id = app.viewer_id()),
         exists (select from app.blocks b where b.blocker_id = app.viewer_id() and b.blocked_id = p_user_id)
  from (select) one
  left join app.follow_counts c on c.user_id = p_user_id
$$;
create or replace function app_private.asset_referenced(p_asset_id uuid)
  returns boolean
  language sql stable
  set search_path = pg_catalog
  as $$
  select exists (select from app.users where profile_asset_id = p_asset_id)
      or exists (select from app.hub_profiles where profile_asset_id = p_asset_id)
$$;
create or replace function app.asset_in_visible_use(p_asset_id uuid)
  returns boolean
  language sql stable
  as $$ select exists (select from app.users u where u.profile_asset_id = p_asset_id) $$;
revoke select on app.hubs, app.hub_profiles from app_anonymous;
drop policy hub_profiles_select_co_members on app.hub_profiles;
drop policy phone_identities_select_co_members on app.phone_identities;
create or replace function app.notification_visible_to(p_notification app.notifications, p_user_id uuid)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog
  as $$ select p_notification.recipient_id = p_user_id and p_notification.hub_id is null $$;
