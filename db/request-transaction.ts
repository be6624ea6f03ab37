// The transaction of one HTTP request, opened lazily as the request's viewer. A request with a
// token opens it at once together with the session check, in one round trip:
//   begin; set role + app.user_id + app.session_id; select app.session_access_level(...)
// or, when its endpoint allows (deferSession), defers that check to its first statement: the
// opening, the check (app.session_gate, which raises 401/403 codes) and the statement travel in
// one pipeline. A request's last statement can travel with the commit (queryAndCommit, on the
// pipelined API pool), or the whole transaction is one batch with a single Sync
// (db/single-sync.ts): a vote is one round trip and one answer in all. Requests that never touch
// the database never take a connection.
import pg from 'pg';
import { SingleSyncStatement } from './single-sync.ts';
import { anonymousViewer, beginAs, sessionGate, sqlLiteral, type Viewer } from './viewer.ts';

const isTextOrNull = (value: unknown): value is string | null => value === null || typeof value === 'string';

export class RequestTransaction {
  #pool: pg.Pool;
  #viewer: Viewer;
  #client: pg.PoolClient | undefined;
  #opening: Promise<pg.PoolClient> | undefined;
  #done = false;
  /** The deferred session check, sent with the opening (deferSession), and its level. */
  #gate = '';
  #gateLevel = 0;
  /** A statement that runs first in the transaction (a write limit), sent with the next message. */
  #prelude = '';

  constructor(pool: pg.Pool, viewer: Viewer) {
    this.#pool = pool;
    this.#viewer = viewer;
  }

  get viewer(): Viewer {
    return this.#viewer;
  }

  /**
   * Opens the transaction as a signed-in viewer and returns the session's access level. When the
   * session is not live (revoked, expired, or not this user's) it returns null and the request
   * stays anonymous.
   */
  async openWithSession(viewer: Viewer): Promise<number | null> {
    const previous = this.#viewer;
    this.#viewer = viewer;
    const results = await this.#open(`select app.session_access_level(${sqlLiteral(viewer.sessionId)}, ${sqlLiteral(viewer.userId)}) as level`);
    const level = (results.at(-1) as pg.QueryResult<{ level: number | null }>).rows[0]?.level ?? null;
    if (level === null) {
      const client = this.#client as pg.PoolClient;
      this.#client = undefined;
      this.#viewer = previous;
      await client.query('rollback').then(
        () => client.release(),
        () => client.release(true),
      );
    }
    return level;
  }

  /**
   * Takes a signed-in viewer whose session is checked with the request's first statement, in the
   * same round trip: the opening runs app.session_gate, which raises UNAUTHORIZED when the session
   * is not live and the 403 code of the first missing level below `level`; the transaction is then
   * aborted, so the statements behind it change nothing, and the gate's error is thrown.
   */
  deferSession(viewer: Viewer, level: number): void {
    this.#viewer = viewer;
    this.#gate = sessionGate(viewer, level);
    this.#gateLevel = level;
  }

  /**
   * A statement (simple-query text) that must run before the request's statements, in its
   * transaction: a write limit (server/http/write-limits.ts). It costs no round trip of its own: it
   * travels with the opening, or, when the transaction is already open, in the pipeline of the next
   * statement. When it fails, the transaction is aborted and its error is what the request throws.
   */
  prepend(text: string): void {
    this.#prelude = this.#prelude ? `${this.#prelude} ${text}` : text;
  }

  async client(): Promise<pg.PoolClient> {
    if (this.#client) {
      if (this.#prelude) await this.query('select 1');
      return this.#client;
    }
    this.#opening ??= this.#open().then(() => this.#client as pg.PoolClient);
    return this.#opening;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>> {
    const client = this.#client ?? (await this.client());
    const prelude = this.#takePrelude(client);
    const result = client.query<R>(text, params);
    if (prelude) await this.#settlePrelude(prelude, result);
    return result;
  }

  /** Sends a pending prelude on an open connection (pipelined: not awaited here). */
  #takePrelude(client: pg.PoolClient): Promise<unknown> | undefined {
    if (!this.#prelude) return undefined;
    const text = this.#prelude;
    this.#prelude = '';
    return client.query(text);
  }

  /** Awaits a prelude sent ahead of `next`; when it failed, `next` (aborted with it) is settled and the prelude's error thrown. */
  async #settlePrelude(prelude: Promise<unknown>, next: Promise<unknown>): Promise<void> {
    try {
      await prelude;
    } catch (error) {
      await next.catch(() => undefined);
      throw error;
    }
  }

