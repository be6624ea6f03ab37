// The LISTEN hub of one API process (design.md "what is live"; contract section 9). It holds:
//   * ONE dedicated listening connection (a pg.Client outside the pools, logged in as
//     `authenticator`, reconnecting with backoff from 100 ms up to 1 s) that LISTENs on
//     'notifications', where the dispatcher announces ranges of writing transactions
//     ({"from","to"} transaction ids, never content), on 'session_revoked' (a session id) and on
//     'asset_processed' (an asset id: server/uploads/processed-assets.ts wakes the request waiting
//     for it), and
//     runs the dispatcher when this process holds the leadership lock (dispatcher.ts);
//   * a reader connection of its own for the batch reads (LiveReader), so a read never waits
//     behind the dispatcher's tick or the API's requests: one statement per announced range for
//     every stream open here (server/sse/reader.ts re-checks visibility and the session in
//     the database at that moment: nothing is cached; the connection only knows which sessions
//     have a stream open here).
// Nothing committed is lost for a connected client:
//   * ranges are read in order from the process's own watermark (#readTo), none skipped;
//   * on (re)connecting, the dispatcher's watermark tells which ranges were announced while the
//     connection was down, and they are read like any other;
//   * a batch that cannot be read is retried; if it still cannot be read, the streams it was for
//     are closed, so their clients resume with Last-Event-ID;
//   * a stream opened with Last-Event-ID holds its live events while its replay is read; the
//     replay covers every row below the first range the stream gets live (replayBefore), so the
//     two never overlap and the stream's rows stay in (tx_id, id) order.
import pg from 'pg';
import type { Response } from 'express';
import type { Config } from '../../config.ts';
import { connectionBounds } from '../../db/connection-bounds.ts';
import { OutageLog, type Log } from '../../logger.ts';
import { ApiError } from '../http/errors.ts';
import { LiveReader } from './reader.ts';
import type { Storage } from '../uploads/storage.ts';
import type { ProcessedAssets } from '../uploads/processed-assets.ts';
import { Dispatcher } from './dispatcher.ts';
import { SseStreams, type SseStream, type StreamOwner } from './streams.ts';

const reconnectMs = { first: 100, max: 1000 };
/** Waits before each retry of a batch read; after the last one the batch's streams are closed. */
const batchRetryMs = [100, 400, 1000];

export interface OpenedStream {
  stream: SseStream;
  /** With resume: the replay covers rows written by transactions below this id. */
  replayBefore: bigint | undefined;
}

export class NotificationHub {
  #streams: SseStreams;
  #log: Log;
  #storage: Storage;
  #dispatcher: Dispatcher;
  #connectionString: string | undefined;
  #client: pg.Client | undefined;
  #reader: LiveReader | undefined;
  #connectedOnce = false;
  #stopped = false;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #backoffMs = reconnectMs.first;
  /** Every range below this has been read for this process's streams. */
  #readTo: bigint | undefined;
  /** The end of the range being read now (streams opened meanwhile get live rows from there). */
  #reading: bigint | undefined;
  /** Announced bounds not yet read, with when they arrived (performance.now()) and whether their range holds badge changes. */
  #announced: { to: bigint; at: number; badges: boolean }[] = [];
  #draining = false;
  /** One warning per outage of the listening connection, one line when it is back. */
  #outage: OutageLog;

  /** Requests waiting for an image's processing, woken by asset_processed (server/uploads/processed-assets.ts). */
  #processedAssets: ProcessedAssets | undefined;

