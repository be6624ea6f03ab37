// The reads behind live delivery (server/sse/hub.ts), on the hub's own connection:
//   1. app_private.notification_batch: for the sessions with a stream open in this process, which
//      of them have rows in an announced range that app.notification_visible_to allows now, and
//      whether each session is still live (one call per batch; migrations/0020);
//   2. those rows through app.notification_rows, the list's own read, as each recipient (a
//      transaction opened like a request's, db/viewer.ts), all recipients in one round trip, so a
//      streamed row is exactly the row GET /notifications shows, policies included.
import type pg from 'pg';
import { beginAs, sqlLiteral, userViewer } from '../../db/viewer.ts';
import type { Storage } from '../uploads/storage.ts';
import { notification, shapeNotification, type Notification, type NotificationRow } from './shape.ts';

export interface LiveBatch {
  /** Sessions that are no longer live: their streams close. */
  ended: string[];
  /** The rows to send, oldest first, per session. */
  bySession: Map<string, Notification[]>;
}

interface BatchRow {
  session_id: string;
  user_id: string;
  live: boolean;
  notification_ids: string[];
}

export async function readLiveBatch(client: pg.ClientBase, storage: Storage, from: bigint, to: bigint, sessions: string[]): Promise<LiveBatch> {
  const { rows } = await client.query<BatchRow>(
    'select session_id, user_id, live, notification_ids from app_private.notification_batch($1::xid8, $2::xid8, $3::uuid[])',
    [from.toString(), to.toString(), sessions],
  );
  const live = rows.filter((row) => row.live);
  const byUser = await readAsRecipients(client, storage, live);
  const bySession = new Map<string, Notification[]>();
  for (const row of live) bySession.set(row.session_id, byUser.get(row.user_id) ?? []);
  return { ended: rows.filter((row) => !row.live).map((row) => row.session_id), bySession };
}

/** Sessions among `sessions` that are no longer live (after the listening connection was down). */
export async function readEndedSessions(client: pg.ClientBase, sessions: string[]): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>('select id from app_private.ended_sessions($1::uuid[]) as id', [sessions]);
  return rows.map((row) => row.id);
}

async function readAsRecipients(client: pg.ClientBase, storage: Storage, rows: BatchRow[]): Promise<Map<string, Notification[]>> {
  const readers = new Map<string, BatchRow>();
  for (const row of rows) readers.set(row.user_id, row);
  if (readers.size === 0) return new Map();
  // Per recipient, a transaction like a request's (beginAs), the read, commit. Values are ids this
  // connection just read from the database.
  const text = [...readers.values()]
    .map(
      (reader) =>
        `${beginAs(userViewer(reader.user_id, reader.session_id))} ` +
        `select * from app.notification_rows(${sqlLiteral(`{${reader.notification_ids.join(',')}}`)}) order by created_at, notification_id; commit;`,
    )
    .join('\n');
  let results: pg.QueryResult<NotificationRow>[];
  try {
    results = (await client.query(text)) as unknown as pg.QueryResult<NotificationRow>[];
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
  // One result per statement; the reads, in reader order, are those with notification rows' columns.
  const reads = results.filter((result) => result.fields.some((field) => field.name === 'notification_id'));
  const byUser = new Map<string, Notification[]>();
  for (const [index, userId] of [...readers.keys()].entries()) {
    const read = reads[index]?.rows ?? [];
    byUser.set(userId, await Promise.all(read.map(async (row) => notification.parse(await shapeNotification(storage, row)))));
  }
  return byUser;
}
