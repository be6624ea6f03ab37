// The transaction of one HTTP request, opened lazily as the request's viewer. A request with a
// token opens it at once together with the session check, in one round trip:
//   begin; set role + app.user_id + app.session_id; select app.session_access_level(...)
// or, when its endpoint allows (deferSession), defers that check to its first statement: the
// opening, the check (app.viewer_session_gate, which raises 401/403 codes) and the statement travel in
// one pipeline. A request's last statement can travel with the commit (queryAndCommit, on the
// pipelined API pool), or the whole transaction is one batch with a single Sync
// (db/single-sync.ts): a vote is one round trip and one answer in all. Requests that never touch
// the database never take a connection.
//
// This class keeps the transaction's state (its viewer, connection and what is held for the next
// message) and decides what travels when; the parts live beside it: the opening message
// (transaction-opening.ts), the deferred session check (deferred-session-check.ts), the statements
// that run first (statement-prelude.ts) and the ways the last statement travels with its commit
// (last-statement.ts).
import type pg from 'pg';
import { DeferredSessionCheck } from './deferred-session-check.ts';
import { limitCountsOf, type LimitCount } from './limit-counts.ts';
import { commitInOpening, commitInSingleSync, commitPipelined, refusesSession } from './last-statement.ts';
import { settlePrelude, StatementPrelude } from './statement-prelude.ts';
import { openingText, rollbackAndRelease, sendOpening, type Opening } from './transaction-opening.ts';
import { anonymousViewer, sqlLiteral, type Viewer } from './viewer.ts';

const isTextOrNull = (value: unknown): value is string | null => value === null || typeof value === 'string';

export class RequestTransaction {
  #pool: pg.Pool;
  #viewer: Viewer;
  #client: pg.PoolClient | undefined;
  #opening: Promise<pg.PoolClient> | undefined;
  #done = false;
  /** The deferred session check, sent with the opening (deferSession). */
  #sessionCheck = new DeferredSessionCheck();
  /** Statements that run first in the transaction (a write limit), sent with the next message. */
  #prelude = new StatementPrelude((result) => this.#collect(result));
  /** What the limit statements of this transaction answered (db/limit-counts.ts). */
  #limitCounts: LimitCount[] = [];
  #committed = false;

  constructor(pool: pg.Pool, viewer: Viewer) {
    this.#pool = pool;
    this.#viewer = viewer;
  }

  get viewer(): Viewer {
    return this.#viewer;
  }

  /** The limits this transaction counted under (their statements' answers), and whether it committed. */
  get limitCounts(): { counts: LimitCount[]; committed: boolean } {
    return { counts: this.#limitCounts, committed: this.#committed };
  }

  /** Keeps the limit counts among a statement's results (seen before the statement's caller sees them). */
  #collect(results: pg.QueryResult | pg.QueryResult[]): void {
    const counts = limitCountsOf(results);
    if (counts.length > 0) this.#limitCounts.push(...counts);
  }

