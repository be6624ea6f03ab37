// The LISTEN hub of one API process (design.md "what is live"; issue 3). It holds ONE dedicated
// connection (a pg.Client outside the pools, logged in as `authenticator`, reconnecting with
// backoff) that:
//   * LISTENs on 'notifications', where the dispatcher announces ranges of writing transactions
//     ({"from","to"} transaction ids, never content), and on 'session_revoked' (a session id);
//   * runs the dispatcher when this process holds the leadership lock (dispatcher.ts);
//   * for each announced range, reads the rows of the users with a stream open here and writes
//     them as `notification` events (server/notifications/live.ts re-checks visibility and the
//     session in the database at that moment: nothing is cached).
// Ranges are read in order from the process's own watermark, so ranges announced while the
// connection was down are read with the next one, and none twice. Rows written before the hub
// first connected are never pushed: the client reads them from GET /notifications.
import pg from 'pg';
import type { Response } from 'express';
import type { Config } from '../../config.ts';
import type { Log } from '../../logger.ts';
import { ApiError } from '../http/errors.ts';
import { readEndedSessions, readLiveBatch, type LiveBatch } from '../notifications/live.ts';
import type { Storage } from '../uploads/storage.ts';
import { Dispatcher } from './dispatcher.ts';
import { SseStreams, type SseStream, type StreamOwner } from './streams.ts';

const reconnectMs = { first: 200, max: 10_000 };

export class NotificationHub {
  #streams: SseStreams;
  #log: Log;
  #storage: Storage;
  #dispatcher: Dispatcher;
  #connectionString: string | undefined;
  #client: pg.Client | undefined;
  #connected = false;
  #stopped = false;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #backoffMs = reconnectMs.first;
  /** Every range below this has been read for this process's streams. */
  #readTo: bigint | undefined;
  /** The highest bound announced so far. */
  #announcedTo: bigint | undefined;
  #draining = false;

  constructor(sse: Config['sse'], log: Log, storage: Storage) {
    this.#streams = new SseStreams(sse);
    this.#log = log.child({ component: 'notification-hub' });
    this.#storage = storage;
    this.#dispatcher = new Dispatcher(this.#log);
  }

  /** Connects (retrying in the background when the first attempt fails). */
  async start(connectionString: string): Promise<void> {
    this.#connectionString = connectionString;
    await this.#connect();
  }

  /** Closes every stream, stops the dispatcher and ends the connection (its leadership lock with it). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    this.#streams.closeAll();
    this.#dispatcher.detach();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** For metrics (server/metrics.ts). */
  get openStreams(): number {
    return this.#streams.count;
  }

  get dispatcherLagSeconds(): number | undefined {
    return this.#dispatcher.lagSeconds;
  }

  /** Answers the request with a notification stream for the session (503 when the hub is not running). */
  open(res: Response, owner: StreamOwner): SseStream {
    if (this.#connectionString === undefined || this.#stopped) throw new ApiError('SERVICE_UNAVAILABLE', {}, { 'Retry-After': '5' });
    return this.#streams.open(res, owner);
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#connectionString, application_name: 'notification-hub' });
    this.#client = client;
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client));
    client.on('notification', (message) => this.#onNotification(message));
    const firstConnection = this.#readTo === undefined;
    try {
      await client.connect();
      await client.query('listen notifications; listen session_revoked');
      if (firstConnection) {
        const { rows } = await client.query<{ xmin: string }>('select pg_snapshot_xmin(pg_current_snapshot())::text as xmin');
        this.#readTo = BigInt(rows[0]?.xmin ?? '0');
      }
    } catch (error) {
      this.#lost(client, error);
      return;
    }
    if (this.#client !== client) return;
    this.#connected = true;
    this.#backoffMs = reconnectMs.first;
    this.#dispatcher.attach(client);
    if (!firstConnection) {
      // Revocations announced while the connection was down were missed: ask instead.
      this.#log.info('listening connection restored');
      await this.#closeEndedSessions(client);
    }
    void this.#drain();
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#connected = false;
    this.#dispatcher.detach();
    client.end().catch(() => undefined);
    if (this.#stopped) return;
    // Exponential backoff with jitter, so that processes that lost the database together do not
    // come back in lockstep.
    const delayMs = Math.round(this.#backoffMs * (0.5 + Math.random() / 2));
    this.#log.warn({ err: error, retryInMs: delayMs }, 'listening connection lost');
    this.#reconnectTimer = setTimeout(() => void this.#connect(), delayMs);
    this.#backoffMs = Math.min(this.#backoffMs * 2, reconnectMs.max);
  }

  #onNotification(message: pg.Notification): void {
    if (message.channel === 'session_revoked' && message.payload) {
      this.#streams.closeSession(message.payload);
      return;
    }
    if (message.channel !== 'notifications') return;
    let to: bigint;
    try {
      to = BigInt((JSON.parse(message.payload ?? '') as { to: string }).to);
    } catch {
      this.#log.warn('ignored a malformed notifications announcement');
      return;
    }
    if (this.#announcedTo === undefined || to > this.#announcedTo) this.#announcedTo = to;
    void this.#drain();
  }

  /** Reads and sends the announced ranges past the watermark, one at a time, in order. */
  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#connected && this.#client && this.#readTo !== undefined && this.#announcedTo !== undefined && this.#announcedTo > this.#readTo) {
        const client = this.#client;
        const [from, to] = [this.#readTo, this.#announcedTo];
        const sessions = this.#streams.sessions();
        try {
          if (sessions.length > 0) this.#send(await readLiveBatch(client, this.#storage, from, to, sessions));
        } catch (error) {
          // A lost connection keeps the range for the next announcement; any other failure skips
          // it (its rows stay in the list) rather than failing on it forever.
          if (this.#client !== client) return;
          this.#log.error({ err: error }, 'notification batch failed');
        }
        this.#readTo = to;
      }
    } finally {
      this.#draining = false;
    }
  }

  #send(batch: LiveBatch): void {
    for (const sessionId of batch.ended) this.#streams.closeSession(sessionId);
    for (const [sessionId, rows] of batch.bySession) {
      this.#streams.send(sessionId, rows.map((row) => ({ id: row.id, event: 'notification', data: row })));
    }
  }

  async #closeEndedSessions(client: pg.Client): Promise<void> {
    const sessions = this.#streams.sessions();
    if (sessions.length === 0) return;
    try {
      for (const sessionId of await readEndedSessions(client, sessions)) this.#streams.closeSession(sessionId);
    } catch (error) {
      this.#log.warn({ err: error }, 'session check after reconnecting failed');
    }
  }
}
