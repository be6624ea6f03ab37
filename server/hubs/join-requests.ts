// Join requests: the admins' queue, approve and reject (spec part 3; contract section 8).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { shapeUserLite, userLite, type UserLiteRow } from '../shapes/user-lite.ts';
import { requireHubRole } from './shape.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Hub join requests';
const requestIds = { hubId: 'HUB_NOT_FOUND', requestId: 'JOIN_REQUEST_NOT_FOUND' } as const;

/** The enum app.join_request_source. */
export const joinRequestSources = ['invite_link', 'member_invitation'] as const;

export const hubJoinRequestEndpoints = [
  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/join-requests',
    tag,
    summary: 'Pending join requests, oldest first (admins)',
    auth: 'bearer',
    level: levels.hubReady,
    ids: { hubId: 'HUB_NOT_FOUND' },
    query: pageQuery(100, ['timestamp', 'id']),
    response: pageSchema(z.object({ id: z.string(), user: userLite, source: z.enum(joinRequestSources), createdAt: z.string() })),
    errors: ['HUB_ADMIN_REQUIRED'],
    async handler({ params, query, tx, services: { storage } }) {
      await requireHubRole(tx, params.hubId as string, ['admin', 'super_admin']);
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const { rows } = await tx.query<
        { request_id: string; source: (typeof joinRequestSources)[number]; created_at: Date; created_us: number } & UserLiteRow
      >(
        `select r.request_id, r.source, r.created_at, ${micros('r.created_at')} as created_us, r.user_id as id, r.username, r.full_name, r.photo_key
         from app.hub_join_request_page($1, ${fromMicros('$2')}, $3::uuid, $4) r`,
        [params.hubId, afterUs, afterId, query.limit + 1],
      );
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.created_us, row.request_id],
        (row) => row,
      );
      return {
        items: await Promise.all(
          page.items.map(async (row) => ({
            id: row.request_id,
            user: await shapeUserLite(storage, row),
            source: row.source,
            createdAt: row.created_at.toISOString(),
          })),
        ),
        nextCursor: page.nextCursor,
      };
    },
  }),

  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/join-requests/{requestId}/approve',
    tag,
    summary: 'Approve a join request (admins)',
    description:
      'The requester becomes an active member and gets hub_join_request_approved; the other active members get ' +
      'hub_member_joined. Two admins deciding at once: one succeeds, the other gets JOIN_REQUEST_NOT_PENDING.',
    auth: 'bearer',
    limit: 'hub_admin',
    level: levels.hubReady,
    ids: requestIds,
    response: z.object({ requestId: z.string(), status: z.literal('approved') }),
    errors: ['HUB_ADMIN_REQUIRED', 'JOIN_REQUEST_NOT_PENDING'],
    async handler({ params, tx }) {
      await tx.query('select app.approve_join_request($1, $2)', [params.hubId, params.requestId]);
      return { requestId: params.requestId as string, status: 'approved' as const };
    },
  }),

  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/join-requests/{requestId}/reject',
    tag,
    summary: 'Reject a join request (admins)',
    description: 'The requester gets hub_join_request_rejected (a global notification: they are not a member).',
    auth: 'bearer',
    limit: 'hub_admin',
    level: levels.hubReady,
    ids: requestIds,
    response: z.object({ requestId: z.string(), status: z.literal('rejected') }),
    errors: ['HUB_ADMIN_REQUIRED', 'JOIN_REQUEST_NOT_PENDING'],
    async handler({ params, tx }) {
      await tx.query('select app.reject_join_request($1, $2)', [params.hubId, params.requestId]);
      return { requestId: params.requestId as string, status: 'rejected' as const };
    },
  }),
];
