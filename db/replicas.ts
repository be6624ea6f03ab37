// Streaming replicas that serve read-only requests (DATABASE_REPLICA_URLS, contract part 17).
//
// Each replica has a pool of its own (the `authenticator` login, its password derived from the
// replica URL's owner credentials as db/roles.ts does for DATABASE_URL). Every `pollMillis` the set
// samples the primary's WAL insert position and each replica's replay position: a replica's lag is
// the age of the oldest primary sample it has not replayed (0 when it has replayed the newest), so an
// idle primary does not look like a lagging replica. A replica is usable while it answers, is a
// standby, and lags at most `maxLagMillis`; one that fails a read is out at once, until a poll finds
// it well again.
//
// Read-your-writes: every session has a floor on the primary (app_private.session_read_floors, an
// unlogged table): the WAL position a replica must have replayed before it serves that session.
// noteServed() raises it to the primary's insert position after each request of the session the
// primary served (its writes, and its reads: a read there may have seen what a replica has not yet
// replayed), so the session's reads never go back in time, and answers that position: the API hands
// it to the client, signed (server/http/read-floor.ts), and a client that sends it back with its
// next reads spares the primary: its session is then checked on the replica itself, which must
// have replayed past that floor and past every revocation older than `maxLagMillis`
// (revocationFloor), so a revoked session stops within REPLICA_MAX_LAG_MS (contract part 3). A read
// without it is checked on the primary, where sessionFloor() reads the session's level and floor
// in one statement (a revoked session stops at once). A read goes to the session's replica when
// that replica has replayed past the floor: known from the last poll, or checked on the replica in
// the read's own first round trip (app.replica_caught_up), the read falling back to the primary when
// it is behind. Floors untouched for an hour are swept (worker task sweep_session_read_floors): a
// session without one gets the primary's position at its next read.
//
// A session reads from one replica (chosen by its id among the configured ones) or the primary:
// one replica's replay position only moves forward, so reads that alternate between it and the
// primary never go back in time, where two replicas at different positions could.
import pg from 'pg';
import { setBounded } from '../bounded-map.ts';
import { connectionBounds } from './connection-bounds.ts';
import { roleUrl } from './roles.ts';

/** Sessions whose floors a process remembers. */
const notedMax = 100_000;

export interface ReplicaOptions {
  /** Owner-form URLs of the replicas (DATABASE_REPLICA_URLS). */
  urls: string[];
  /** REPLICA_MAX_LAG_MS: a replica lagging more is skipped until it catches up. */
  maxLagMillis: number;
  /** Connections per replica pool (as the API pool's). */
  max?: number;
  pollMillis?: number;
}

