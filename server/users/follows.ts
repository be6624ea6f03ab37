// Follows: follow, unfollow, and the follower/following lists of a user (spec 4.4; contract 5).
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { pageQuery, pageSchema, toPage } from '../http/paging.ts';
import type { Storage } from '../uploads/storage.ts';
import { followListItem, searchQuery, shapeFollowListItem, type UserListRow } from './list-item.ts';

const tag = 'Follows';
const ids = { userId: 'USER_NOT_FOUND' } as const;

const listQuery = pageQuery(100, ['bigint']).extend({ q: searchQuery.optional() });

/**
 * One page of a follow list: `side` is the column naming the listed users. Rows come through the
 * policies of users and follows (blocked pairs and users without a public profile never appear).
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
  const anchor = side === 'follower_id' ? 'followee_id' : 'follower_id';
  const { rows } = await tx.query<UserListRow & { seq: number }>(
    `select u.id, u.username, u.full_name, u.bio, a.object_key as photo_key, f.seq, app.viewer_follows(u.id) as viewer_follows
     from app.follows f
     join app.users u on u.id = f.${side}
     left join app.assets a on a.id = u.profile_asset_id
     where f.${anchor} = $1
       and ($2::bigint is null or f.seq < $2)
       and ($3::text is null or app.user_matches(u.username, u.full_name, app.search_text($3)))
     order by f.seq desc
     limit $4`,
    [userId, query.cursor?.[0] ?? null, query.q || null, query.limit + 1],
  );
  const page = toPage(rows, query.limit, (row) => [row.seq], (row) => row);
  return { items: await Promise.all(page.items.map((row) => shapeFollowListItem(storage, row))), nextCursor: page.nextCursor };
}

export const followEndpoints = [
  endpoint({
    method: 'post',
    path: '/users/{userId}/follow',
    tag,
    summary: 'Follow a user',
    description: 'Needs profile basics (no phone). A user blocked either way answers like an unknown user (404). Notifies the followed user.',
    auth: 'bearer',
    limit: 'follows',
    level: 2,
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
    level: 2,
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
    description: 'q searches this list (handle prefix or name words, case- and accent-insensitive). viewerFollows is false for the viewer\'s own row.',
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
    description: 'q searches this list (handle prefix or name words, case- and accent-insensitive). viewerFollows is false for the viewer\'s own row.',
    auth: 'bearer',
    ids,
    query: listQuery,
    response: pageSchema(followListItem),
    handler: ({ params, query, tx, services: { storage } }) => followList(tx, storage, params.userId as string, 'followee_id', query),
  }),
];
