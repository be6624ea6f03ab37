// Follows: follow, unfollow, and the follower/following lists of a user (spec 4.4; contract 5).
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { encodeCursor, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import type { Storage } from '../uploads/storage.ts';
import { followListItem, searchQuery, shapeFollowListItem, type UserListRow } from '../shapes/user-list-item.ts';
import { imageKeySql } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Follows';
const ids = { userId: 'USER_NOT_FOUND' } as const;

const qSearchDescription =
  "q searches this list (handle prefix or name words, case- and accent-insensitive). viewerFollows is false for the viewer's own row. " +
  'With q, a page reads at most 1,000 rows of the list: it may hold fewer than limit items, even none, and still have a ' +
  'nextCursor, which goes on where the reading stopped; the list has been read to its end when nextCursor is null.';

const listQuery = pageQuery(100, ['bigint']).extend({ q: searchQuery.optional() });

/** Rows of a follow list a page with `q` reads at most (then it ends, with a cursor if more follow). */
export const followScanCap = 1000;

/**
 * The statement of a follow list page: $1 the user, $2 the seq after which the page starts (null for
 * the first), then without q $3 the rows to return; with q, $3 the query and $4 the rows to return.
 * The follows come from app.follow_page (db/sql/follows.sql), which reads them with their users
 * through the follows and users policies from a cursor that walks the user's range of the (user,
 * seq) index in order, so a page reads about a page whatever the statistics say the user has
 * (docs/performance.md, "Hot values"). With q it reads at most followScanCap follows, those of hidden
 * users included (they are read, and count), and keeps the matches.
 */
export function followPageSql(side: 'follower_id' | 'followee_id', withQuery: boolean): string {
  const followers = side === 'follower_id';
  const columns = `f.user_id as id, f.username, f.full_name, f.bio, ${imageKeySql('a')} as photo_key, f.seq, app.viewer_follows(f.user_id) as viewer_follows`;
  if (!withQuery) {
    return `select ${columns}
       from app.follow_page($1, ${followers}, $2::bigint, $3::int, false) f
       left join app.assets a on a.id = f.profile_asset_id
       order by f.seq desc`;
  }
  return `with scanned as materialized (
       select * from app.follow_page($1, ${followers}, $2::bigint, ${followScanCap}, true)
     ),
     matched as (
       select ${columns}
       from scanned f
       left join app.assets a on a.id = f.profile_asset_id
       where f.visible and app.user_matches(f.username, f.full_name, app.search_text($3))
       order by f.seq desc
       limit $4
     )
     select m.*, e.scanned, e.scan_end
     from (select count(*)::int as scanned, min(s.seq) as scan_end from scanned s) e
     left join matched m on true
     order by m.seq desc`;
}

/**
 * One page of a follow list: `side` is the column naming the listed users. Rows come through the
 * policies of users and follows (blocked pairs and users without a public profile never appear).
 * Without q, the page reads its rows in (anchor, seq) index order. With q, it reads at most
 * followScanCap rows of the list in that order and returns those that match: a q that few of the
 * list match (or none) costs the same in a list of 100,000 as in one of 1,000 (docs/performance.md),
 * and such a page may hold fewer than `limit` items, even none, with a nextCursor that goes on where
 * the reading stopped.
 */
async function followList(
  tx: RequestTransaction,
  storage: Storage,
  userId: string,
  side: 'follower_id' | 'followee_id',
  query: z.output<typeof listQuery>,
) {
  const target = await tx.query('select 1 from app.users where id = $1', [userId]);
  if (target.rowCount === 0) throw new ApiError('USER_NOT_FOUND');
  const after = query.cursor?.[0] ?? null;
  if (!query.q) {
    const { rows } = await tx.query<UserListRow & { seq: number }>(followPageSql(side, false), [userId, after, query.limit + 1]);
    const page = toPage(
      rows,
      query.limit,
      (row) => [row.seq],
      (row) => row,
    );
    return { items: await Promise.all(page.items.map((row) => shapeFollowListItem(storage, row))), nextCursor: page.nextCursor };
  }
  const { rows } = await tx.query<Partial<UserListRow & { seq: number }> & { scanned: number; scan_end: number | null }>(
    followPageSql(side, true),
    [userId, after, query.q, query.limit + 1],
  );
  const matched = rows.filter((row) => row.id !== null && row.id !== undefined) as (UserListRow & { seq: number })[];
  const page = toPage(
    matched,
    query.limit,
    (row) => [row.seq],
    (row) => row,
  );
  const stats = rows[0];
  const nextCursor = page.nextCursor ?? (stats && stats.scanned === followScanCap ? encodeCursor([Number(stats.scan_end)]) : null);
  return { items: await Promise.all(page.items.map((row) => shapeFollowListItem(storage, row))), nextCursor };
}

export const endpoints = [
  endpoint({
    method: 'post',
    path: '/users/{userId}/follow',
    tag,
    summary: 'Follow a user',
    description:
      'Needs profile basics (no phone). A user blocked either way answers like an unknown user (404). Notifies the followed user.',
    auth: 'bearer',
    limit: 'follows',
    level: levels.profile,
    ids,
    response: z.object({ following: z.literal(true) }),
    errors: ['ALREADY_FOLLOWING', 'CANNOT_FOLLOW_SELF'],
    async handler({ params, tx }) {
      await tx.query('select app.follow_user($1)', [params.userId]);
      return { following: true as const };
    },
  }),

  endpoint({
    method: 'delete',
    path: '/users/{userId}/follow',
    tag,
    summary: 'Stop following a user (a no-op when not following)',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.profile,
    ids,
    response: z.object({ following: z.literal(false) }),
    async handler({ params, tx }) {
      await tx.query('select app.unfollow_user($1)', [params.userId]);
      return { following: false as const };
    },
  }),

  endpoint({
    method: 'get',
    path: '/users/{userId}/followers',
    tag,
    summary: "A user's followers, newest first",
    description: qSearchDescription,
    auth: 'bearer',
    ids,
    query: listQuery,
    response: pageSchema(followListItem),
    handler: ({ params, query, tx, services: { storage } }) => followList(tx, storage, params.userId as string, 'follower_id', query),
  }),

  endpoint({
    method: 'get',
    path: '/users/{userId}/following',
    tag,
    summary: 'The users a user follows, newest first',
    description: qSearchDescription,
    auth: 'bearer',
    ids,
    query: listQuery,
    response: pageSchema(followListItem),
    handler: ({ params, query, tx, services: { storage } }) => followList(tx, storage, params.userId as string, 'followee_id', query),
  }),
];
