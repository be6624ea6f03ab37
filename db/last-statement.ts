// A request's last statement and its commit, sent together (RequestTransaction.queryAndCommit
// picks the way; each is one round trip):
//   * one batch with a single Sync (commitInSingleSync): the viewer's settings, the deferred
//     session check and the statement, committed by the Sync, one answer (db/single-sync.ts);
//   * in the opening message itself (commitInOpening): an unnamed statement without parameters on
//     a transaction not yet open;
//   * pipelined (commitPipelined): the opening when the transaction is not yet open (or the
//     prelude when it is), the statement and `commit`, in one write.
import pg from 'pg';
import { SingleSyncStatement } from './single-sync.ts';
import type { StatementPrelude } from './statement-prelude.ts';
import { rollbackAndRelease, type Opening } from './transaction-opening.ts';
import type { Viewer } from './viewer.ts';

/** Whether a session check refused the session (app.viewer_session_gate's 401): the request is then anonymous. */
export const refusesSession = (error: unknown): boolean => (error as { message?: string }).message === 'UNAUTHORIZED';

/**
 * The whole transaction as one batch with one Sync on `client`: the viewer's settings, the
 * deferred session check at `gateLevel` (none when null) and the named statement; no statement
 * parsed. Releases the connection; a statement's error ends its batch (the server rolled it back
 * and the connection is clean), any other error destroys the connection.
 */
export async function commitInSingleSync<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  viewer: Viewer,
  gateLevel: number | null,
  name: string,
  text: string,
  params: (string | null)[],
): Promise<pg.QueryResult<R>> {
  const statement = new SingleSyncStatement<R>(viewer, gateLevel, name, text, params);
  const answered = statement.result();
  void client.query(statement);
  try {
    const result = await answered;
    client.release();
    return result;
  } catch (error) {
    client.release(!(error instanceof pg.DatabaseError));
    throw error;
  }
}

/**
 * An opening sent with `<statement>; commit` as its last statements: the statement's result (the
 * one before the commit's). When anything in the message failed, the aborted transaction is rolled
 * back and the error thrown.
 */
export async function commitInOpening<R extends pg.QueryResultRow>({ client, opened }: Opening): Promise<pg.QueryResult<R>> {
  try {
    const results = await opened;
    client.release();
    return results.at(-2) as pg.QueryResult<R>;
  } catch (error) {
    await rollbackAndRelease(client);
    throw error;
  }
}

/** What commitPipelined tells its transaction about the session. */
export interface PipelineOutcomes {
  /** The opening failed (its session check refused, or it could not run): the request is anonymous. */
  openingFailed(): void;
  /** The statement failed: throws its error (and judges whether it refused the session). */
  statementFailed(error: unknown): never;
}

/**
 * The statement and `commit` pipelined on `client` in one write: behind `opening` (sent corked,
 * when the transaction was not yet open), or on the open transaction behind its pending `prelude`.
 * Errors, first to last: the prelude's, the opening's, the commit's, the statement's. The
 * connection is released, destroyed when the commit failed.
 */
export async function commitPipelined<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  opening: Opening | undefined,
  prelude: StatementPrelude,
  statement: pg.QueryConfig,
  outcomes: PipelineOutcomes,
): Promise<pg.QueryResult<R>> {
  const stream = client.connection.stream;
  if (!opening) stream.cork();
  const preluded = opening ? undefined : prelude.send(client);
  const pending = [opening?.opened, client.query<R>(statement), client.query('commit'), preluded] as const;
  stream.uncork();
  const [opened, result, commit, preludeResult] = await Promise.allSettled(pending);
  if (preludeResult.status === 'rejected') {
    if (commit.status === 'rejected') client.release(true);
    else client.release();
    throw preludeResult.reason;
  }
  if (commit.status === 'rejected') {
    client.release(true);
    if (opened.status === 'rejected') outcomes.openingFailed();
    throw opened.status === 'rejected' ? opened.reason : commit.reason;
  }
  client.release();
  if (opened.status === 'rejected') {
    outcomes.openingFailed();
    throw opened.reason;
  }
  if (result.status === 'rejected') outcomes.statementFailed(result.reason);
  return result.value;
}
