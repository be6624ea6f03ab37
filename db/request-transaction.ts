// The transaction of one HTTP request, opened lazily as the request's viewer, and the one way its
// statements reach the server: pipelined on the (pipelined) API pool's connection, in one write,
//
//   opening     begin; set local role, app.user_id, app.session_id, statement_timeout, lock_timeout
//               (this transaction only); [session gate;] [prelude;]
//   statements  unnamed extended-protocol statements with bind parameters
//   [commit]
//
// so a request whose handler runs one statement (the vote) is one round trip, and nothing outlives
// the transaction on the connection: no session setting, no named prepared statement. That is
// what lets the API pool go through a transaction-mode pooler (db/pools.ts). Such a one-statement
// transaction is even one message, a simple-query text (opening, statement, commit), when its
// values are plain strings, numbers or booleans: they are written in as quoted literals
// (withLiterals), which the server reads as it reads untyped bind parameters. One message is one
// answer for the server to flush and for the API to read, where three are three.
//
// What is held for the opening: the deferred session check (deferSession: app.viewer_session_gate,
// which raises the 401/403 codes, travels with the first statement) and the prelude (prepend: a
// write limit, checked before the request's statements). A statement that checks the session
// itself (app.cast_vote) replaces the deferred check. Requests that never touch the database
// never take a connection.
//
// The answers of limit statements (db/limit-counts.ts: a write limit in the prelude, or a handler's
// own) are kept as they arrive, with whether the transaction committed, for the RateLimit headers.
import pg from 'pg';
import { limitCountsOf, type LimitCount } from './limit-counts.ts';
import { anonymousViewer, beginAs, sessionGate, sqlLiteral, type Viewer } from './viewer.ts';

const { escapeLiteral } = pg;

/** The bounds of every statement of the transaction (API_STATEMENT_TIMEOUT_MS, API_LOCK_TIMEOUT_MS). */
export interface TransactionBounds {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
}

export const defaultBounds: TransactionBounds = { statementTimeoutMs: 5000, lockTimeoutMs: 2000 };

/** Whether a session check refused the session (app.viewer_session_gate's 401): the request is then anonymous. */
const refusesSession = (error: unknown): boolean => (error as { message?: string }).message === 'UNAUTHORIZED';

export class RequestTransaction {
  readonly #pool: pg.Pool;
  readonly #bounds: TransactionBounds;
  #viewer: Viewer;
  /** The connection, once taken (the opening is the first thing sent on it). */
  #connecting: Promise<pg.PoolClient> | undefined;
  #client: pg.PoolClient | undefined;
  /** The opening's answers, once sent. */
  #opened: Promise<unknown> | undefined;
  #done = false;
  /** The deferred session check's level (deferSession), until a message carries it. */
  #gateLevel: number | null = null;
  /** Statements that run before the request's own (prepend), until a message carries them. */
  #prelude: string[] = [];
  /** queryAndCommit leaves the transaction open (holdCommit). */
  #commitHeld = false;
  /** What the limit statements of this transaction answered. */
  #limitCounts: LimitCount[] = [];
  #committed = false;

  constructor(pool: pg.Pool, viewer: Viewer, bounds: TransactionBounds = defaultBounds) {
    this.#pool = pool;
    this.#viewer = viewer;
    this.#bounds = bounds;
  }

  get viewer(): Viewer {
    return this.#viewer;
  }

