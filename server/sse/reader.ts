// The reads behind live delivery (server/sse/hub.ts) and resume:
//   * a batch: app_private.live_notifications, one statement for every recipient with a stream
//     open in this process, visibility decided by the rule of app.notification_visible_to (the
//     function the list's policy applies) for each recipient now (db/sql/notifications.sql), on a
//     connection of its own (LiveReader) that knows which sessions have a stream open here;
//   * a replay (Last-Event-ID): app.notification_replay for the place and the bound, then the rows
//     through app.notification_rows in the request's own transaction, as the viewer, under the
//     list's policy.
// Both shape rows with shapeNotification, so a streamed row is exactly the row GET /notifications shows.
import pg from 'pg';
import { connectionBounds } from '../../db/connection-bounds.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { isUuid } from '../http/ids.ts';
import type { Position, SseEvent } from './streams.ts';
import type { Storage } from '../uploads/storage.ts';
import { shapeNotification, type NotificationRow } from '../shapes/notification.ts';

/** At most this many rows are replayed; then the `: replay truncated` comment says to read the list. */
export const replayLimit = 500;

export interface LiveBatch {
  /** Sessions that are no longer live: their streams close. */
  ended: string[];
  /** The events to send, oldest first, per session. */
  bySession: Map<string, SseEvent[]>;
}

type BatchRow = NotificationRow & { session_id: string; live: boolean; tx_id: string };

/** The open streams as the reader sees them: their sessions, and a number that changes with that set. */
export interface OpenSessions {
  readonly sessionsVersion: number;
  sessions(): string[];
}

const batchStatement = { name: 'live_notifications', text: 'select * from app_private.live_notifications($1::xid8, $2::xid8)' };
const badgeStatement = { name: 'live_badges', text: 'select * from app_private.live_badges($1::xid8, $2::xid8)' };

/**
 * The reader of live delivery: one connection of its own (a batch never waits for the API pool),
 * which keeps the sessions with a stream open in this process in a table of the connection
 * (app_private.live_sessions_sync, db/sql/auth.sql). Only the sessions added or removed since the
 * last batch are sent, so a batch sends two transaction ids, however many streams are open. Any
 * failure drops the connection; the next read opens another and sends the whole list again.
 */
export class LiveReader {
  readonly #connectionString: string;
  readonly #storage: Storage;
  #connecting: Promise<pg.Client> | undefined;
  /** The sessions the connection's table holds, as of sessionsVersion #syncedVersion. */
  #synced = new Set<string>();
  #syncedVersion = -1;

  constructor(connectionString: string, storage: Storage) {
    this.#connectionString = connectionString;
    this.#storage = storage;
  }

  /** The rows of the range [from, to) for the sessions open now. */
  async batch(from: bigint, to: bigint, open: OpenSessions): Promise<LiveBatch> {
    const rows = await this.#use(async (client) => {
      await this.#sync(client, open);
      return (await client.query<BatchRow>({ ...batchStatement, values: [from.toString(), to.toString()] })).rows;
    });
    return toBatch(this.#storage, rows);
  }

  /** Sends the connection's table the sessions opened and closed since the last read. */
  async #sync(client: pg.Client, open: OpenSessions): Promise<void> {
    if (open.sessionsVersion === this.#syncedVersion) return;
    const version = open.sessionsVersion;
    const sessions = new Set(open.sessions());
    const add = [...sessions].filter((id) => !this.#synced.has(id));
    const remove = [...this.#synced].filter((id) => !sessions.has(id));
    await client.query('select app_private.live_sessions_sync($1::uuid[], $2::uuid[])', [add, remove]);
    this.#synced = sessions;
    this.#syncedVersion = version;
  }

  /**
   * The badges of the users with a badge change (mark-read) in [from, to) and a stream open here, per
   * session: `event: badge` with { unreadCount, hubUnreadCount } (contract 12), no id.
   */
  async badges(from: bigint, to: bigint, open: OpenSessions): Promise<Map<string, SseEvent[]>> {
    const rows = await this.#use(async (client) => {
      await this.#sync(client, open);
      return (
        await client.query<{ session_id: string; unread: number; hub_unread: number }>({
          ...badgeStatement,
          values: [from.toString(), to.toString()],
        })
      ).rows;
    });
    return new Map(
      rows.map((row) => [row.session_id, [{ event: 'badge', data: { unreadCount: row.unread, hubUnreadCount: row.hub_unread } }]]),
    );
  }

  /** Sessions among `sessions` that are no longer live (after the listening connection was down). */
  async endedSessions(sessions: string[]): Promise<string[]> {
    const rows = await this.#use(
      async (client) =>
        (await client.query<{ id: string }>('select id from app_private.ended_sessions($1::uuid[]) as id', [sessions])).rows,
    );
    return rows.map((row) => row.id);
  }

  async end(): Promise<void> {
    const connecting = this.#connecting;
    this.#connecting = undefined;
    await connecting?.then((client) => client.end()).catch(() => undefined);
  }

  async #use<T>(read: (client: pg.Client) => Promise<T>): Promise<T> {
    const connecting = (this.#connecting ??= this.#connect());
    try {
      return await read(await connecting);
    } catch (error) {
      this.#drop(connecting);
      throw error;
    }
  }

  #connect(): Promise<pg.Client> {
    const client = new pg.Client({
      ...connectionBounds,
      connectionString: this.#connectionString,
      application_name: 'notification-reader',
    });
    const connecting = client.connect().then(() => client);
    client.on('error', () => this.#drop(connecting));
    client.on('end', () => this.#drop(connecting));
    return connecting;
  }

  /** Forgets the connection (and what its table held) unless another has replaced it already. */
  #drop(connecting: Promise<pg.Client> | undefined): void {
    if (connecting === undefined || this.#connecting !== connecting) return;
    this.#connecting = undefined;
    this.#synced = new Set();
    this.#syncedVersion = -1;
    void connecting.then((client) => client.end()).catch(() => undefined);
  }
}

async function toBatch(storage: Storage, rows: BatchRow[]): Promise<LiveBatch> {
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
  return {
    events: await Promise.all(kept.map((row) => toEvent(storage, row))),
    truncated: found.length > replayLimit,
    after: [BigInt(place), lastEventId.toLowerCase()],
  };
}

// shapeNotification builds the list's row (the `notification` schema) field by field.
async function toEvent(storage: Storage, row: NotificationRow): Promise<SseEvent> {
  return { id: row.notification_id, event: 'notification', data: await shapeNotification(storage, row) };
}
