// Blocks (spec 4.4; contract 5): block and unblock. No notification either way.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';

const tag = 'Blocks';
const ids = { userId: 'USER_NOT_FOUND' } as const;

export const blockEndpoints = [
  endpoint({
    method: 'post',
    path: '/users/{userId}/block',
    tag,
    summary: 'Block a user',
    description:
      'Removes follows both ways, creates no notification, and from then on hides each user from the other ' +
      '(profiles, lists, search, posts and comments) and refuses follows, votes and comments between them with 404.',
    auth: 'bearer',
    limit: 'blocks',
    ids,
    response: z.object({ blocked: z.literal(true) }),
    errors: ['ALREADY_BLOCKED', 'CANNOT_BLOCK_SELF'],
    async handler({ params, tx }) {
      await tx.query('select app.block_user($1)', [params.userId]);
      return { blocked: true as const };
    },
  }),

  endpoint({
    method: 'delete',
    path: '/users/{userId}/block',
    tag,
    summary: 'Unblock a user (a no-op when not blocked)',
    auth: 'bearer',
    limit: 'other_writes',
    ids,
    response: z.object({ blocked: z.literal(false) }),
    async handler({ params, tx }) {
      await tx.query('select app.unblock_user($1)', [params.userId]);
      return { blocked: false as const };
    },
  }),
];
