// Hub members and admins: lists, removal, promotion and demotion (spec 4.6; contract 8).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/ids.ts';
import { encodeCursor, fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { searchQuery } from '../shapes/user-list-item.ts';
import type { Storage } from '../uploads/storage.ts';
import { hubRoles, requireHubRelationship } from './shape.ts';
import { nullableText, textMax } from '../http/text.ts';
import { imageKeySql } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Hub members';
const ids = { hubId: 'HUB_NOT_FOUND' } as const;
const memberIds = { hubId: 'HUB_NOT_FOUND', userId: 'USER_NOT_FOUND' } as const;

interface MemberRow {
  id: string;
  username: string | null;
  name: string | null;
  photo_key: string | null;
  phone_e164: string | null;
  role: (typeof hubRoles)[number];
  joined_us: number;
}

/** Rows of the member list a page with `q` reads at most (then it ends, with a cursor if more follow). */
export const memberScanCap = 1000;

/**
 * Members of a hub in join order. Names and images are the Hub identity where the viewer may see it
 * (co-members), else the public profile; phone numbers come through the phone policy (only between
 * active co-members), so invited and pending viewers get the dark preview. Membership rows come from
 * app.hub_member_page (db/sql/hubs/hubs.sql): one page in join order, read from an index (app_user may not
 * select join times column by column). $1 the hub, $2 and $3 the position after which the page
 * starts (null for the first), $4 the roles listed (null: all), $5 the rows to return. With q
 * ($6), at most memberScanCap memberships are read and the page holds those that match, at most $5
 * (docs/performance.md): a page may then hold fewer than limit items with a nextCursor.
 */
export function memberPageSql(withQuery: boolean): string {
  const profile = `u.id, u.username, coalesce(hp.display_name, u.full_name) as name, coalesce(${imageKeySql('ha')}, ${imageKeySql('ua')}) as photo_key,
         m.role, ${micros('m.joined_at')} as joined_us`;
  const profileJoins = `join app.users u on u.id = m.user_id
    left join app.hub_profiles hp on hp.user_id = u.id
    left join app.assets ha on ha.id = hp.profile_asset_id
    left join app.assets ua on ua.id = u.profile_asset_id`;
  const page = (limit: string) => `app.hub_member_page($1, ${fromMicros('$2')}, $3::uuid, $4::app.hub_role[], ${limit})`;
  if (!withQuery) {
    return `select ${profile}, pi.phone_e164
    from ${page('$5')} m
    ${profileJoins}
    left join app.phone_identities pi on pi.user_id = u.id
    order by m.joined_at, m.user_id`;
  }
  // Phone numbers only for the rows returned (their policy probes each row it reads).
  return `with scanned as materialized (select * from ${page(String(memberScanCap))}),
    matched as (
      select ${profile}, m.joined_at
      from scanned m
      ${profileJoins}
      where app.user_matches(u.username, coalesce(hp.display_name, u.full_name), app.search_text($6))
      order by m.joined_at, m.user_id
      limit $5)
    select x.*, pi.phone_e164, e.scanned, e.scan_end_us, e.scan_end_id
    from (select count(*)::int as scanned, ${micros('max(s.joined_at)')} as scan_end_us,
                 (select s2.user_id from scanned s2 order by s2.joined_at desc, s2.user_id desc limit 1) as scan_end_id
          from scanned s) e
    left join matched x on true
    left join app.phone_identities pi on pi.user_id = x.id
    order by x.joined_at, x.id`;
}

/** One page of member rows with image URLs, shaped by `shape`. */
async function memberPage<T>(storage: Storage, rows: MemberRow[], limit: number, shape: (row: MemberRow, photoUrl: string | null) => T) {
  const page = toPage(
    rows,
    limit,
    (row) => [row.joined_us, row.id],
    (row) => row,
  );
  return {
    items: await Promise.all(page.items.map(async (row) => shape(row, await storage.photoUrl(row.photo_key)))),
    nextCursor: page.nextCursor,
  };
}

const memberItem = z
  .object({
    id: z.string(),
    name: nullableText(textMax.name),
    username: nullableText(textMax.handle),
    profilePhotoUrl: nullableText(textMax.url),
    phoneNumber: nullableText(textMax.phone),
  })
  .meta({ id: 'HubMember' });

const adminItem = z
  .object({
    id: z.string(),
    name: nullableText(textMax.name),
    username: nullableText(textMax.handle),
    profilePhotoUrl: nullableText(textMax.url),
    role: z.enum(hubRoles),
  })
  .meta({ id: 'HubAdmin' });

export const hubMemberEndpoints = [
  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/members',
    tag,
    summary: 'Active members of a hub',
    description:
      'For active members, invited and pending users (HUB_MEMBERSHIP_REQUIRED otherwise). phoneNumber is set only between active ' +
      'members; invited and pending viewers get null (dark preview). Pending invitations and join requests are not listed. ' +
      'q matches handle prefixes and name words; role filters by role. With q, a page reads at most 1,000 members: it may hold ' +
      'fewer than limit items, even none, and still have a nextCursor, which goes on where the reading stopped; the list has ' +
      'been read to its end when nextCursor is null.',
    auth: 'bearer',
    level: levels.hubReady,
    ids,
    query: pageQuery(100, ['timestamp', 'id']).extend({ q: searchQuery.optional(), role: z.enum(hubRoles).optional() }),
    response: pageSchema(memberItem),
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    async handler({ params, query, tx, services: { storage } }) {
      await requireHubRelationship(tx, params.hubId as string);
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const roles = query.role ? [query.role] : null;
      const shape = (row: MemberRow, profilePhotoUrl: string | null) => ({
        id: row.id,
        name: row.name,
        username: row.username,
        profilePhotoUrl,
        phoneNumber: row.phone_e164,
      });
      if (query.q) {
        const { rows } = await tx.query<MemberRow & { scanned: number; scan_end_us: number | null; scan_end_id: string | null }>(
          memberPageSql(true),
          [params.hubId, afterUs, afterId, roles, query.limit + 1, query.q],
        );
        const matched = rows.filter((row) => row.id !== null);
        const page = await memberPage(storage, matched, query.limit, shape);
        const stats = rows[0];
        const more =
          stats && stats.scanned === memberScanCap ? encodeCursor([Number(stats.scan_end_us), stats.scan_end_id as string]) : null;
        return { items: page.items, nextCursor: page.nextCursor ?? more };
      }
      const { rows } = await tx.query<MemberRow>(memberPageSql(false), [params.hubId, afterUs, afterId, roles, query.limit + 1]);
      return memberPage(storage, rows, query.limit, shape);
    },
  }),

  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/members/{userId}/remove',
    tag,
    summary: 'Remove a member (admins)',
    description:
      'Admins remove members; only the super_admin removes admins (FORBIDDEN otherwise); nobody removes the super_admin ' +
      '(SUPER_ADMIN_CANNOT_LEAVE); leaving yourself is DELETE /hubs/{hubId}/membership. The removed member gets ' +
      'hub_member_removed as a global notification (hub_id null), since they can no longer see hub-scoped rows.',
    auth: 'bearer',
    limit: 'hub_admin',
    level: levels.hubReady,
    ids: memberIds,
    response: z.object({ removed: z.literal(true) }),
    errors: ['HUB_ADMIN_REQUIRED', 'FORBIDDEN', 'SUPER_ADMIN_CANNOT_LEAVE'],
    async handler({ params, tx }) {
      await tx.query('select app.remove_hub_member($1, $2)', [params.hubId, params.userId]);
      return { removed: true as const };
    },
  }),

  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/admins',
    tag,
    summary: 'Admins and the super_admin (shown as manager) of a hub',
    auth: 'bearer',
    level: levels.hubReady,
    ids,
    query: pageQuery(100, ['timestamp', 'id']),
    response: pageSchema(adminItem),
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    async handler({ params, query, tx, services: { storage } }) {
      await requireHubRelationship(tx, params.hubId as string);
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const { rows } = await tx.query<MemberRow>(memberPageSql(false), [
        params.hubId,
        afterUs,
        afterId,
        ['admin', 'super_admin'],
        query.limit + 1,
      ]);
      return memberPage(storage, rows, query.limit, (row, profilePhotoUrl) => ({
        id: row.id,
        name: row.name,
        username: row.username,
        profilePhotoUrl,
        role: row.role,
      }));
    },
  }),

  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/admins',
    tag,
    summary: 'Promote an active member to admin (super_admin only)',
    description: 'Promoting an admin again is a no-op. The target gets hub_role_changed.',
    auth: 'bearer',
    limit: 'hub_admin',
    level: levels.hubReady,
    ids,
    body: z.strictObject({ userId: z.string().max(64) }),
    response: z.object({ userId: z.string(), role: z.enum(hubRoles) }),
    errors: ['HUB_ADMIN_REQUIRED', 'FORBIDDEN', 'USER_NOT_FOUND', 'SUPER_ADMIN_CANNOT_LEAVE'],
    async handler({ body, params, tx }) {
      if (!isUuid(body.userId)) throw new ApiError('USER_NOT_FOUND');
      await tx.query(`select app.change_hub_role($1, $2, 'admin')`, [params.hubId, body.userId]);
      return { userId: body.userId, role: 'admin' as const };
    },
  }),

  endpoint({
    method: 'delete',
    path: '/hubs/{hubId}/admins/{userId}',
    tag,
    summary: 'Demote an admin to member (super_admin only)',
    description: 'The super_admin cannot be demoted (SUPER_ADMIN_CANNOT_LEAVE). The target gets hub_role_changed.',
    auth: 'bearer',
    limit: 'hub_admin',
    level: levels.hubReady,
    ids: memberIds,
    response: z.object({ userId: z.string(), role: z.enum(hubRoles) }),
    errors: ['HUB_ADMIN_REQUIRED', 'FORBIDDEN', 'SUPER_ADMIN_CANNOT_LEAVE'],
    async handler({ params, tx }) {
      await tx.query(`select app.change_hub_role($1, $2, 'member')`, [params.hubId, params.userId]);
      return { userId: params.userId as string, role: 'member' as const };
    },
  }),
];
