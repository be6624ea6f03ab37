// The transaction of one HTTP request, opened lazily as the request's viewer. A request with a
// token opens it at once together with the session check, in one round trip:
//   begin; set role + app.user_id + app.session_id; select app.session_access_level(...)
// A request's last statement can travel with the commit (queryAndCommit, on the pipelined API
// pool): a vote is two round trips in all. Requests that never touch the database never take a
// connection.
import type pg from 'pg';
import { beginAs, sqlLiteral, type Viewer } from './viewer.ts';

export class RequestTransaction {
  #pool: pg.Pool;
  #viewer: Viewer;
  #client: pg.PoolClient | undefined;
  #opening: Promise<pg.PoolClient> | undefined;
  #done = false;

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

  async client(): Promise<pg.PoolClient> {
    if (this.#client) return this.#client;
    this.#opening ??= this.#open().then(() => this.#client as pg.PoolClient);
    return this.#opening;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>> {
    const client = await this.client();
    return client.query<R>(text, params);
  }

  /**
   * The request's last statement and its commit, sent together (pipelined: one round trip). When
   * the statement fails, the commit ends the aborted transaction as a rollback and the statement's
   * error is thrown; nothing of the transaction remains. A `name` makes it a prepared statement of
   * the connection: parsed and planned once, then only bound and executed (hot endpoints).
   */
  async queryAndCommit<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[], name?: string): Promise<pg.QueryResult<R>> {
    const client = await this.client();
    this.#done = true;
    this.#client = undefined;
    const [result, commit] = await Promise.allSettled([client.query<R>({ name, text, values: params }), client.query('commit')]);
    if (commit.status === 'rejected') {
      client.release(true);
      throw commit.reason;
    }
    client.release();
    if (result.status === 'rejected') throw result.reason;
    return result.value;
  }

  /** Commits now (a failed OTP attempt must count even though the request answers an error). */
  async commit(): Promise<void> {
    await this.#finish(true);
  }

  async finish(ok: boolean): Promise<void> {
    await this.#finish(ok);
  }

  async #open(extra = ''): Promise<pg.QueryResult[]> {
    if (this.#done) throw new Error('request transaction already finished');
    const client = await this.#pool.connect();
    // Simple-query protocol: several statements, one round trip.
    const text = beginAs(this.#viewer) + (extra ? ` ${extra};` : '');
    try {
      const results = (await client.query(text)) as unknown as pg.QueryResult[];
      this.#client = client;
      return results;
    } catch (error) {
      client.release(true);
      throw error;
    }
  }

  async #finish(ok: boolean): Promise<void> {
    if (this.#done) return;
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