  /** The limits this transaction counted under (their statements' answers), and whether it committed. */
  get limitCounts(): { counts: LimitCount[]; committed: boolean } {
    return { counts: this.#limitCounts, committed: this.#committed };
  }

  /**
   * Opens the transaction as a signed-in viewer and returns the session's access level. When the
   * session is not live (revoked, expired, or not this user's) it returns null, the transaction is
   * rolled back and the request stays anonymous (a later statement opens a new one).
   */
  async openWithSession(viewer: Viewer): Promise<number | null> {
    const previous = this.#viewer;
    this.#viewer = viewer;
    const check = `select app.session_access_level(${sqlLiteral(viewer.sessionId)}, ${sqlLiteral(viewer.userId)}) as level`;
    const [result] = await this.#send([{ text: check }], false);
    const level = (result as pg.QueryResult<{ level: number | null }>).rows[0]?.level ?? null;
    if (level === null) {
      await this.#end(false);
      this.#viewer = previous;
      this.#done = false;
    }
    return level;
  }

  /**
   * Takes a signed-in viewer whose session is checked with the request's first statement, in the
   * same round trip: the opening runs app.viewer_session_gate, which raises UNAUTHORIZED when the
   * session is not live and the 403 code of the first missing level below `level`; the transaction
   * is then aborted, so the statements behind it change nothing, and the gate's error is thrown.
   */
  deferSession(viewer: Viewer, level: number): void {
    this.#viewer = viewer;
    this.#gateLevel = level;
  }

  /**
   * A statement (simple-query text, without its `;`) that must run before the request's
   * statements, in its transaction: a write limit (server/http/write-limits.ts). It travels with
   * the next message (no round trip of its own); when it fails, the transaction is aborted and its
   * error is what the request throws.
   */
  prepend(text: string): void {
    this.#prelude.push(text);
  }

  /**
   * Holds the commit (a request with an Idempotency-Key, server/http/idempotency.ts): from now on
   * queryAndCommit runs its statement in the open transaction, behind a savepoint (when it fails the
   * transaction is as before it, and usable), and commits nothing, so that the caller can add the
   * request's kept answer and commit both together (releaseCommit, then queryAndCommit). An early
   * commit() still commits, and the hold is gone (commitHeld is false).
   */
  holdCommit(): void {
    this.#commitHeld = true;
  }

  get commitHeld(): boolean {
    return this.#commitHeld && !this.#done;
  }

  releaseCommit(): void {
    this.#commitHeld = false;
  }

  /** The open transaction's connection, after what was held for it (session check, prelude) ran. */
  async client(): Promise<pg.PoolClient> {
    await this.#send([], false);
    return this.#client as pg.PoolClient;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>> {
    const [result] = await this.#send([{ text, values: params }], false);
    return result as pg.QueryResult<R>;
  }

  /**
   * The request's last statement and its commit, sent together (with the opening when the
   * transaction is not open yet: one round trip). When the statement fails, nothing of the
   * transaction remains and its error is thrown.
   *
   * `statementGateLevel`: the level at which the statement checks the transaction's own session
   * itself, first (app.viewer_session_gate, as app.cast_vote does), so a deferred session check is
   * not sent as a statement of its own. It must cover the deferred level. A held prelude (a key's
   * claim, a write limit) still runs behind the deferred check: it acts for the session.
   */
  async queryAndCommit<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    params?: unknown[],
    statementGateLevel?: number,
  ): Promise<pg.QueryResult<R>> {
    if (statementGateLevel !== undefined && this.#gateLevel !== null) {
      if (statementGateLevel < this.#gateLevel)
        throw new Error(`statement gates at level ${statementGateLevel}, the request needs ${this.#gateLevel}`);
      if (this.#prelude.length === 0) this.#gateLevel = null;
    }
    if (this.#commitHeld) return this.#heldStatement<R>(text, params);
    const [result] = await this.#send([{ text, values: params }], true);
    return result as pg.QueryResult<R>;
  }

  /**
   * A statement of a held transaction, behind a savepoint sent in the same write (never released:
   * the commit releases it, and a later one of the same name shadows it).
   */
  async #heldStatement<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      const [, result] = await this.#send([{ text: 'savepoint held_statement' }, { text, values: params }], false);
      return result as pg.QueryResult<R>;
    } catch (error) {
      await this.#send([{ text: 'rollback to savepoint held_statement' }], false).catch(() => undefined);
      throw error;
    }
  }

  /** Commits now (a failed OTP attempt must count even though the request answers an error). */
  async commit(): Promise<void> {
    this.#commitHeld = false;
    await this.finish(true);
  }

  /** Commits (`ok`) or rolls back; a deferred session check and a prelude always run before a commit. */
  async finish(ok: boolean): Promise<void> {
    if (this.#done) return;
    if (ok && (this.#gateLevel !== null || this.#prelude.length > 0)) {
      await this.#send([], true);
      return;
    }
    await this.#end(ok);
  }

  /**
   * Sends, in one write, what the transaction holds (the opening when not open yet, else a pending
   * prelude), `statements`, and `commit` when `commit`; then waits for every answer. Throws the first
   * failure in the order sent: the opening's (the request is then anonymous), the prelude's, a
   * statement's, the commit's. With `commit`, the connection is released (destroyed when even the
   * commit got no answer); a failed statement before it makes it a rollback.
   */
  async #send(statements: pg.QueryConfig[], commit: boolean): Promise<pg.QueryResult[]> {
    if (this.#done) throw new Error('request transaction already finished');
    const client = await this.#connect();
    if (this.#done) throw new Error('request transaction already finished');
    const whole = !this.#opened && commit && statements.length === 1 && this.#prelude.length === 0 && withLiterals(statements[0]);
    if (whole) return [await this.#sendWhole(client, whole)];
    const stream = client.connection.stream;
    stream.cork();
    let opened = this.#opened;
    const sentOpening = !opened;
    const leading: Promise<unknown>[] = [];
    if (!opened) {
      const gate = this.#gateLevel === null ? [] : [sessionGate(this.#gateLevel)];
      opened = this.#opened = client.query([this.#opening(), ...gate, ...this.#prelude.map((text) => `${text};`)].join(' '));
      this.#gateLevel = null;
      this.#prelude = [];
    } else if (this.#prelude.length > 0) {
      leading.push(client.query(this.#prelude.join('; ')));
      this.#prelude = [];
    }
    const results = statements.map((statement) => client.query(statement));
    const committed = commit ? client.query('commit') : undefined;
    if (commit) {
      this.#done = true;
      this.#client = undefined;
    }
    stream.uncork();

    const [openingOutcome, ...outcomes] = await Promise.allSettled([opened, ...leading, ...results]);
    const committedOutcome =
      committed &&
      (await committed.then(
        () => undefined,
        (error: unknown) => ({ error }),
      ));
    if (commit) client.release(committedOutcome !== undefined);
    // Limit answers of what this message carried (an opening sent before is not read again).
    for (const outcome of [...(sentOpening ? [openingOutcome] : []), ...outcomes]) {
      if (outcome?.status === 'fulfilled') this.#limitCounts.push(...limitCountsOf(outcome.value as pg.QueryResult | pg.QueryResult[]));
    }
    this.#committed =
      commit && committedOutcome === undefined && [openingOutcome, ...outcomes].every((outcome) => outcome?.status === 'fulfilled');
    if (openingOutcome?.status === 'rejected') {
      this.#viewer = anonymousViewer;
      throw openingOutcome.reason;
    }
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') {
        if (refusesSession(outcome.reason)) this.#viewer = anonymousViewer;
        throw outcome.reason;
      }
    }
    if (committedOutcome) throw committedOutcome.error;
    return outcomes.slice(leading.length).map((outcome) => (outcome as PromiseFulfilledResult<pg.QueryResult>).value);
  }

  /**
   * The whole transaction as one simple-query text (opening, the session check when deferred, the
   * statement with its values written in, commit): a request that is one statement. One message is
   * one answer for the server to send and one for the API to read, where three are three. When a
   * statement fails, those behind it did not run: the transaction is rolled back before the
   * connection goes back to the pool (destroyed when even that fails), and the error is thrown.
   */
  async #sendWhole(client: pg.PoolClient, text: string): Promise<pg.QueryResult> {
    const gate = this.#gateLevel === null ? '' : ` ${sessionGate(this.#gateLevel)}`;
    this.#gateLevel = null;
    this.#done = true;
    this.#client = undefined;
    this.#opened = Promise.resolve();
    let results: pg.QueryResult[];
    try {
      results = (await client.query(`${this.#opening()}${gate} ${text}; commit`)) as unknown as pg.QueryResult[];
    } catch (error) {
      await client.query('rollback').then(
        () => client.release(),
        () => client.release(true),
      );
      if (refusesSession(error)) this.#viewer = anonymousViewer;
      throw error;
    }
    client.release();
    this.#limitCounts.push(...limitCountsOf(results));
    this.#committed = true;
    return results[results.length - 2] as pg.QueryResult;
  }

  /** The viewer's settings and the transaction's bounds, set in the transaction only (one simple-query text). */
  #opening(): string {
    return beginAs(this.#viewer, [
      ['statement_timeout', String(this.#bounds.statementTimeoutMs)],
      ['lock_timeout', String(this.#bounds.lockTimeoutMs)],
    ]);
  }

  /** The transaction's connection, taken once (concurrent callers share it; the opening goes first). */
  #connect(): Promise<pg.PoolClient> {
    this.#connecting ??= this.#pool.connect().then((client) => (this.#client = client));
    return this.#connecting;
  }

  /** Ends the transaction: commit or rollback, and the connection back to the pool (destroyed when that fails). */
  async #end(commit: boolean): Promise<void> {
    this.#done = true;
    const client = this.#connecting && (await this.#connecting.catch(() => undefined));
    this.#connecting = undefined;
    this.#opened = undefined;
    if (!client || this.#client !== client) return;
    this.#client = undefined;
    try {
      await client.query(commit ? 'commit' : 'rollback');
      this.#committed = commit;
      client.release();
    } catch (error) {
      client.release(true);
      if (commit) throw error;
    }
  }
}

/** A text as a quoted literal: pg's escapeLiteral, whose character loop only a quote or a backslash needs. */
const quoted = (text: string): string => (/['\\]/.test(text) ? escapeLiteral(text) : `'${text}'`);

/**
 * A statement with its bind parameters written in as quoted literals (pg's escapeLiteral), for the
 * one-text transaction; undefined when it cannot be: a value that is not a string, number, boolean
 * or null (bytes, dates, arrays and objects stay bind parameters), or a text with a quote or a
 * dollar quote, where `$n` might not be a parameter. A quoted literal is, like an untyped bind
 * parameter, of unknown type until its place in the statement gives it one, so the server reads
 * the two alike.
 */
export function withLiterals(statement: pg.QueryConfig | undefined): string | undefined {
  if (!statement || /'|\$\$/.test(statement.text)) return undefined;
  const values = statement.values ?? [];
  const literals: string[] = [];
  for (const value of values) {
    if (value === null || value === undefined) literals.push('null');
    else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') literals.push(quoted(String(value)));
    else return undefined;
  }
  let unknown = false;
  const text = statement.text.replace(/\$(\d+)/g, (_, n: string) => {
    const literal = literals[Number(n) - 1];
    if (literal === undefined) unknown = true;
    return literal ?? '';
  });
  return unknown ? undefined : text;
}
