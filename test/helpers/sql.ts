// Runs SQL as an API role with a viewer, exactly like a request does (authenticator pool,
// `set local role`, app.user_id), rolled back afterwards.
import type pg from 'pg';
import { beginAs, type ViewerRole } from '../../db/viewer.ts';
import type { TestApp } from './app.ts';

export async function asViewer<T>(
  app: TestApp,
  role: ViewerRole,
  userId: string | null,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await app.pools.api.connect();
  try {
    await client.query(beginAs({ role, userId, sessionId: null }));
    return await fn(client);
  } finally {
    await client.query('rollback').catch(() => undefined);
    client.release();
  }
}

/** The rows a query returns for the viewer, or the SQLSTATE it fails with. */
export async function rowsOrError(client: pg.PoolClient, text: string, params: unknown[] = []): Promise<unknown[] | string> {
  await client.query('savepoint probe');
  try {
    const { rows } = await client.query(text, params);
    await client.query('release savepoint probe');
    return rows;
  } catch (error) {
    await client.query('rollback to savepoint probe');
    return (error as { code?: string }).code ?? 'error';
  }
}
