// The database the process uses: DATABASE_URL when set, otherwise the embedded PostgreSQL under
// the data folder. Same code path after connection: the owner's login is checked (a failure is one
// line naming the database), migrations run (unless MIGRATE_ON_START=false), then the pools connect.
import pg from 'pg';
import { StartupError, type Config } from '../config.ts';
import { startEmbeddedPostgres } from './embedded.ts';
import { migrate } from './migrate.ts';

export interface Database {
  ownerUrl: string;
  /** Where the data lives, for the startup message. */
  location: string;
  stop(): Promise<void>;
}

/** Connects once as the owner, so an unreachable or refusing database fails startup in one line. */
async function checkReachable(ownerUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: ownerUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
  } catch (error) {
    const { host, pathname } = new URL(ownerUrl);
    throw new StartupError(`cannot reach the database ${host}${pathname} (${name}): ${(error as Error).message || (error as Error).name}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface OpenOptions {
  /** A shutdown during startup: the embedded database then stops before migrating. */
  signal?: AbortSignal | undefined;
  /** Told when a cluster left running by a killed process is taken over (db/embedded.ts). */
  notice?: (message: string) => void;
}

export async function openDatabase(config: Config, { signal, notice }: OpenOptions = {}): Promise<Database> {
  if (config.databaseUrl) {
    await checkReachable(config.databaseUrl, 'DATABASE_URL');
    if (config.migrateOnStart) await migrate(config.databaseUrl);
    const url = new URL(config.databaseUrl);
    return { ownerUrl: config.databaseUrl, location: `${url.host}${url.pathname}`, stop: async () => {} };
  }
  const embedded = await startEmbeddedPostgres(config.dataDir, { signal, ...(notice ? { notice } : {}) });
  try {
    signal?.throwIfAborted();
    await checkReachable(embedded.url, 'embedded');
    await migrate(embedded.url);
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return { ownerUrl: embedded.url, location: `embedded PostgreSQL in ${embedded.databaseDir}`, stop: embedded.stop };
}
