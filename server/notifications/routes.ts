// /notifications: the list, the unread count, mark-read, and the live stream (spec 2.7, 4.7, 6.3;
// contract section 9). Which rows a user sees is the policy of db/sql/notifications.sql (through
// app.notification_visible_to), and rows are read through app.notification_rows as the
// viewer, like the live stream does; no handler here filters visibility itself.
import { z } from 'zod';
import { maintainedCount } from '../http/counts.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/ids.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { queryBoolean } from '../http/validation.ts';
import { readReplay } from '../sse/reader.ts';
import { notification, shapeNotification, type NotificationRow } from '../shapes/notification.ts';

const tag = 'Notifications';

/**
 * GET /notifications: the page's ids from app.notification_page (db/sql/notifications.sql: one
 * index range per scope the viewer may see), the rows from app.notification_rows as the viewer,
 * under the policy. Parameters: the cursor's time (microseconds) and id, unread only, the page
 * size plus one. The plan tests run it as it is (test/sql/database/read-plans-hot.test.ts).
 */
export const notificationListSql = `select r.*, ${micros('r.created_at')} as created_us
  from app.notification_rows(array(
    select p.id from app.notification_page(${fromMicros('$1')}, $2::uuid, $3, $4) p)) r
  order by r.created_at desc, r.notification_id desc`;

const listQuery = pageQuery(50, ['timestamp', 'id']).extend({ unreadOnly: queryBoolean.default(false) });

const markReadBody = z
  .strictObject({
    notificationIds: z.array(z.string().max(100)).min(1).max(100).optional(),
    markAll: z.boolean().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.markAll === true && body.notificationIds) {
      ctx.addIssue({ code: 'custom', path: ['markAll'], message: 'Send notificationIds or markAll, not both' });
    } else if (body.markAll !== true && !body.notificationIds) {
      ctx.addIssue({ code: 'custom', path: ['notificationIds'], message: 'Required unless markAll is true' });
    }
  })
  // The same rule in JSON Schema (the OpenAPI document): notificationIds, or markAll true, not both.
  .meta({
    oneOf: [
      { required: ['notificationIds'], not: { required: ['markAll'], properties: { markAll: { const: true } } } },
      {
        required: ['markAll'],
        properties: { markAll: { const: true } },
        not: { required: ['notificationIds'], properties: { notificationIds: {} } },
      },
    ],
  });

const unreadCounts = z.object({
  unreadCount: maintainedCount('the app-icon badge, unread notifications the viewer may see now'),
  hubUnreadCount: maintainedCount('the hub footer badge, those of them that belong to a hub'),
  hubs: z
    .array(z.object({ hubId: z.string(), unreadCount: maintainedCount('unread notifications of this hub') }))
    .describe('Per hub the viewer is an active member of, its unread rows; only hubs with unread rows, in no particular order.'),
});

/** The viewer's badges, from the counters of db/sql/notifications.sql read through the visibility rules (app.unread_counts). */
async function readUnreadCounts(tx: RequestTransaction): Promise<z.input<typeof unreadCounts>> {
  const { rows } = await tx.query<{ hub_id: string | null; unread: number }>('select hub_id, unread from app.unread_counts()');
  const hubs = rows.filter((row) => row.hub_id !== null).map((row) => ({ hubId: row.hub_id as string, unreadCount: row.unread }));
  const hubUnreadCount = hubs.reduce((sum, hub) => sum + hub.unreadCount, 0);
  const global = rows.find((row) => row.hub_id === null)?.unread ?? 0;
  return { unreadCount: global + hubUnreadCount, hubUnreadCount, hubs };
}