/** A WAL position ('16/B374D848') as a number of bytes. */
export function lsnBytes(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

/** The text form of a WAL position of `lsnBytes`. */
export function lsnText(bytes: bigint): string {
  return `${(bytes >> 32n).toString(16).toUpperCase()}/${(bytes & 0xffffffffn).toString(16).toUpperCase()}`;
}

export class Replica {
  /** host:port, as logs and metrics name it. */
  readonly name: string;
  /** The reads' pool. */
  readonly pool: pg.Pool;
  /** The replay position last seen (a lower bound of where it is now); -1 when unknown. */
  replayed = -1n;
  lagMillis = Number.POSITIVE_INFINITY;
  /** Answered the last poll as a standby, and no read failed on it since. */
  healthy = false;
  /** Reads it served (answers sent). */
  served = 0;
  #url: string;
  /** The poll's own connection: busy read connections never delay it, so a busy replica is not taken for a dead one. */
  #poller: pg.Client | undefined;

  #answerMillis: number;

  /** `answerMillis`: a poll unanswered this long counts as a replica gone. */
  constructor(ownerUrl: string, max: number, answerMillis: number) {
    this.#answerMillis = answerMillis;
    const url = new URL(ownerUrl);
    this.name = url.host;
    this.#url = roleUrl(ownerUrl, 'authenticator');
    // A replica that does not answer a connection in a second is skipped; the read goes to the primary.
    this.pool = new pg.Pool({
      ...connectionBounds,
      connectionString: this.#url,
      max,
      pipeline: true,
      connectionTimeoutMillis: 1000,
      application_name: 'api',
    } as pg.PoolConfig);
    this.pool.on('error', () => {});
    this.pool.on('connect', (client) => client.on('error', () => {}));
  }

  /** Asks the replica where it is; false when it did not answer in time (or is not a standby). */
  async poll(): Promise<boolean> {
    try {
      if (!this.#poller) {
        const client = new pg.Client({
          ...connectionBounds,
          connectionString: this.#url,
          connectionTimeoutMillis: this.#answerMillis,
          query_timeout: this.#answerMillis,
          application_name: 'replica poll',
        });
        client.on('error', () => {});
        this.#poller = client;
        await client.connect();
      }
      const { rows } = await this.#poller.query<{ replayed: string | null }>('select pg_last_wal_replay_lsn()::text as replayed');
      const replayed = rows[0]?.replayed;
      if (!replayed) return false;
      this.sawReplayed(lsnBytes(replayed));
      return true;
    } catch {
      const poller = this.#poller;
      this.#poller = undefined;
      await poller?.end().catch(() => undefined);
      return false;
    }
  }

  sawReplayed(position: bigint): void {
    if (position > this.replayed) this.replayed = position;
  }

  async end(): Promise<void> {
    await this.#poller?.end().catch(() => undefined);
    this.#poller = undefined;
    await this.pool.end();
  }
}

interface Sample {
  at: number;
  position: bigint;
}

export interface ReplicaStatus {
  name: string;
  usable: boolean;
  lagMillis: number;
  served: number;
}

export class ReplicaSet {
  readonly replicas: Replica[];
  readonly maxLagMillis: number;
  /** Reads the primary served in place of a replica (behind, unusable, or failed mid-read). */
  primaryReads = 0;
  /** Sessions checked on a replica (the request carried its floor: server/http/read-floor.ts). */
  sessionChecks = 0;
  /** Poll rounds run (each a statement on the primary and one on each replica). */
  polls = 0;
  #primary: pg.Pool;
  #pollMillis: number;
  #samples: Sample[] = [];
  /** The floors this process noted (a bounded memory): a read it serves never goes below them. */
  #noted = new Map<string, bigint>();
  #timer: NodeJS.Timeout | undefined;
  #polled: Promise<void> | undefined;

  constructor(primary: pg.Pool, { urls, maxLagMillis, max = 20, pollMillis = 100 }: ReplicaOptions) {
    this.#primary = primary;
    this.maxLagMillis = maxLagMillis;
    this.#pollMillis = pollMillis;
    // A replica that answers its poll later than it may lag is out anyway (a refused connection or
    // a read that fails takes it out at once).
    this.replicas = urls.map((url) => new Replica(url, max, Math.max(1000, maxLagMillis)));
  }

  /** Polls now and then every pollMillis (the timer does not keep the process alive). */
  start(): void {
    if (this.#timer) return;
    void this.poll();
    this.#timer = setInterval(() => void this.poll(), this.#pollMillis);
    this.#timer.unref();
  }

  async end(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#polled;
    await Promise.all(this.replicas.map((replica) => replica.end()));
  }

  /** One round of samples: the primary's position, then each replica's (a poll still running is not repeated). */
  poll(): Promise<void> {
    this.#polled ??= this.#poll().finally(() => {
      this.#polled = undefined;
    });
    return this.#polled;
  }

  async #poll(): Promise<void> {
    this.polls += 1;
    // The primary and the replicas answer in parallel: a busy API pool delays the sample, never a
    // replica's poll (the lag then counts from the samples taken so far).
    // A sample is dated when asked for: its position is past every commit made before that moment.
    const asked = Date.now();
    const primary = this.#primary.query<{ position: string }>('select pg_current_wal_insert_lsn()::text as position').then(
      ({ rows }) => this.#sample(asked, lsnBytes(rows[0]!.position)),
      () => undefined, // the primary unreachable: requests meet the outage themselves
    );
    await Promise.all([
      primary,
      ...this.replicas.map(async (replica) => {
        replica.healthy = await replica.poll();
        replica.lagMillis = replica.healthy ? this.#lagOf(replica.replayed) : Number.POSITIVE_INFINITY;
      }),
    ]);
  }

  #sample(at: number, position: bigint): void {
    const now = Date.now();
    this.#samples.push({ at, position });
    // Samples older than the lag that matters (and a margin) say nothing more.
    const keepAfter = now - this.maxLagMillis - 5 * this.#pollMillis - 1000;
    while (this.#samples.length > 2 && this.#samples[0]!.at < keepAfter) this.#samples.shift();
  }

  /** Milliseconds since the primary wrote the oldest WAL the replica has not replayed (0: none). */
  #lagOf(replayed: bigint): number {
    const unreplayed = this.#samples.find((sample) => sample.position > replayed);
    if (!unreplayed) return 0;
    return Date.now() - unreplayed.at;
  }

  /**
   * The primary's position that a replica must have replayed before it checks a session: the first
   * sample asked for at most `maxLagMillis` ago, which is past every revocation committed before
   * then. Undefined when there is none (the primary has not answered a poll for that long): the
   * session is then checked on the primary.
   */
  revocationFloor(): bigint | undefined {
    const since = Date.now() - this.maxLagMillis;
    return this.#samples.find((sample) => sample.at >= since)?.position;
  }

  /** The floor this process last noted for a session (0 when none). */
  notedFloor(sessionId: string): bigint {
    return this.#noted.get(sessionId) ?? 0n;
  }

  usable(replica: Replica): boolean {
    return replica.healthy && replica.lagMillis <= this.maxLagMillis;
  }

  /** The replica a session reads from (by its id; anonymous reads spread), when that one is usable. */
  replicaFor(sessionId: string | null): Replica | undefined {
    const { replicas } = this;
    if (replicas.length === 0) return undefined;
    const index =
      sessionId === null ? Math.floor(Math.random() * replicas.length) : Number.parseInt(sessionId.slice(-8), 16) % replicas.length;
    const replica = replicas[Number.isNaN(index) ? 0 : index]!;
    return this.usable(replica) ? replica : undefined;
  }

  /**
   * Where a read with `floor` stands on `replica`: `ready` (the last poll saw it past the floor),
   * `check` (maybe past it by now: the read checks in its first round trip), or `behind` (it
   * lagged more than a poll interval at the last poll, so it will not have caught up since: the
   * read goes to the primary without trying).
   */
  reached(replica: Replica, floor: bigint): 'ready' | 'check' | 'behind' {
    if (floor <= replica.replayed) return 'ready';
    return replica.lagMillis > this.#pollMillis ? 'behind' : 'check';
  }

  /** A read failed on the replica (it went away, or refused): skipped until a poll finds it well. */
  failed(replica: Replica): void {
    replica.healthy = false;
    replica.lagMillis = Number.POSITIVE_INFINITY;
  }

  /**
   * On the primary, in one statement: the session's access level (null: not live, contract part 3)
   * and its floor (the position a replica must have replayed to serve it).
   */
  async sessionFloor(sessionId: string, userId: string): Promise<{ level: number | null; floor: bigint }> {
    const { rows } = await this.#primary.query<{ level: number | null; floor: string | null }>(
      'select level, floor::text from app_private.session_read_floor($1, $2)',
      [sessionId, userId],
    );
    const row = rows[0];
    return { level: row?.level ?? null, floor: row?.floor ? lsnBytes(row.floor) : 0n };
  }

  /**
   * After the primary served a request of the session: its floor becomes the primary's position
   * now, which is answered (a position read after the floor was raised, so at least the floor).
   */
  async noteServed(sessionId: string): Promise<bigint> {
    const { rows } = await this.#primary.query<{ floor: string }>(
      'select app_private.note_session_read_floor($1), pg_current_wal_insert_lsn()::text as floor',
      [sessionId],
    );
    const floor = lsnBytes(rows[0]!.floor);
    if (floor > this.notedFloor(sessionId)) setBounded(this.#noted, sessionId, floor, notedMax);
    return floor;
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((replica) => ({
      name: replica.name,
      usable: this.usable(replica),
      lagMillis: replica.lagMillis,
      served: replica.served,
    }));
  }
}
