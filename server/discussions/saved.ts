// GET /users/me/saved-discussions (spec 2.5; contract section 8): newest save first, each with the
// first messages as a preview. The saved-discussions policy leaves out hubs where the viewer is no
// longer an active member (the rows are kept and shown again on rejoining).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { discussionMessage, readPreviews } from './messages.ts';
import { text, textMax } from '../http/text.ts';
import { levels } from '../http/access-levels.ts';

/** Saved discussion preview: up to 3 earliest messages (spec part 8). */
const previewSize = 3;

const savedDiscussion = z.object({
  discussionId: z.string(),
  hubId: z.string(),
  hubName: text(textMax.hubName),
  postId: z.string(),
  savedAt: z.string(),
  preview: z.array(discussionMessage).max(previewSize),
});

interface SavedRow {
  discussion_id: string;
  hub_id: string;
  hub_name: string;
  post_id: string;
  saved_at: Date;
  saved_us: number;
}

/**
 * One page of the viewer's saved discussions: $1 and $2 the position after which it starts (null
 * for the first), $3 the rows to return. The saved rows in their index order (a subquery the
 * planner keeps apart: offset 0), each then joined to its discussion, post and hub through their
 * policies (a lateral subquery with a limit, which the planner runs per saved row): the page reads
 * about a page of saved rows. Joined freely, the planner started from the discussions of the
 * viewer's hubs (all 100,000 of a big hub) and probed the saved rows for each.
 */
export const savedDiscussionPageSql = `select s.discussion_id, s.hub_id, s.hub_name, s.post_id, s.saved_at, ${micros('s.saved_at')} as saved_us
  from app.saved_discussion_page(${fromMicros('$1')}, $2::uuid, $3) s`;

export const savedDiscussionEndpoints = [
  endpoint({
    method: 'get',
    path: '/users/me/saved-discussions',
    tag: 'Hub discussions',
    summary: 'Your saved hub discussions, newest save first',
    description:
      'Level 4. Discussions of hubs where you are not an active member now are left out (and shown again if you rejoin), as are ' +
      'discussions of posts you may no longer see. preview holds the first three top-level messages of the discussion, oldest ' +
      'first, with the same authors as GET .../messages.',
    auth: 'bearer',
    level: levels.hubReady,
    query: pageQuery(50, ['timestamp', 'id']),
    response: pageSchema(savedDiscussion),
    async handler({ query, tx, services: { storage } }) {
      const [afterUs, afterId] = query.cursor ?? [null, null];
      const { rows } = await tx.query<SavedRow>(savedDiscussionPageSql, [afterUs, afterId, query.limit + 1]);
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.saved_us, row.discussion_id],
        (row) => row,
      );
      const previews = await readPreviews(
        tx,
        storage,
        page.items.map((row) => row.discussion_id),
        previewSize,
      );
      return {
        items: page.items.map((row) => ({
          discussionId: row.discussion_id,
          hubId: row.hub_id,
          hubName: row.hub_name,
          postId: row.post_id,
          savedAt: row.saved_at.toISOString(),
          preview: previews.get(row.discussion_id) ?? [],
        })),
        nextCursor: page.nextCursor,
      };
    },
  }),
];