export const endpoints = [
  endpoint({
    method: 'get',
    path: '/notifications',
    tag,
    summary: "The viewer's notifications, newest first",
    description:
      'Only rows visible now: a row with a hub_id needs a Hub-ready viewer who is an active member of that hub; hidden ' +
      'rows are kept and reappear when the viewer (re)joins. unreadOnly=true lists unread rows only. unreadCount counts ' +
      'the visible unread rows, whatever the page. Pages are keyset (createdAt, id): rows added meanwhile never shift them. ' +
      'actor is null when there is none or the viewer may not see that user (a block either way).',
    auth: 'bearer',
    query: listQuery,
    response: pageSchema(notification).extend({
      unreadCount: maintainedCount('unread notifications the viewer may see now (the app-icon badge)'),
    }),
    async handler({ query, tx, services: { storage } }) {
      const [beforeUs, beforeId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const { rows } = await tx.query<NotificationRow & { created_us: number }>(notificationListSql, [
        beforeUs,
        beforeId,
        query.unreadOnly,
        query.limit + 1,
      ]);
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.created_us, row.notification_id],
        (row) => row,
      );
      const counts = await readUnreadCounts(tx);
      return {
        items: await Promise.all(page.items.map((row) => shapeNotification(storage, row))),
        nextCursor: page.nextCursor,
        unreadCount: counts.unreadCount,
      };
    },
  }),

  endpoint({
    method: 'get',
    path: '/notifications/unread-count',
    tag,
    summary: 'Badge counts: unread notifications the viewer may see, in all and per hub',
    description:
      'unreadCount is the app-icon badge (every unread row the viewer may see now), hubUnreadCount the hub footer badge ' +
      '(those with a hub_id), hubs the count per hub (only hubs with unread rows). Hidden rows are never counted: a hub ' +
      'row needs a Hub-ready viewer who is an active member of that hub now, so leaving a hub drops its rows at once and ' +
      'rejoining brings them back. GET /notifications answers the same unreadCount. Read from counters kept in the ' +
      "transactions that write and mark the rows: the cost follows the number of the viewer's hubs, not of unread rows.",
    auth: 'bearer',
    response: unreadCounts,
    async handler({ tx }) {
      return readUnreadCounts(tx);
    },
  }),

  endpoint({
    method: 'patch',
    path: '/notifications/read',
    tag,
    summary: 'Mark notifications read',
    description:
      'Send either notificationIds (1-100 ids) or markAll: true (not both; markAll: false alone is 422). updated is the ' +
      "number of rows that went from unread to read. Any id that is unknown or not the viewer's (including a string " +
      'that is not an id) answers 404 NOTIFICATION_NOT_FOUND and changes nothing. A row of the viewer that is hidden ' +
      'now (a hub row while not an active member) is not updated and stays unread; an already read row is not counted ' +
      'again. markAll marks only the rows visible now. GET /notifications/unread-count answers the new count.',
    auth: 'bearer',
    limit: 'other_writes',
    body: markReadBody,
    response: z.object({ updated: z.number().int() }),
    errors: ['NOTIFICATION_NOT_FOUND'],
    async handler({ body, tx }) {
      const ids = body.notificationIds ?? [];
      if (!ids.every(isUuid)) throw new ApiError('NOTIFICATION_NOT_FOUND');
      const { rows } = await tx.query<{ updated: number }>('select app.mark_notifications_read($1::uuid[], $2) as updated', [
        ids,
        body.markAll === true,
      ]);
      return { updated: rows[0]?.updated ?? 0 };
    },
  }),

  endpoint({
    method: 'get',
    path: '/notifications/stream',
    tag,
    summary: 'Live notifications (server-sent events)',
    description:
      'Send Accept: text/event-stream (an Accept header that does not allow it answers 426 SSE_NOT_SUPPORTED, after the ' +
      'token check). Response headers: Content-Type: text/event-stream, Cache-Control: no-store, X-Accel-Buffering: no. ' +
      'Each event is `id: <notification id>`, `event: notification`, `data: <the row exactly as GET /notifications ' +
      'lists it, as JSON>`. A `: ping` comment line is sent every 25 s. The server closes the stream after 3600 s; ' +
      'reconnect at once, sending Last-Event-ID. The answer (200 and these headers) comes once the stream is set up and ' +
      'its session checked again: a session ended meanwhile answers 401. Logging out (or any revocation of the session) ' +
      'closes its streams. A ' +
      'session keeps at most 5 streams open: opening a sixth closes its oldest after a `: closed: more than 5 streams ' +
      'open for this session` comment. Events carry the rows written from about the moment the stream opens, usually ' +
      'within 100 ms of their commit, each only if the viewer may see it at that moment (hub membership is checked ' +
      'then, never cached), in the order of their writing transactions. Resume: with a Last-Event-ID header naming a ' +
      'notification of the viewer, the stream first sends, oldest first, every row after that one that the viewer may ' +
      'see now (at most 500), then live rows, with no row twice. When more than 500 rows followed it, or the id names ' +
      'no notification of the viewer, a `: replay truncated` comment follows the replayed rows: read GET ' +
      '/notifications. No committed row is lost while the stream is open: when the server cannot read a batch of rows, ' +
      'it retries, and if it still cannot, it closes the stream so the client resumes. Without Last-Event-ID, read GET ' +
      '/notifications after connecting for earlier rows (a row written just before the stream opened can then arrive ' +
      'both ways, with the same id).',
    auth: 'bearer',
    stream: { contentType: 'text/event-stream' },
    // The data of each event; the response itself is the stream.
    response: notification,
    errors: ['SSE_NOT_SUPPORTED', 'SERVICE_UNAVAILABLE'],
    async handler({ req, res, viewer, tx, services: { notificationHub, storage, log } }) {
      if (!req.accepts('text/event-stream')) throw new ApiError('SSE_NOT_SUPPORTED');
      const owner = { userId: viewer.userId as string, sessionId: viewer.sessionId as string };
      const lastEventId = req.get('last-event-id');
      const resume = lastEventId !== undefined;
      const { stream, replayBefore } = notificationHub.open(res, owner, resume);
      // The session was checked when this request began. Checked again now that the stream is
      // registered (its rows held from here), so that a logout committed in between, whose
      // announcement may have come before the registration, is not missed. Only then does the
      // stream answer 200: a client's 200 is a stream set up for a live session.
      let live: boolean;
      try {
        const { rows } = await tx.query<{ live: boolean }>('select app.session_access_level($1, $2) is not null as live', [
          owner.sessionId,
          owner.userId,
        ]);
        live = rows[0]?.live === true;
      } catch (error) {
        stream.close();
        throw error;
      }
      if (!live) {
        stream.close();
        throw new ApiError('UNAUTHORIZED');
      }
      // Closed before it began: the client left (nothing to answer), or the hub closed it meanwhile
      // (a batch that could not be read, a sixth stream of the session): the client opens again.
      if (stream.closed) {
        if (res.destroyed) return undefined;
        throw new ApiError('SERVICE_UNAVAILABLE', {}, { 'Retry-After': '1' });
      }
      stream.begin(resume);
      if (resume && replayBefore !== undefined) {
        try {
          const replay = await readReplay(tx, storage, lastEventId, replayBefore);
          stream.release(replay.events, replay.truncated ? 'replay truncated' : undefined, replay.after);
        } catch (error) {
          // The response is a stream already: close it, and the client resumes.
          log.warn({ err: error }, 'notification stream replay failed');
          stream.close();
        }
      }
      return undefined;
    },
  }),
];
