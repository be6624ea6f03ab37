// The database the process uses: DATABASE_URL when set, otherwise the embedded PostgreSQL under
// the data folder. Same code path after connection: migrations run, then the pools connect.
import path from 'node:path';
import type { Config } from '../config.ts';
import { startEmbeddedPostgres } from './embedded.ts';
import { migrate } from './migrate.ts';

export interface Database {
  ownerUrl: string;
  /** Where the data lives, for the startup message. */
  location: string;
  stop(): Promise<void>;
}

export async function openDatabase(config: Config): Promise<Database> {
  if (config.databaseUrl) {
    await migrate(config.databaseUrl);
    const url = new URL(config.databaseUrl);
    return { ownerUrl: config.databaseUrl, location: `${url.host}${url.pathname}`, stop: async () => {} };
  }
  const embedded = await startEmbeddedPostgres(config.dataDir);
  try {
    await migrate(embedded.url);
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return { ownerUrl: embedded.url, location: `embedded PostgreSQL in ${path.join(config.dataDir, 'pg')}`, stop: embedded.stop };
}