  constructor(sse: Config['sse'], log: Log, storage: Storage, processedAssets?: ProcessedAssets) {
    this.#processedAssets = processedAssets;
    this.#streams = new SseStreams(sse);
    this.#log = log.child({ component: 'notification-hub' });
    this.#storage = storage;
    this.#outage = new OutageLog(
      log,
      'notification-hub',
      'live notifications wait until it is back (streams stay open)',
      'reconnectAttempts',
    );
    this.#dispatcher = new Dispatcher(this.#log, this.#outage);
  }

  /** Notification streams open in this process. */
  get openStreams(): number {
    return this.#streams.count;
  }

  /** How long the oldest announced range not yet delivered by this process has waited, in ms (0 when caught up). */
  get lagMs(): number {
    const oldest = this.#announced[0];
    return oldest ? performance.now() - oldest.at : 0;
  }

  /** Connects (retrying in the background when the first attempt fails). */
  async start(connectionString: string): Promise<void> {
    this.#connectionString = connectionString;
    this.#reader = new LiveReader(connectionString, this.#storage);
    await this.#connect();
  }

  /** Closes every stream, stops the dispatcher and ends the connections (the leadership lock with them). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    this.#streams.closeAll();
    this.#dispatcher.detach();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
    await this.#reader?.end().catch(() => undefined);
  }

  /** The dispatcher's lag when this process leads (for metrics, server/metrics.ts). */
  get dispatcherLagSeconds(): number | undefined {
    return this.#dispatcher.lagSeconds;
  }

  /**
   * Registers a notification stream for the session (503 while the hub has never reached the
   * database): live rows for it are held from now on, and sent once the request begins the
   * stream (SseStream.begin). With `resume`, the replay covers the rows below `replayBefore`.
   */
  open(res: Response, owner: StreamOwner, resume = false): OpenedStream {
    if (this.#stopped || this.#readTo === undefined) throw new ApiError('SERVICE_UNAVAILABLE', {}, { 'Retry-After': '5' });
    const replayBefore = resume ? (this.#reading ?? this.#readTo) : undefined;
    return { stream: this.#streams.open(res, owner), replayBefore };
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ ...connectionBounds, connectionString: this.#connectionString, application_name: 'notification-hub' });
    this.#client = client;
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client));
    client.on('notification', (message) => this.#onNotification(message));
    try {
      await client.connect();
      await client.query('listen notifications; listen session_revoked; listen asset_processed');
      // Listening again: what was announced while the connection was down is read by the waiters.
      this.#processedAssets?.wakeAll();
      // Listening now: whatever was announced before is below the dispatcher's watermark.
      const { rows } = await client.query<{ announced: string; xmin: string }>(
        'select app_private.notification_dispatched_to()::text as announced, pg_snapshot_xmin(pg_current_snapshot())::text as xmin',
      );
      const row = rows[0] as { announced: string; xmin: string };
      // Rows written before the first connection are not pushed: a client resumes or reads the list.
      this.#readTo ??= BigInt(row.xmin);
      this.#announce(BigInt(row.announced), true);
    } catch (error) {
      this.#lost(client, error);
      return;
    }
    if (this.#client !== client) return;
    this.#backoffMs = reconnectMs.first;
    this.#dispatcher.attach(client);
    this.#outage.recovered();
    // Revocations announced while the connection was down were missed: ask instead.
    if (this.#connectedOnce) void this.#closeEndedSessions();
    this.#connectedOnce = true;
    void this.#drain();
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#dispatcher.detach();
    client.end().catch(() => undefined);
    if (this.#stopped) return;
    // Exponential backoff with jitter, so that processes that lost the database together do not
    // come back in lockstep.
    const delayMs = Math.round(this.#backoffMs * (0.5 + Math.random() / 2));
    this.#outage.failed(error ?? new Error('the listening connection ended'));
    this.#reconnectTimer = setTimeout(() => void this.#connect(), delayMs);
    this.#backoffMs = Math.min(this.#backoffMs * 2, reconnectMs.max);
  }

  #onNotification(message: pg.Notification): void {
    if (message.channel === 'asset_processed' && message.payload) {
      this.#processedAssets?.announce(message.payload);
      return;
    }
    if (message.channel === 'session_revoked' && message.payload) {
      this.#streams.closeSession(message.payload);
      return;
    }
    if (message.channel !== 'notifications') return;
    let to: bigint;
    let badges: boolean;
    try {
      const payload = JSON.parse(message.payload ?? '') as { to: string; badges?: boolean };
      to = BigInt(payload.to);
      badges = payload.badges === true;
    } catch {
      this.#log.warn('ignored a malformed notifications announcement');
      return;
    }
    this.#announce(to, badges);
  }

  /** A range to read; `badges` when it may hold badge changes (after a reconnect: unknown, so read them). */
  #announce(to: bigint, badges: boolean): void {
    const last = this.#announced.at(-1)?.to ?? this.#readTo;
    if (last !== undefined && to <= last) return;
    this.#announced.push({ to, at: performance.now(), badges });
    void this.#drain();
  }

  /** Reads and sends the announced ranges past the watermark, one at a time, in order. */
  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (let next = this.#announced.at(-1); !this.#stopped && next && this.#readTo !== undefined; next = this.#announced.at(-1)) {
        const [from, to] = [this.#readTo, next.to];
        const badges = this.#announced.some((announcement) => announcement.badges);
        this.#reading = to;
        if (this.#streams.count > 0) await this.#deliver(from, to, badges);
        this.#readTo = to;
        this.#reading = undefined;
        this.#announced = this.#announced.filter((announcement) => announcement.to > to);
      }
    } finally {
      this.#draining = false;
      this.#reading = undefined;
    }
  }

  /** Sends the rows of [from, to) to the streams that were open when its read began. */
  async #deliver(from: bigint, to: bigint, badges: boolean): Promise<void> {
    const openedUpTo = this.#streams.lastOpened;
    for (let attempt = 0; ; attempt += 1) {
      try {
        const reader = this.#reader as LiveReader;
        const batch = await reader.batch(from, to, this.#streams);
        // Badges after the rows of the same range: they count them.
        const badgeEvents = badges ? await reader.badges(from, to, this.#streams) : new Map<string, never[]>();
        for (const sessionId of batch.ended) this.#streams.closeSession(sessionId);
        for (const [sessionId, events] of batch.bySession) this.#streams.sendToSession(sessionId, events, openedUpTo);
        for (const [sessionId, events] of badgeEvents) this.#streams.sendToSession(sessionId, events, openedUpTo);
        return;
      } catch (error) {
        if (this.#stopped) return;
        const waitMs = batchRetryMs[attempt];
        if (waitMs === undefined) {
          // Its rows stay in the list: the clients resume with Last-Event-ID and get them.
          this.#log.error({ err: error, streams: this.#streams.count }, 'notification batch failed; closing its streams');
          this.#streams.closeOpenedUpTo(openedUpTo);
          return;
        }
        this.#log.warn({ err: error, retryInMs: waitMs }, 'notification batch failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  async #closeEndedSessions(): Promise<void> {
    const sessions = this.#streams.sessions();
    if (sessions.length === 0) return;
    try {
      for (const sessionId of await (this.#reader as LiveReader).endedSessions(sessions)) this.#streams.closeSession(sessionId);
    } catch (error) {
      this.#log.warn({ err: error }, 'session check after reconnecting failed');
    }
  }
}
