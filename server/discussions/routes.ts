// Hub discussions (spec 2.5, part 6; contract section 8): the discussions of a hub, their messages
// in one-level threads, and saving them. Active members of the hub only; the discussion check
// (app.hub_discussion_thread) and the row policies live in db/sql/discussions.sql.
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { endpoint } from '../http/endpoint.ts';
import { uuidOrNil } from '../http/ids.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { hubRoles, requireHubRole } from '../hubs/shape.ts';
import { postCard, readCards } from '../posts/card.ts';
import { discussionMessage, messageAuthor, messageColumns, shapeMessage, type MessageRow } from './messages.ts';
import { savedDiscussionEndpoints } from './saved.ts';
import { maintainedCount } from '../http/counts.ts';
import { trimmedText } from '../http/validation.ts';
import { textMax } from '../http/text.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Hub discussions';
const ids = { hubId: 'HUB_NOT_FOUND' } as const;
const membership =
  'For active members of the hub at level 4: HUB_READINESS_REQUIRED below it, HUB_MEMBERSHIP_REQUIRED for outsiders, invited ' +
  'and pending users.';
const access = `${membership} DISCUSSION_NOT_FOUND for an unknown discussion, one of another hub, or one whose post you may not see.`;

const discussionItem = z.object({
  id: z.string(),
  hubId: z.string(),
  postId: z.string(),
  post: postCard,
  messageCount: maintainedCount('messages of the discussion, replies included'),
  lastActivityAt: z.string(),
  viewerSaved: z.boolean(),
});

interface DiscussionRow {
  id: string;
  post_id: string;
  message_count: number;
  last_activity_at: Date;
  activity_us: number;
  saved: boolean;
}

/** Checks the hub and discussion in contract order and returns the thread root of `messageId`. */
async function discussionThread(tx: RequestTransaction, hubId: string, discussionId: string, messageId: string | null) {
  const { rows } = await tx.query<{ root: string | null }>('select app.hub_discussion_thread($1, $2, $3) as root', [
    hubId,
    uuidOrNil(discussionId),
    messageId === null ? null : uuidOrNil(messageId),
  ]);
  return rows[0]?.root ?? null;
}

async function readMessage(tx: RequestTransaction, id: string) {
  const { rows } = await tx.query<MessageRow>(
    `select ${messageColumns} from app.hub_discussion_messages m ${messageAuthor} where m.id = $1`,
    [id],
  );
  return rows[0] as MessageRow;
}

/**
 * One page of a discussion's top-level messages ($1 the discussion), or of a thread's replies ($1
 * the root message), oldest first, from the cursor ($2 µs, $3 id), $4 rows. The messages come from
 * app.message_page (db/sql/discussions.sql), which reads them through the messages policy from a
 * cursor that walks the discussion's or thread's index range in order, so a page reads about a page
 * whatever the statistics say it holds (docs/performance.md, "Hot values"). Each author of the page
 * is shown once (app.hub_discussion_author), however many of its messages the page holds.
 */
export function messagePageSql(replies: boolean): string {
  const [discussion, parent] = replies ? ['null', '$1::uuid'] : ['$1::uuid', 'null'];
  return `with page as materialized (
           select * from app.message_page(${discussion}, ${parent}, ${fromMicros('$2')}, $3::uuid, $4::int)
         ),
         authors as materialized (
           select p.hub_id, p.author_id, a.author
           from (select distinct hub_id, author_id from page) p
           cross join lateral app.hub_discussion_author(p.hub_id, p.author_id) a
         )
         select m.message_id as id, m.discussion_id, m.parent_id, m.body as text, m.reply_count, m.created_at,
                ${micros('m.created_at')} as created_us, a.author
         from page m
         join authors a on a.hub_id = m.hub_id and a.author_id is not distinct from m.author_id
         order by m.created_at, m.message_id`;
}

