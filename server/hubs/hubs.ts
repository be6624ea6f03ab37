// Hubs: create, read, edit, custom link, leave, notification settings (spec 4.6; contract 8).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/ids.ts';
import { phoneInput } from '../auth/phone.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import {
  customLink,
  hubDescription,
  hubName,
  hubResponse,
  invitationResult,
  inviteesMax,
  readHub,
  requireHubRole,
  shapeInvitation,
  type InvitationRow,
} from './shape.ts';
import { text, textMax } from '../http/text.ts';
import { requireUsableAssets } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';
import { publicationTypes } from '../shapes/notification.ts';

const tag = 'Hubs';
const ids = { hubId: 'HUB_NOT_FOUND' } as const;

async function requireHubPhoto(tx: RequestTransaction, assetId: string | undefined): Promise<void> {
  if (assetId === undefined) return;
  const unusable = new ApiError('VALIDATION_FAILED', { fields: { profileAssetId: 'Must be a completed hub_photo asset of yours' } });
  if (!isUuid(assetId)) throw unusable;
  await requireUsableAssets(tx, 'app.hub_asset_usable($1)', assetId, [assetId], () => unusable);
}

const notificationSettings = z.object({ contentMuted: z.boolean() });

export const hubCoreEndpoints = [
  endpoint({
    method: 'post',
    path: '/hubs',
    tag,
    summary: 'Create a hub',
    description:
      'The creator becomes super_admin and first member (with default notification settings), the custom link is reserved ' +
      '(case-insensitively, stored lowercase), and each initial invitee gets an admin invitation (hub_invite_received for ' +
      'existing users; a phone without a user gets the invitation when it is verified). Phones of existing members and the ' +
      "creator's own are skipped. The API never receives a contact book, only the selected phone numbers. Hub-ready users only.",
    auth: 'bearer',
    limit: 'hubs',
    level: levels.hubReady,
    status: 201,
    body: z.strictObject({
      name: hubName,
      profileAssetId: z.string().max(64),
      description: hubDescription.optional(),
      customLink: customLink.optional(),
      initialInvitees: z.array(phoneInput).min(1).max(inviteesMax).optional(),
    }),
    response: z.object({
      hubId: z.string(),
      role: z.literal('super_admin'),
      initialInvitations: z.array(invitationResult).max(inviteesMax),
    }),
    errors: ['ASSET_NOT_READY', 'HUB_LINK_TAKEN'],
    async handler({ body, tx, services: { config } }) {
      await requireHubPhoto(tx, body.profileAssetId);
      const created = await tx.query<{ hub_id: string }>('select app.create_hub($1, $2, $3, $4, $5) as hub_id', [
        body.name,
        body.description ?? null,
        body.profileAssetId,
        body.customLink ?? null,
        body.initialInvitees ?? [],
      ]);
      const hubId = created.rows[0]?.hub_id as string;
      const invitations = await tx.query<InvitationRow>(
        'select id, masked_phone, requires_admin_approval, expires_at from app.hub_invitations where hub_id = $1 order by created_at, id',
        [hubId],
      );
      return {
        hubId,
        role: 'super_admin' as const,
        initialInvitations: invitations.rows.map((row) => shapeInvitation(config, body.name, row)),
      };
    },
  }),

  endpoint({
    method: 'get',
    path: '/hubs/{hubId}',
    tag,
    summary: 'A hub as the viewer sees it',
    description: 'viewerStatus and viewerRole are null when the viewer has no relationship (viewerRole is set for members only).',
    auth: 'bearer',
    level: levels.hubReady,
    ids,
    response: hubResponse,
    handler: ({ params, tx, services: { storage } }) => readHub(tx, storage, params.hubId as string),
  }),

  endpoint({
    method: 'patch',
    path: '/hubs/{hubId}',
    tag,
    summary: "Edit a hub's name, description or image (admins)",
    auth: 'bearer',
    limit: 'hub_admin',
    level: levels.hubReady,
    ids,
    body: z
      .strictObject({ name: hubName.optional(), description: hubDescription.optional(), profileAssetId: z.string().max(64).optional() })
      .refine((value) => Object.keys(value).length > 0, { message: 'At least one field is required' })
      .meta({ minProperties: 1 }),
    response: hubResponse,
    errors: ['ASSET_NOT_READY', 'HUB_ADMIN_REQUIRED'],
    async handler({ body, params, tx, services: { storage } }) {
      await requireHubPhoto(tx, body.profileAssetId);
      await tx.query('select app.update_hub($1, $2, $3, $4)', [
        params.hubId,
        body.name ?? null,
        body.description ?? null,
        body.profileAssetId ?? null,
      ]);
      return readHub(tx, storage, params.hubId as string);
    },
  }),

  endpoint({
    method: 'patch',
    path: '/hubs/{hubId}/link',
    tag,
    summary: "Change a hub's custom link (admins)",
    description: 'Links are unique case-insensitively and stored lowercase.',
    auth: 'bearer',
    limit: 'hub_admin',
    level: levels.hubReady,
    ids,
    body: z.strictObject({ customLink }),
    response: z.object({ customLink: text(textMax.customLink) }),
    errors: ['HUB_ADMIN_REQUIRED', 'HUB_LINK_TAKEN'],
    async handler({ body, params, tx }) {
      const { rows } = await tx.query<{ link: string }>('select app.set_hub_link($1, $2) as link', [params.hubId, body.customLink]);
      return { customLink: rows[0]?.link as string };
    },
  }),

  endpoint({
    method: 'delete',
    path: '/hubs/{hubId}/membership',
    tag,
    summary: 'Leave a hub',
    description: 'The super_admin cannot leave (409 SUPER_ADMIN_CANNOT_LEAVE).',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.hubReady,
    ids,
    response: z.object({ left: z.literal(true) }),
    errors: ['HUB_MEMBERSHIP_REQUIRED', 'SUPER_ADMIN_CANNOT_LEAVE'],
    async handler({ params, tx }) {
      await tx.query('select app.leave_hub($1)', [params.hubId]);
      return { left: true as const };
    },
  }),

  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/notification-settings',
    tag,
    summary: "The viewer's notification settings for a hub (active members)",
    auth: 'bearer',
    level: levels.hubReady,
    ids,
    response: notificationSettings,
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    async handler({ params, tx }) {
      await requireHubRole(tx, params.hubId as string, ['member', 'admin', 'super_admin']);
      const { rows } = await tx.query<{ content_muted: boolean }>('select app.viewer_hub_content_muted($1) as content_muted', [
        params.hubId,
      ]);
      return { contentMuted: rows[0]?.content_muted ?? false };
    },
  }),

  endpoint({
    method: 'patch',
    path: '/hubs/{hubId}/notification-settings',
    tag,
    summary: 'Mute or unmute hub content notifications',
    description:
      `contentMuted=true suppresses ${publicationTypes.join(', ')} and hub-scoped post_reposted for this hub: no row, ` +
      'no stream event. It never mutes invitations, join requests, approvals, rejections, joins, removals, role changes or ' +
      'global notifications, and does not change feeds.',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.hubReady,
    ids,
    body: z.strictObject({ contentMuted: z.boolean() }),
    response: notificationSettings,
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    async handler({ body, params, tx }) {
      await tx.query('select app.set_hub_content_muted($1, $2)', [params.hubId, body.contentMuted]);
      return { contentMuted: body.contentMuted };
    },
  }),
];
