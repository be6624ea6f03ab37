// The opening of a request's transaction: one simple-query message (several statements, one round
// trip) that begins as the viewer (db/viewer.ts beginAs), then runs what was held for it: the
// deferred session check (db/deferred-session-check.ts), the prelude (db/statement-prelude.ts) and
// a statement of the caller's. And the way out of an opening that failed.
import type pg from 'pg';
import { beginAs, type Viewer } from './viewer.ts';

export interface Opening {
  client: pg.PoolClient;
  /** The opening's results, one per statement (not awaited by the sender: what follows joins its pipeline). */
  opened: Promise<pg.QueryResult[]>;
}

/** The opening's text. `sessionCheck` carries its own `;` (db/viewer.ts sessionGate); the prelude and `extra` get theirs here. */
export function openingText(viewer: Viewer, sessionCheck: string, prelude: string, extra: string): string {
  return beginAs(viewer) + (sessionCheck ? ` ${sessionCheck}` : '') + (prelude ? ` ${prelude};` : '') + (extra ? ` ${extra};` : '');
}

/**
 * Sends the opening on `client` (not awaited). `corked` holds it in the socket until the caller
 * uncorks, so that the statements behind it leave in the same write.
 */
export function sendOpening(client: pg.PoolClient, text: string, corked: boolean): Opening {
  if (corked) client.connection.stream.cork();
  const opened = client.query(text) as unknown as Promise<pg.QueryResult[]>;
  return { client, opened };
}

/**
 * After a failed opening message: a refused session check (or a failed statement) leaves an
 * aborted transaction; end it before the pool reuses the connection (a connection that cannot even
 * roll back is destroyed).
 */
export async function rollbackAndRelease(client: pg.PoolClient): Promise<void> {
  await client.query('rollback').then(
    () => client.release(),
    () => client.release(true),
  );
}
