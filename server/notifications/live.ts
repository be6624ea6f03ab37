// The reads behind live delivery (server/sse/hub.ts) and resume:
//   * a batch: app_private.live_notifications, one statement for every recipient with a stream
//     open in this process, visibility decided by app.notification_visible_to (the function the
//     list's policy applies) for each recipient now (migrations/0100);
//   * a replay (Last-Event-ID): app.notification_replay for the place and the bound, then the rows
//     through app.notification_rows in the request's own transaction, as the viewer, under the
//     list's policy.
// Both shape rows with shapeNotification, so a streamed row is exactly the row GET /notifications shows.
import type pg from 'pg';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { isUuid } from '../http/ids.ts';
import type { Position, SseEvent } from '../sse/streams.ts';
import type { Storage } from '../uploads/storage.ts';
import { shapeNotification, type NotificationRow } from './shape.ts';

/** At most this many rows are replayed; then the `: replay truncated` comment says to read the list. */
export const replayLimit = 500;

export interface LiveBatch {
  /** Sessions that are no longer live: their streams close. */
  ended: string[];
  /** The events to send, oldest first, per session. */
  bySession: Map<string, SseEvent[]>;
}

type BatchRow = NotificationRow & { session_id: string; live: boolean; tx_id: string };

export async function readLiveBatch(db: pg.Pool, storage: Storage, from: bigint, to: bigint, sessions: string[]): Promise<LiveBatch> {
  const { rows } = await db.query<BatchRow>('select * from app_private.live_notifications($1::xid8, $2::xid8, $3::uuid[])', [
    from.toString(),
    to.toString(),
    sessions,
  ]);
  const ended = new Set<string>();
  const bySession = new Map<string, SseEvent[]>();
  for (const row of rows) {
    if (!row.live) {
      ended.add(row.session_id);
      continue;
    }
    const events = bySession.get(row.session_id) ?? [];
    events.push({ ...(await toEvent(storage, row)), position: [BigInt(row.tx_id), row.notification_id] });
    bySession.set(row.session_id, events);
  }
  return { ended: [...ended], bySession };
}

/** Sessions among `sessions` that are no longer live (after the listening connection was down). */
export async function readEndedSessions(db: pg.Pool, sessions: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>('select id from app_private.ended_sessions($1::uuid[]) as id', [sessions]);
  return rows.map((row) => row.id);
}

export interface Replay {
  events: SseEvent[];
  /** More rows than replayLimit, or a Last-Event-ID that names no row of the viewer: read the list. */
  truncated: boolean;
  /** Where the Last-Event-ID row stands: live rows at or before it are not sent again. */
  after: Position | undefined;
}

/** The viewer's rows after `lastEventId`, written below `before` (the stream's first live range). */
export async function readReplay(tx: RequestTransaction, storage: Storage, lastEventId: string, before: bigint): Promise<Replay> {
  if (!isUuid(lastEventId)) return { events: [], truncated: true, after: undefined };
  const { rows } = await tx.query<Partial<NotificationRow> & { place: string | null }>(
    `select place.place::text, r.*
     from app.notification_replay($1::uuid, $2::xid8, $3) place
     left join lateral (
       select nr.*, o.position from unnest(place.ids) with ordinality as o(id, position)
       join app.notification_rows(place.ids) nr on nr.notification_id = o.id) r on true
     order by r.position`,
    [lastEventId, before.toString(), replayLimit + 1],
  );
  const place = rows[0]?.place;
  if (place == null) return { events: [], truncated: true, after: undefined };
  const found = rows.filter((row): row is NotificationRow & { place: string } => row.notification_id != null);
  const kept = found.slice(0, replayLimit);
  return { events: await Promise.all(kept.map((row) => toEvent(storage, row))), truncated: found.length > replayLimit, after: [BigInt(place), lastEventId.toLowerCase()] };
}

// shapeNotification builds the list's row (the `notification` schema) field by field.
async function toEvent(storage: Storage, row: NotificationRow): Promise<SseEvent> {
  return { id: row.notification_id, event: 'notification', data: await shapeNotification(storage, row) };
}
