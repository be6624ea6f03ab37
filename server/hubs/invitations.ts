// Phone invitations: create and list (members), accept and decline (the invited user).
// Spec part 3 and 4.6; contract section 8.
import { z } from 'zod';
import { phoneInput } from '../auth/phone.ts';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { shapeUserLite, userLite, type UserLiteRow } from '../shapes/user-lite.ts';
import { invitationResult, inviteesMax, requireHubRole, shapeInvitation, type InvitationRow } from './shape.ts';
import { text, textMax } from '../http/text.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Hub invitations';

/** The enum app.invitation_status; the API adds `expired` for an `invited` row past its time. */
export const invitationStatuses = ['invited', 'accepted', 'declined'] as const;
type ListedStatus = (typeof invitationStatuses)[number] | 'expired';

const invitationListItem = z
  .object({
    id: z.string(),
    maskedPhoneNumber: text(textMax.phone),
    status: z.enum([...invitationStatuses, 'expired']),
    invitedBy: userLite,
    createdAt: z.string(),
    expiresAt: z.string(),
  })
  .meta({ id: 'HubInvitationListItem' });

export const hubInvitationEndpoints = [
  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/invitations',
    tag,
    summary: 'Invite phone numbers to a hub (active members)',
    description:
      "An admin's invitation leads to membership when accepted; a member's invitation leads to admin approval " +
      '(requiresAdminApproval). Existing users get hub_invite_received; a phone with no user yet gets the invitation (and ' +
      'the notification) when it is verified. Nothing is sent by SMS: inviteUrl and shareText are for the device share ' +
      'sheet. An unexpired pending invitation of the same phone is returned again; phones of members are skipped. ' +
      'Invitations expire after 7 days.',
    auth: 'bearer',
    limit: 'invitations',
    level: levels.hubReady,
    status: 201,
    ids: { hubId: 'HUB_NOT_FOUND' },
    body: z.strictObject({ invitees: z.array(phoneInput).min(1).max(inviteesMax) }),
    response: z.object({ invitations: z.array(invitationResult).max(inviteesMax) }),
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    async handler({ body, params, tx, services: { config } }) {
      const { rows } = await tx.query<InvitationRow>(
        'select id, masked_phone, requires_admin_approval, expires_at from app.invite_to_hub($1, $2)',
        [params.hubId, body.invitees],
      );
      const hub = await tx.query<{ name: string }>('select name from app.hubs where id = $1', [params.hubId]);
      const name = hub.rows[0]?.name as string;
      return { invitations: rows.map((row) => shapeInvitation(config, name, row)) };
    },
  }),

  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/invitations',
    tag,
    summary: "A hub's invitations, newest first, with masked phone numbers (active members)",
    auth: 'bearer',
    level: levels.hubReady,
    ids: { hubId: 'HUB_NOT_FOUND' },
    query: pageQuery(100, ['timestamp', 'id']),
    response: pageSchema(invitationListItem),
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    async handler({ params, query, tx, services: { storage } }) {
      await requireHubRole(tx, params.hubId as string, ['member', 'admin', 'super_admin']);
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const { rows } = await tx.query<
        {
          invitation_id: string;
          masked_phone: string;
          status: string;
          expired: boolean;
          created_at: Date;
          expires_at: Date;
          created_us: number;
        } & UserLiteRow
      >(
        `select i.invitation_id, i.masked_phone, i.status, i.expires_at <= now() as expired, i.created_at, i.expires_at,
                ${micros('i.created_at')} as created_us, i.inviter_id as id, i.username, i.full_name, i.photo_key
         from app.hub_invitation_page($1, ${fromMicros('$2')}, $3::uuid, $4) i`,
        [params.hubId, afterUs, afterId, query.limit + 1],
      );
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.created_us, row.invitation_id],
        (row) => row,
      );
      return {
        items: await Promise.all(
          page.items.map(async (row) => ({
            id: row.invitation_id,
            maskedPhoneNumber: row.masked_phone,
            status: (row.status === 'invited' && row.expired ? 'expired' : row.status) as ListedStatus,
            invitedBy: await shapeUserLite(storage, row),
            createdAt: row.created_at.toISOString(),
            expiresAt: row.expires_at.toISOString(),
          })),
        ),
        nextCursor: page.nextCursor,
      };
    },
  }),

  endpoint({
    method: 'post',
    path: '/hub-invitations/{invitationId}/accept',
    tag,
    summary: 'Accept an invitation',
    description:
      "An admin's invitation makes the viewer an active member (hub_member_joined to the other members); a member's " +
      'invitation creates a join request (pending_admin_approval; hub_join_request_created to the admins). Expired: 410.',
    auth: 'bearer',
    limit: 'join_requests',
    level: levels.hubReady,
    ids: { invitationId: 'INVITATION_NOT_FOUND' },
    response: z.object({ hubId: z.string(), viewerStatus: z.enum(['member', 'pending_admin_approval']) }),
    errors: ['INVITATION_NOT_PENDING', 'INVITATION_EXPIRED', 'ALREADY_HUB_MEMBER'],
    async handler({ params, tx }) {
      const { rows } = await tx.query<{ hub_id: string; viewer_status: 'member' | 'pending_admin_approval' }>(
        'select hub_id, viewer_status from app.accept_invitation($1)',
        [params.invitationId],
      );
      const accepted = rows[0];
      if (!accepted) throw new ApiError('INVITATION_NOT_FOUND');
      return { hubId: accepted.hub_id, viewerStatus: accepted.viewer_status };
    },
  }),

  endpoint({
    method: 'post',
    path: '/hub-invitations/{invitationId}/decline',
    tag,
    summary: 'Decline an invitation',
    description: 'The invitation ends as declined; nobody is notified.',
    auth: 'bearer',
    limit: 'join_requests',
    level: levels.hubReady,
    ids: { invitationId: 'INVITATION_NOT_FOUND' },
    response: z.object({ hubId: z.string(), status: z.literal('declined') }),
    errors: ['INVITATION_NOT_PENDING', 'INVITATION_EXPIRED'],
    async handler({ params, tx }) {
      const { rows } = await tx.query<{ hub_id: string }>('select app.decline_invitation($1) as hub_id', [params.invitationId]);
      return { hubId: rows[0]?.hub_id as string, status: 'declined' as const };
    },
  }),
];