  /** Collects from `sent` once it answers, ahead of whoever awaits it next; errors are the caller's. */
  #watch<T extends pg.QueryResult | pg.QueryResult[]>(sent: Promise<T>): Promise<T> {
    void sent.then((results) => this.#collect(results), () => undefined);
    return sent;
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
      await rollbackAndRelease(client);
    }
    return level;
  }

  /**
   * Takes a signed-in viewer whose session is checked with the request's first statement, in the
   * same round trip: the opening runs app.viewer_session_gate, which raises UNAUTHORIZED when the session
   * is not live and the 403 code of the first missing level below `level`; the transaction is then
   * aborted, so the statements behind it change nothing, and the gate's error is thrown.
   */
  deferSession(viewer: Viewer, level: number): void {
    this.#viewer = viewer;
    this.#sessionCheck.defer(level);
  }

  /**
   * A statement (simple-query text) that must run before the request's statements, in its
   * transaction: a write limit (server/http/write-limits.ts). It costs no round trip of its own: it
   * travels with the opening, or, when the transaction is already open, in the pipeline of the next
   * statement. When it fails, the transaction is aborted and its error is what the request throws.
   */
  prepend(text: string): void {
    this.#prelude.add(text);
  }

  async client(): Promise<pg.PoolClient> {
    if (this.#client) {
      if (this.#prelude.pending) await this.query('select 1');
      return this.#client;
    }
    this.#opening ??= this.#open().then(() => this.#client as pg.PoolClient);
    return this.#opening;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>> {
    const client = this.#client ?? (await this.client());
    const prelude = this.#prelude.send(client);
    const result = this.#watch(client.query<R>(text, params));
    if (prelude) await settlePrelude(prelude, result);
    return result;
  }

  /**
   * The request's last statement and its commit, sent together (one round trip). When the
   * statement fails, nothing of the transaction remains and the statement's error is thrown. A
   * `name` makes it a prepared statement of the connection: parsed and planned once, then only
   * bound and executed (hot endpoints). A named statement with text parameters on a transaction
   * not yet open is the whole transaction in one batch with a single Sync (db/single-sync.ts:
   * settings, deferred session check and statement, committed by the Sync, one answer); an
   * unnamed statement without parameters goes in the opening message itself; otherwise the
   * opening, the statement and `commit` are pipelined (last-statement.ts).
   *
   * `statementGateLevel`: the level at which the statement checks the transaction's own session
   * itself, first (app.viewer_session_gate, as app.cast_vote does), so a
   * deferred session check is not sent as a statement of its own. It must cover the deferred level.
   */
  async queryAndCommit<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    params?: unknown[],
    name?: string,
    statementGateLevel?: number,
  ): Promise<pg.QueryResult<R>> {
    const gatedByStatement = this.#sessionCheck.coverWith(statementGateLevel);
    const result = await this.#lastStatement<R>(text, params, name, gatedByStatement);
    this.#collect(result);
    this.#committed = true;
    return result;
  }

  async #lastStatement<R extends pg.QueryResultRow>(text: string, params: unknown[] | undefined, name: string | undefined, gatedByStatement: boolean): Promise<pg.QueryResult<R>> {
    if (!this.#client && !this.#opening && !this.#prelude.pending && name && (params ?? []).every(isTextOrNull)) {
      return this.#singleSync<R>(name, text, (params ?? []) as (string | null)[], gatedByStatement);
    }
    if (!this.#client && !this.#opening && !params?.length) {
      const opening = await this.#connect(`${text}; commit`);
      this.#done = true;
      try {
        return await commitInOpening<R>(opening);
      } catch (error) {
        this.#viewer = anonymousViewer;
        throw error;
      }
    }
    // Not yet open: the opening (and a deferred session check) travels in the same pipeline.
    const opening = this.#client || this.#opening ? undefined : await this.#connect('', true);
    const client = opening?.client ?? (await this.client());
    this.#done = true;
    this.#client = undefined;
    return commitPipelined<R>(client, opening, this.#prelude, { name, text, values: params }, {
      openingFailed: () => {
        this.#viewer = anonymousViewer;
      },
      statementFailed: (error) => this.#refused(error, gatedByStatement),
    });
  }

  /**
   * The viewer's settings, the statement and the commit as one batch with one Sync
   * (db/single-sync.ts): one round trip, one answer, no statement parsed.
   */
  async #singleSync<R extends pg.QueryResultRow>(name: string, text: string, params: (string | null)[], gatedByStatement: boolean): Promise<pg.QueryResult<R>> {
    if (this.#done) throw new Error('request transaction already finished');
    const client = await this.#pool.connect();
    this.#done = true;
    const gateLevel = this.#sessionCheck.takeLevel();
    try {
      return await commitInSingleSync<R>(client, this.#viewer, gateLevel, name, text, params);
    } catch (error) {
      this.#refused(error, gateLevel !== null || gatedByStatement);
    }
  }

  /** Throws `error`; when a session check ran (`checked`) and refused the session, the request stays anonymous. */
  #refused(error: unknown, checked: boolean): never {
    if (checked && refusesSession(error)) this.#viewer = anonymousViewer;
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
   * Takes a connection and sends the opening, with what is held for it and `extra` (not awaited:
   * what follows joins its pipeline; `corked`: see sendOpening).
   */
  async #connect(extra = '', corked = false): Promise<Opening> {
    if (this.#done) throw new Error('request transaction already finished');
    const client = await this.#pool.connect();
    const text = openingText(this.#viewer, this.#sessionCheck.takeText(), this.#prelude.take(), extra);
    const opening = sendOpening(client, text, corked);
    return { ...opening, opened: this.#watch(opening.opened) };
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

  /** After a failed opening message: the aborted transaction is ended, and the request stays anonymous. */
  async #abandon(client: pg.PoolClient): Promise<void> {
    this.#viewer = anonymousViewer;
    await rollbackAndRelease(client);
  }

  async #finish(ok: boolean): Promise<void> {
    if (this.#done) return;
    // A deferred session check, and a write limit, always run before a request answers success.
    if (ok && (this.#sessionCheck.pending || this.#prelude.pending)) await this.client();
    this.#done = true;
    if (this.#opening) await this.#opening.catch(() => undefined);
    const client = this.#client;
    if (!client) return;
    this.#client = undefined;
    try {
      await client.query(ok ? 'commit' : 'rollback');
      this.#committed = ok;
      client.release();
    } catch (error) {
      client.release(true);
      if (ok) throw error;
    }
  }
}
