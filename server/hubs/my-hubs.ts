// GET /users/me/hubs: the viewer's active hubs, dark invited hubs and pending-approval hubs
// (spec 4.4; contract section 5).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { hubRoles, viewerStatuses } from './shape.ts';
import { maintainedCount } from '../http/counts.ts';
import { nullableText, text, textMax } from '../http/text.ts';
import { imageKeySql } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const myHub = z
  .object({
    id: z.string(),
    name: text(textMax.hubName),
    profilePhotoUrl: nullableText(textMax.url),
    memberCount: maintainedCount('active members of the hub'),
    viewerStatus: z.enum(viewerStatuses),
    viewerRole: z.enum(hubRoles).nullable(),
    invitationId: z.string().nullable(),
    lastActivityAt: z.string(),
  })
  .meta({ id: 'MyHub' });

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

/**
 * One page of the viewer's rows in list order (app.my_hub_page, db/sql/hubs/hubs.sql: one range of the
 * (user, activity, hub) index), each hub and photo then read under its policy, by its id (a lateral
 * subquery with a limit: joined freely, the planner may scan every hub to hash a page of rows).
 * $1, $2: the cursor (activity in microseconds, hub id) or nulls; $3: the page size plus one.
 * Exported for the plan test.
 */
export const myHubPageSql = `select h.id, h.name, a.photo_key, app.hub_member_count(h.id) as member_count, e.status, e.role,
         e.invitation_id, e.activity_at as last_activity_at, ${micros('e.activity_at')} as activity_us
  from app.my_hub_page(${fromMicros('$1')}, $2::uuid, $3) e
  cross join lateral (select h.id, h.name, h.profile_asset_id from app.hubs h where h.id = e.hub_id limit 1) h
  left join lateral (select ${imageKeySql('a')} as photo_key from app.assets a where a.id = h.profile_asset_id limit 1) a on true
  order by e.activity_at desc, e.hub_id desc`;

export const myHubEndpoints = [
  endpoint({
    method: 'get',
    path: '/users/me/hubs',
    tag: 'Hubs',
    summary: "The viewer's hubs: active, invited (dark) and pending admin approval",
    description:
      "Most recent hub activity first, as this list knows it (lastActivityAt, the order's key): the viewer's own activity " +
      "in a hub (a vote, a post or share, a message, an invitation sent, joining) moves the hub at once; other members' " +
      'activity reaches the list within about a minute (a hub of more than 60,000 members: within one second per 1,000 ' +
      'members), so that an action in a hub never writes a row per member. A page costs one index range, however many ' +
      'hubs the viewer has. One row per hub: an active membership wins over a pending request, which wins over an ' +
      'invitation. viewerRole is set for members only, invitationId for invited hubs only. Paging is keyset on ' +
      '(lastActivityAt, id): no hub is listed twice in one walk through the pages; a hub whose activity moves it above ' +
      'the cursor during the walk is not listed by the later pages (it is at the top of a new first page).',
    auth: 'bearer',
    level: levels.hubReady,
    query: pageQuery(50, ['timestamp', 'id']),
    response: pageSchema(myHub),
    async handler({ query, tx, services: { storage } }) {
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const { rows } = await tx.query<MyHubRow>(myHubPageSql, [afterUs, afterId, query.limit + 1]);
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.activity_us, row.id],
        (row) => row,
      );
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
