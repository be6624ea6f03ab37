// The database the process uses: DATABASE_URL when set, otherwise the embedded PostgreSQL under
// the data folder. Same code path after connection: the owner's login is checked (a failure is one
// line naming the database), migrations run (unless MIGRATE_ON_START=false), then the pools connect.
import pg from 'pg';
import { StartupError, type Config } from '../config.ts';
import { startEmbeddedPostgres } from './embedded.ts';
import { migrate, type MigrateOptions } from './migrate.ts';
import type { SqlApplyResult } from './sql-apply.ts';

export interface Database {
  ownerUrl: string;
  /** Where the data lives, for the startup message. */
  location: string;
  /** What the migration at startup changed in db/sql (undefined: it did not run). */
  migrated?: SqlApplyResult;
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

/** The migration's lock waits from the settings; its lines (waits, changes, orphans) go to `notice`. */
function migrateOptions(config: Config, notice: ((message: string) => void) | undefined): MigrateOptions {
  return { lockRetry: config.migrationLocks, ...(notice ? { log: notice } : {}) };
}

export async function openDatabase(config: Config, { signal, notice }: OpenOptions = {}): Promise<Database> {
  if (config.databaseUrl) {
    await checkReachable(config.databaseUrl, 'DATABASE_URL');
    const migrated = config.migrateOnStart ? await migrate(config.databaseUrl, migrateOptions(config, notice)) : undefined;
    const url = new URL(config.databaseUrl);
    return {
      ownerUrl: config.databaseUrl,
      location: `${url.host}${url.pathname}`,
      ...(migrated ? { migrated } : {}),
      stop: async () => {},
    };
  }
  const embedded = await startEmbeddedPostgres(config.dataDir, { signal, ...(notice ? { notice } : {}) });
  let migrated: SqlApplyResult;
  try {
    signal?.throwIfAborted();
    await checkReachable(embedded.url, 'embedded');
    migrated = await migrate(embedded.url, migrateOptions(config, notice));
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return { ownerUrl: embedded.url, location: `embedded PostgreSQL in ${embedded.databaseDir}`, migrated, stop: embedded.stop };
}
