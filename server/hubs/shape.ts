// Hub response shapes (spec 2.5, 4.6; contract section 8) and the reads behind them.
import { z } from 'zod';
import type { Config } from '../../config.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { ApiError } from '../http/errors.ts';
import type { Storage } from '../uploads/storage.ts';
import { boundedCount, maintainedCount } from '../http/counts.ts';
import { trimmedText } from '../http/validation.ts';
import { nullableText, text, textMax } from '../http/text.ts';
import { imageColumnsSql, imageKeySql, profilePhoto, shapeImage, type ImageColumns } from '../uploads/images.ts';

export const hubRoles = ['member', 'admin', 'super_admin'] as const;
export const viewerStatuses = ['member', 'invited', 'pending_admin_approval'] as const;

/** activeUsers24h is counted up to this many members (app.hub_active_users, db/sql/hubs/hubs.sql). */
export const activeUsersCap = 1000;
export const activeUsers24h = () => boundedCount('members active in the hub in the last 24 hours', activeUsersCap);

export const hubResponse = z
  .object({
    id: z.string(),
    name: text(textMax.hubName),
    description: text(textMax.hubDescription),
    profilePhotoUrl: nullableText(textMax.url),
    profilePhoto: profilePhoto.nullable().describe('The hub photo with its upright size, placeholder and variants; null without a photo'),
    customLink: nullableText(textMax.customLink),
    memberCount: maintainedCount('active members of the hub'),
    activeUsers24h: activeUsers24h(),
    viewerStatus: z.enum(viewerStatuses).nullable(),
    viewerRole: z.enum(hubRoles).nullable(),
  })
  .meta({ id: 'Hub' });

/** A hub as the viewer sees it (GET /hubs/{hubId}); HUB_NOT_FOUND when unknown. */
export async function readHub(tx: RequestTransaction, storage: Storage, hubId: string): Promise<z.input<typeof hubResponse>> {
  const { rows } = await tx.query<{
    id: string;
    name: string;
    description: string;
    photo_key: string | null;
    photo: ImageColumns | null;
    custom_link: string | null;
    member_count: number;
    active_users: number;
    viewer_status: (typeof viewerStatuses)[number] | null;
    viewer_role: (typeof hubRoles)[number] | null;
  }>(
    `select h.id, h.name, h.description, ${imageKeySql('a')} as photo_key, ${imageColumnsSql('a')} as photo, h.custom_link, app.hub_member_count(h.id) as member_count,
            app.hub_active_users(h.id) as active_users, app.viewer_hub_status(h.id) as viewer_status, m.role as viewer_role
     from app.hubs h
     left join app.assets a on a.id = h.profile_asset_id
     left join app.hub_memberships m on m.hub_id = h.id and m.user_id = app.viewer_id()
     where h.id = $1`,
    [hubId],
  );
  const hub = rows[0];
  if (!hub) throw new ApiError('HUB_NOT_FOUND');
  return {
    id: hub.id,
    name: hub.name,
    description: hub.description,
    profilePhotoUrl: await storage.photoUrl(hub.photo_key),
    profilePhoto: hub.photo_key === null ? null : await shapeImage(storage, hub.photo),
    customLink: hub.custom_link,
    memberCount: hub.member_count,
    activeUsers24h: hub.active_users,
    viewerStatus: hub.viewer_status,
    viewerRole: hub.viewer_status === 'member' ? hub.viewer_role : null,
  };
}

/** The viewer's relationship to a hub; HUB_NOT_FOUND for an unknown hub. */
export async function viewerHubStatus(tx: RequestTransaction, hubId: string): Promise<(typeof viewerStatuses)[number] | null> {
  const { rows } = await tx.query<{ status: (typeof viewerStatuses)[number] | null }>('select app.viewer_hub_status($1) as status', [
    hubId,
  ]);
  return rows[0]?.status ?? null;
}

/** Lists of a hub need a relationship: active, invited or pending (else 403 HUB_MEMBERSHIP_REQUIRED). */
export async function requireHubRelationship(tx: RequestTransaction, hubId: string): Promise<(typeof viewerStatuses)[number]> {
  const status = await viewerHubStatus(tx, hubId);
  if (!status) throw new ApiError('HUB_MEMBERSHIP_REQUIRED');
  return status;
}

/** Checks the viewer's role in the hub (HUB_NOT_FOUND / HUB_MEMBERSHIP_REQUIRED / HUB_ADMIN_REQUIRED). */
export async function requireHubRole(tx: RequestTransaction, hubId: string, roles: readonly (typeof hubRoles)[number][]): Promise<void> {
  await tx.query('select app.require_hub_role($1, $2::app.hub_role[])', [hubId, roles]);
}

export const invitationResult = z
  .object({
    invitationId: z.string(),
    maskedPhoneNumber: text(textMax.phone),
    requiresAdminApproval: z.boolean(),
    inviteUrl: text(textMax.url),
    shareText: text(textMax.shareText),
    expiresAt: z.string(),
  })
  .meta({ id: 'HubInvitation' });

export interface InvitationRow {
  id: string;
  masked_phone: string;
  requires_admin_approval: boolean;
  expires_at: Date;
}

/** An invitation as returned to the inviter: the URL and text for the device's share sheet. */
export function shapeInvitation(config: Config, hubName: string, row: InvitationRow): z.input<typeof invitationResult> {
  const inviteUrl = `${config.publicWebBaseUrl}/hub-invitations/${row.id}`;
  return {
    invitationId: row.id,
    maskedPhoneNumber: row.masked_phone,
    requiresAdminApproval: row.requires_admin_approval,
    inviteUrl,
    shareText: `Join "${hubName}" on Opinion: ${inviteUrl}`,
    expiresAt: row.expires_at.toISOString(),
  };
}

/** Hub fields in request bodies (spec part 8). */
/** The most phone numbers one request invites (a new hub's initialInvitees, an invitation request). */
export const inviteesMax = 50;

export const hubName = trimmedText(3, textMax.hubName);
export const hubDescription = z.string().max(textMax.hubDescription);
export const customLink = z
  .string()
  .max(textMax.customLink)
  .regex(/^[A-Za-z0-9_-]{3,40}$/, '3-40 characters of letters, digits, _ and -');
