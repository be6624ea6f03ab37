-- Up Migration
-- The web pages of invite URLs (server/web/pages.ts). Someone without the app, or a link-preview
-- crawler, opens `PUBLIC_WEB_BASE_URL/hub-invite-links/<token>` or `/hub-invitations/<id>` with no
-- token: the page reads as app_anonymous, like every request without one, and shows the hub's
-- invite preview only (name, description, photo, member count: the hub's public face, contract
-- section 8), which is what the API's preview shows a signed-in user. Nothing of members, phones,
-- invitations or hub content. The token or the invitation id is the capability: whoever holds the
-- URL was given it (and its share text already names the hub).
--
-- 1. app.invite_link_preview (0032, security definer) may be called by app_anonymous too. It still
--    raises INVITE_LINK_NOT_FOUND / INVITE_LINK_EXPIRED for a token that is unknown or past expiry.
-- 2. app.invitation_preview: the same preview for a personal invitation, while it is pending and
--    unexpired; no row otherwise (unknown, answered, expired), so the page cannot tell those apart.
--    The invitee's phone never leaves the function.
grant execute on function app.invite_link_preview(text) to app_anonymous;

create function app.invitation_preview(p_invitation_id uuid)
  returns table (hub_id uuid, name text, description text, photo_key text, member_count integer)
  language sql stable security definer
  set search_path = pg_catalog
  as $$
  select h.id, h.name, h.description, a.object_key, app_private.counter_value('hub_members', h.id)::integer
  from app.hub_invitations i
  join app.hubs h on h.id = i.hub_id
  left join app.assets a on a.id = h.profile_asset_id
  where i.id = p_invitation_id
    and i.status = 'invited'
    and i.expires_at > now()
$$;

revoke all on function app.invitation_preview(uuid) from public;
grant execute on function app.invitation_preview(uuid) to app_anonymous;


-- Down Migration
drop function app.invitation_preview(uuid);
revoke execute on function app.invite_link_preview(text) from app_anonymous;
