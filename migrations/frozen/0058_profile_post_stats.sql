-- Up Migration
-- Public profile counts now include posts (public and public_hub frames, as the profile feed
-- shows them) and vote activity (votes cast, votes received: counts only, never positions).
create or replace function app.profile_social(p_user_id uuid,
  out followers bigint, out following bigint, out posts bigint,
  out votes_cast bigint, out votes_received bigint, out admin_hubs jsonb,
  out viewer_follows boolean, out viewer_followed_by boolean, out viewer_blocked boolean)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select coalesce(c.followers, 0), coalesce(c.following, 0),
         (select count(*) from app.posts p where p.author_id = p_user_id and p.deleted_at is null and p.visibility <> 'private_locked_hub'),
         (select count(*) from app.vote_receipts r where r.user_id = p_user_id),
         (select count(*) from app.vote_receipts r join app.posts p on p.id = r.post_id where p.author_id = p_user_id and p.deleted_at is null),
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