export const endpoints = [
  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/discussions',
    tag,
    summary: 'Discussions of a hub, most recent activity first',
    description:
      `${membership} One discussion per post targeted or shared into the hub, opened with that placement. The post card shows vote ` +
      "results in this hub's scope. messageCount counts every message, replies included; lastActivityAt is the latest message " +
      '(or placement). A discussion whose activity changes while you page moves to the top: read the first page again to see it. ' +
      'Discussions of posts you may not see (deleted, blocked author) are left out.',
    auth: 'bearer',
    level: levels.hubReady,
    ids,
    query: pageQuery(50, ['timestamp', 'id']),
    response: pageSchema(discussionItem),
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    async handler({ params, query, tx, services: { storage, ballots } }) {
      const hubId = params.hubId as string;
      await requireHubRole(tx, hubId, hubRoles);
      const [afterUs, afterId] = query.cursor ?? [null, null];
      const { rows } = await tx.query<DiscussionRow>(
        `select d.id, d.post_id, d.message_count, d.last_activity_at, ${micros('d.last_activity_at')} as activity_us, d.saved
         from app.hub_discussion_page($1, ${fromMicros('$2')}, $3::uuid, $4) d`,
        [hubId, afterUs, afterId, query.limit + 1],
      );
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.activity_us, row.id],
        (row) => row,
      );
      const cards = new Map(
        (
          await readCards(
            tx,
            { storage, ballots },
            page.items.map((row) => row.post_id),
            hubId,
          )
        ).map((card) => [card.id, card]),
      );
      return {
        items: page.items.flatMap((row) => {
          const post = cards.get(row.post_id);
          return post
            ? [
                {
                  id: row.id,
                  hubId,
                  postId: row.post_id,
                  post,
                  messageCount: row.message_count,
                  lastActivityAt: row.last_activity_at.toISOString(),
                  viewerSaved: row.saved,
                },
              ]
            : [];
        }),
        nextCursor: page.nextCursor,
      };
    },
  }),

  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/discussions/{discussionId}/messages',
    tag,
    summary: 'Messages of a discussion, oldest first: thread roots, or the replies of parentMessageId',
    description:
      `${access} Without parentMessageId: the top-level messages; with it: the replies of that message's thread (a reply's id ` +
      'lists the thread it belongs to). MESSAGE_NOT_FOUND for a message of another discussion or an unknown one. Messages of ' +
      'users blocked with you either way are left out. author.phoneNumber is set only for active members of this hub.',
    auth: 'bearer',
    level: levels.hubReady,
    ids,
    query: pageQuery(100, ['timestamp', 'id']).extend({ parentMessageId: z.string().max(64).optional() }),
    response: pageSchema(discussionMessage),
    errors: ['HUB_MEMBERSHIP_REQUIRED', 'DISCUSSION_NOT_FOUND', 'MESSAGE_NOT_FOUND'],
    async handler({ params, query, tx, services: { storage } }) {
      const discussionId = params.discussionId as string;
      const root = await discussionThread(tx, params.hubId as string, discussionId, query.parentMessageId ?? null);
      const [afterUs, afterId] = query.cursor ?? [null, null];
      const { rows } = await tx.query<MessageRow>(messagePageSql(root !== null), [root ?? discussionId, afterUs, afterId, query.limit + 1]);
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.created_us, row.id],
        (row) => row,
      );
      return { items: await Promise.all(page.items.map((row) => shapeMessage(storage, row))), nextCursor: page.nextCursor };
    },
  }),

  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/discussions/{discussionId}/messages',
    tag,
    summary: 'Post a message, or reply in a thread',
    description:
      `${access} A reply to a reply attaches to the thread root (threads are one level deep); MESSAGE_NOT_FOUND for a ` +
      'parentMessageId of another discussion or an unknown one. The message moves the discussion and the hub to the top of ' +
      'their lists (lastActivityAt of GET /users/me/hubs) and creates no notification and no stream event.',
    auth: 'bearer',
    limit: 'discussion_messages',
    level: levels.hubReady,
    status: 201,
    ids,
    body: z.strictObject({ text: trimmedText(1, textMax.discussionMessage), parentMessageId: z.string().max(64).optional() }),
    response: discussionMessage,
    errors: ['HUB_MEMBERSHIP_REQUIRED', 'DISCUSSION_NOT_FOUND', 'MESSAGE_NOT_FOUND'],
    async handler({ body, params, tx, services: { storage } }) {
      const parent = body.parentMessageId === undefined ? null : uuidOrNil(body.parentMessageId);
      const { rows } = await tx.query<{ id: string }>('select app.post_hub_discussion_message($1, $2, $3, $4) as id', [
        params.hubId,
        uuidOrNil(params.discussionId as string),
        body.text,
        parent,
      ]);
      return shapeMessage(storage, await readMessage(tx, rows[0]?.id as string));
    },
  }),

  endpoint({
    method: 'post',
    path: '/hubs/{hubId}/discussions/{discussionId}/save',
    tag,
    summary: 'Save a discussion (idempotent)',
    description: `${access} Saved discussions are listed by GET /users/me/saved-discussions, apart from saved posts.`,
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.hubReady,
    ids,
    response: z.object({ saved: z.literal(true) }),
    errors: ['HUB_MEMBERSHIP_REQUIRED', 'DISCUSSION_NOT_FOUND'],
    async handler({ params, tx }) {
      await tx.query('select app.save_hub_discussion($1, $2, true)', [params.hubId, uuidOrNil(params.discussionId as string)]);
      return { saved: true as const };
    },
  }),

  endpoint({
    method: 'delete',
    path: '/hubs/{hubId}/discussions/{discussionId}/save',
    tag,
    summary: 'Unsave a discussion (a no-op when not saved)',
    description: access,
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.hubReady,
    ids,
    response: z.object({ saved: z.literal(false) }),
    errors: ['HUB_MEMBERSHIP_REQUIRED', 'DISCUSSION_NOT_FOUND'],
    async handler({ params, tx }) {
      await tx.query('select app.save_hub_discussion($1, $2, false)', [params.hubId, uuidOrNil(params.discussionId as string)]);
      return { saved: false as const };
    },
  }),
  ...savedDiscussionEndpoints,
];