  /**
   * The request's last statement and its commit, sent together (one round trip). When the
   * statement fails, nothing of the transaction remains and the statement's error is thrown. A
   * `name` makes it a prepared statement of the connection: parsed and planned once, then only
   * bound and executed (hot endpoints). A named statement with text parameters on a transaction
   * not yet open is the whole transaction in one batch with a single Sync (db/single-sync.ts:
   * settings, deferred session check and statement, committed by the Sync, one answer); an
   * unnamed statement without parameters goes in the opening message itself; otherwise the
   * opening, the statement and `commit` are pipelined.
   *
   * `gatedAt`: the statement checks the transaction's own session itself, first, at that level
   * (app.session_gate on app.viewer_session_id(), as app.cast_vote does), so a deferred session
   * check is not sent as a statement of its own. It must cover the deferred level.
   */
  async queryAndCommit<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    params?: unknown[],
    name?: string,
    gatedAt?: number,
  ): Promise<pg.QueryResult<R>> {
    const gatedByStatement = gatedAt !== undefined && this.#gate !== '';
    if (gatedByStatement) {
      if (gatedAt < this.#gateLevel) throw new Error(`statement gates at level ${gatedAt}, the request needs ${this.#gateLevel}`);
      this.#gate = '';
    }
    if (!this.#client && !this.#opening && !this.#prelude && name && (params ?? []).every(isTextOrNull)) {
      return this.#singleSync<R>(name, text, (params ?? []) as (string | null)[], gatedByStatement);
    }
    if (!this.#client && !this.#opening && !params?.length) {
      const { client, opened } = await this.#connect(`${text}; commit`);
      this.#done = true;
      try {
        const results = await opened;
        client.release();
        return results.at(-2) as pg.QueryResult<R>;
      } catch (error) {
        await this.#abandon(client);
        throw error;
      }
    }
    // Not yet open: the opening (and a deferred session check) travels in the same pipeline.
    const opening = this.#client || this.#opening ? undefined : await this.#connect('', true);
    const client = opening?.client ?? (await this.client());
    this.#done = true;
    this.#client = undefined;
    // One write (one send) for the whole pipeline: the opening, the statement and the commit.
    const stream = client.connection.stream;
    if (!opening) stream.cork();
    const prelude = opening ? undefined : this.#takePrelude(client);
    const pending = [opening?.opened, client.query<R>({ name, text, values: params }), client.query('commit'), prelude] as const;
    stream.uncork();
    const [opened, result, commit, preluded] = await Promise.allSettled(pending);
    if (preluded.status === 'rejected') {
      if (commit.status === 'rejected') client.release(true);
      else client.release();
      throw preluded.reason;
    }
    if (commit.status === 'rejected') {
      client.release(true);
      if (opened.status === 'rejected') this.#viewer = anonymousViewer;
      throw opened.status === 'rejected' ? opened.reason : commit.reason;
    }
    client.release();
    if (opened.status === 'rejected') {
      this.#viewer = anonymousViewer;
      throw opened.reason;
    }
    if (result.status === 'rejected') this.#refused(result.reason, gatedByStatement);
    return result.value;
  }

  /**
   * The viewer's settings, the statement and the commit as one batch with one Sync
   * (db/single-sync.ts): one round trip, one answer, no statement parsed.
   */
  async #singleSync<R extends pg.QueryResultRow>(name: string, text: string, params: (string | null)[], gatedByStatement: boolean): Promise<pg.QueryResult<R>> {
    if (this.#done) throw new Error('request transaction already finished');
    const client = await this.#pool.connect();
    this.#done = true;
    const gateLevel = this.#gate ? this.#gateLevel : null;
    this.#gate = '';
    const statement = new SingleSyncStatement<R>(this.#viewer, gateLevel, name, text, params);
    const answered = statement.result();
    void client.query(statement);
    try {
      const result = await answered;
      client.release();
      return result;
    } catch (error) {
      // A statement's error ends its batch: the server rolled it back and the connection is clean.
      client.release(!(error instanceof pg.DatabaseError));
      this.#refused(error, gateLevel !== null || gatedByStatement);
    }
  }

  /** Throws `error`; when a session check ran (`checked`) and refused the session, the request stays anonymous. */
  #refused(error: unknown, checked: boolean): never {
    if (checked && (error as { message?: string }).message === 'UNAUTHORIZED') this.#viewer = anonymousViewer;
    throw error;
  }

  /** Commits now (a failed OTP attempt must count even though the request answers an error). */
  async commit(): Promise<void> {
    await this.#finish(true);
  }

  async finish(ok: boolean): Promise<void> {
    await this.#finish(ok);
  }

  /**
   * Takes a connection and sends the opening (not awaited: what follows joins its pipeline).
   * `corked` holds it in the socket until the caller uncorks, so that the statements behind it
   * leave in the same write.
   */
  async #connect(extra = '', corked = false): Promise<{ client: pg.PoolClient; opened: Promise<pg.QueryResult[]> }> {
    if (this.#done) throw new Error('request transaction already finished');
    const client = await this.#pool.connect();
    // Simple-query protocol: several statements, one message.
    const prelude = this.#prelude ? ` ${this.#prelude};` : '';
    const text = beginAs(this.#viewer) + (this.#gate ? ` ${this.#gate}` : '') + prelude + (extra ? ` ${extra};` : '');
    this.#gate = '';
    this.#prelude = '';
    if (corked) client.connection.stream.cork();
    const opened = client.query(text) as unknown as Promise<pg.QueryResult[]>;
    return { client, opened };
  }

  async #open(extra = ''): Promise<pg.QueryResult[]> {
    const { client, opened } = await this.#connect(extra);
    try {
      const results = await opened;
      this.#client = client;
      return results;
    } catch (error) {
      await this.#abandon(client);
      throw error;
    }
  }

  /**
   * After a failed opening message: a refused session check (or a failed statement) leaves an
   * aborted transaction; end it before the pool reuses the connection. The request stays anonymous.
   */
  async #abandon(client: pg.PoolClient): Promise<void> {
    this.#viewer = anonymousViewer;
    await client.query('rollback').then(
      () => client.release(),
      () => client.release(true),
    );
  }

  async #finish(ok: boolean): Promise<void> {
    if (this.#done) return;
    // A deferred session check, and a write limit, always run before a request answers success.
    if (ok && (this.#gate || this.#prelude)) await this.client();
    this.#done = true;
    if (this.#opening) await this.#opening.catch(() => undefined);
    const client = this.#client;
    if (!client) return;
    this.#client = undefined;
    try {
      await client.query(ok ? 'commit' : 'rollback');
      client.release();
    } catch (error) {
      client.release(true);
      if (ok) throw error;
    }
  }
}
