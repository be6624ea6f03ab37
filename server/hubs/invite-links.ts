// Invite links: admins make them; anyone signed in previews one; Hub-ready users ask to join
// through one (spec part 3; contract section 8). Links never create membership directly.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { maintainedCount } from '../http/counts.ts';
import { nullableText, text, textMax } from '../http/text.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Hub invite links';

/**
 * An invite link's token as this server makes them (18 random bytes, base64url: 24 characters),
 * with room to grow. A path token of another form was never issued: INVITE_LINK_NOT_FOUND.
 */
const tokenMaxLength = 64;
const token = {
  schema: z
    .string()
    .max(tokenMaxLength)
    .regex(/^[A-Za-z0-9_-]+$/),
  notFound: 'INVITE_LINK_NOT_FOUND',
} as const;

export const hubInviteLinkEndpoints = [
  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/invite-links',
    tag,
    summary: 'Create an invite link (admins); it lasts 7 days',
    auth: 'bearer',
    limit: 'invite_links',
    level: levels.hubReady,
    status: 201,
    ids: { hubId: 'HUB_NOT_FOUND' },
    response: z.object({ token: text(tokenMaxLength), url: text(textMax.url), expiresAt: z.string() }),
    errors: ['HUB_ADMIN_REQUIRED'],
    async handler({ params, tx, services: { config } }) {
      const value = randomBytes(18).toString('base64url');
      const { rows } = await tx.query<{ expires_at: Date }>('select app.create_invite_link($1, $2) as expires_at', [params.hubId, value]);
      return {
        token: value,
        url: `${config.publicWebBaseUrl}/hub-invite-links/${value}`,
        expiresAt: (rows[0]?.expires_at as Date).toISOString(),
      };
    },
  }),

  endpoint({
    method: 'get',
    path: '/hub-invite-links/{token}',
    tag,
    pathParameters: { token },
    summary: "An invite link's safe hub preview (any signed-in user)",
    auth: 'bearer',
    response: z.object({
      hubId: z.string(),
      name: text(textMax.hubName),
      description: text(textMax.hubDescription),
      profilePhotoUrl: nullableText(textMax.url),
      memberCount: maintainedCount('active members of the hub'),
    }),
    errors: ['INVITE_LINK_NOT_FOUND', 'INVITE_LINK_EXPIRED'],
    async handler({ params, tx, services: { storage } }) {
      const { rows } = await tx.query<{
        hub_id: string;
        name: string;
        description: string;
        photo_key: string | null;
        member_count: number;
      }>('select hub_id, name, description, photo_key, member_count from app.invite_link_preview($1)', [params.token]);
      const hub = rows[0] as { hub_id: string; name: string; description: string; photo_key: string | null; member_count: number };
      return {
        hubId: hub.hub_id,
        name: hub.name,
        description: hub.description,
        profilePhotoUrl: await storage.photoUrl(hub.photo_key),
        memberCount: hub.member_count,
      };
    },
  }),

  endpoint({
    method: 'post',
    path: '/hub-invite-links/{token}/join-requests',
    tag,
    pathParameters: { token },
    summary: 'Ask to join through an invite link',
    description:
      'Creates a join request for admin approval (hub_join_request_created to the admins). An existing pending request is ' +
      'returned again.',
    auth: 'bearer',
    limit: 'join_requests',
    level: levels.hubReady,
    status: 201,
    response: z.object({ requestId: z.string(), hubId: z.string(), viewerStatus: z.literal('pending_admin_approval') }),
    errors: ['INVITE_LINK_NOT_FOUND', 'INVITE_LINK_EXPIRED', 'ALREADY_HUB_MEMBER'],
    async handler({ params, tx }) {
      const { rows } = await tx.query<{ request_id: string; hub_id: string }>('select request_id, hub_id from app.request_to_join($1)', [
        params.token,
      ]);
      const request = rows[0] as { request_id: string; hub_id: string };
      return { requestId: request.request_id, hubId: request.hub_id, viewerStatus: 'pending_admin_approval' as const };
    },
  }),
];
