// GET /users/me/hubs: the viewer's active hubs, dark invited hubs and pending-approval hubs
// (spec 4.4; contract section 5).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { hubRoles, viewerStatuses } from '../hubs/shape.ts';
import { maintainedCount } from '../http/counts.ts';

const myHub = z.object({
  id: z.string(),
  name: z.string(),
  profilePhotoUrl: z.string().nullable(),
  memberCount: maintainedCount('active members of the hub'),
  viewerStatus: z.enum(viewerStatuses),
  viewerRole: z.enum(hubRoles).nullable(),
  invitationId: z.string().nullable(),
  lastActivityAt: z.string(),
}).meta({ id: 'MyHub' });

interface MyHubRow {
  id: string;
  name: string;
  photo_key: string | null;
  member_count: number;
  status: (typeof viewerStatuses)[number];
  role: (typeof hubRoles)[number] | null;
  invitation_id: string | null;
  last_activity_at: Date;
  activity_us: number;
}

export const myHubEndpoints = [
  endpoint({
    method: 'get',
    path: '/users/me/hubs',
    tag: 'Hubs',
    summary: "The viewer's hubs: active, invited (dark) and pending admin approval",
    description:
      'Most recent hub activity first. One row per hub: an active membership wins over a pending request, which wins over an ' +
      'invitation. viewerRole is set for members only, invitationId for invited hubs only. A hub whose activity changes while ' +
      'paging keeps the position it had when the page was read.',
    auth: 'bearer',
    level: 4,
    query: pageQuery(50, ['timestamp', 'id']),
    response: pageSchema(myHub),
    async handler({ query, tx, services: { storage } }) {
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const { rows } = await tx.query<MyHubRow>(
        `select * from (
           select distinct on (h.id) h.id, h.name, a.object_key as photo_key, app.hub_member_count(h.id) as member_count, rel.status, rel.role,
                  rel.invitation_id, act.last_activity_at, ${micros('act.last_activity_at')} as activity_us
           from (
             select m.hub_id, 'member' as status, m.role, null::uuid as invitation_id, 1 as rank
               from app.hub_memberships m where m.user_id = app.viewer_id()
             union all
             select r.hub_id, 'pending_admin_approval', null, null, 2
               from app.hub_join_requests r where r.user_id = app.viewer_id() and r.status = 'pending'
             union all
             select i.hub_id, 'invited', null, i.id, 3
               from app.viewer_open_invitations() i
           ) rel
           join app.hubs h on h.id = rel.hub_id
           cross join lateral (select app.hub_last_activity_at(h.id) as last_activity_at) act
           left join app.assets a on a.id = h.profile_asset_id
           order by h.id, rel.rank
         ) mine
         where $1::bigint is null or (last_activity_at, id) < (${fromMicros('$1')}, $2::uuid)
         order by last_activity_at desc, id desc
         limit $3`,
        [afterUs, afterId, query.limit + 1],
      );
      const page = toPage(rows, query.limit, (row) => [row.activity_us, row.id], (row) => row);
      return {
        items: await Promise.all(
          page.items.map(async (row) => ({
            id: row.id,
            name: row.name,
            profilePhotoUrl: await storage.photoUrl(row.photo_key),
            memberCount: row.member_count,
            viewerStatus: row.status,
            viewerRole: row.role,
            invitationId: row.invitation_id,
            lastActivityAt: row.last_activity_at.toISOString(),
          })),
        ),
        nextCursor: page.nextCursor,
      };
    },
  }),
];
