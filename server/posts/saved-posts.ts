// GET /users/me/saved-posts: the bookmark tab, newest save first (contract section 5).
import { endpoint } from '../http/endpoint.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { postCard, readCards } from './card.ts';
import { levels } from '../http/access-levels.ts';

export const savedPostEndpoints = [
  endpoint({
    method: 'get',
    path: '/users/me/saved-posts',
    tag: 'Posts',
    summary: 'Your bookmarked posts, newest save first',
    description: 'Posts you can no longer see (deleted, blocked author, left hub) are left out.',
    auth: 'bearer',
    level: levels.profile,
    query: pageQuery(50, ['timestamp', 'id']),
    response: pageSchema(postCard),
    async handler({ query, tx, services: { storage, ballots } }) {
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const { rows } = await tx.query<{ post_id: string; saved_us: number }>(
        `select s.post_id, ${micros('s.saved_at')} as saved_us
         from app.saved_posts s join app.posts p on p.id = s.post_id
         where s.user_id = app.viewer_id()
           and ($1::bigint is null or (s.saved_at, s.post_id) < (${fromMicros('$1')}, $2::uuid))
         order by s.saved_at desc, s.post_id desc
         limit $3`,
        [afterUs, afterId, query.limit + 1],
      );
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.saved_us, row.post_id],
        (row) => row.post_id,
      );
      return { items: await readCards(tx, { storage, ballots }, page.items), nextCursor: page.nextCursor };
    },
  }),
];
