// A real PgBouncer (Debian's /usr/sbin/pgbouncer, 1.18 here) in transaction mode in front of a
// PostgreSQL, on a free loopback port, for tests and benchmarks that go through a pooler. Clients
// log in with the roles and passwords DATABASE_URL derives (db/roles.ts): the helper writes them
// in PgBouncer's auth file as plain text, so it authenticates clients with SCRAM and logs in to the
// server as them (the PostgreSQL of the tests uses scram-sha-256). `stop()` and `start()` take it
// down and bring it back on the same port (a pooler restart); `close()` ends it for good.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { freePort } from '../../db/free-port.ts';
import { rolePassword, type LoginRole } from '../../db/roles.ts';
import { engines } from './engines.ts';

const run = promisify(execFile);
export const pgbouncerBinary = process.env.PGBOUNCER ?? engines.pgbouncer;

export interface PgBouncerOptions {
  /** Server connections per database and user (PgBouncer's default_pool_size). */
  poolSize?: number;
  /** Client connections it accepts (max_client_conn). */
  maxClients?: number;
  /**
   * Look the roles' passwords up in PostgreSQL as the owner (auth_user, and the auth_query of
   * deploy/pgbouncer/pgbouncer.ini, as docker-compose.yml runs it) instead of listing them.
   */
  authQuery?: boolean;
}

export interface PgBouncer {
  /** DATABASE_POOLER_URL for the owner's database: host, port and database, no credentials. */
  url: string;
  port: number;
  /** The pooler is down (its process ended); clients connected through it lost their connection. */
  stop(): Promise<void>;
  /** Up again on the same port and configuration. */
  start(): Promise<void>;
  /** Its log so far (connections, errors). */
  log(): Promise<string>;
  /** Stops it and removes its files. */
  close(): Promise<void>;
}

/** PgBouncer refuses to run as root: as root, it runs as the `postgres` account (as the embedded PostgreSQL does). */
async function account(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  };
}

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The auth_query of the compose file's pooler. */
async function deployedAuthQuery(): Promise<string> {
  const ini = await readFile(path.resolve(import.meta.dirname, '../../deploy/pgbouncer/pgbouncer.ini'), 'utf8');
  const query = /^auth_query = (.*)$/m.exec(ini)?.[1];
  if (!query) throw new Error('deploy/pgbouncer/pgbouncer.ini has no auth_query');
  return query;
}

export async function startPgBouncer(
  ownerUrl: string,
  { poolSize = 20, maxClients = 2000, authQuery = false }: PgBouncerOptions = {},
): Promise<PgBouncer> {
  const owner = new URL(ownerUrl);
  const database = owner.pathname.slice(1);
  const port = await freePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'opinion-pgbouncer-'));
  const runAs = await account();
  await chmod(dir, 0o755);
  if (runAs) await chown(dir, runAs.uid, runAs.gid);
  const roles: LoginRole[] = ['authenticator', 'app_worker'];
  const ownerUser = decodeURIComponent(owner.username);
  const users = authQuery
    ? `"${ownerUser}" "${decodeURIComponent(owner.password)}"`
    : roles.map((role) => `"${role}" "${rolePassword(ownerUrl, role)}"`).join('\n');
  const config = [
    '[databases]',
    `${database} = host=${owner.hostname} port=${owner.port || 5432} dbname=${database}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'pool_mode = transaction',
    'auth_type = scram-sha-256',
    `auth_file = ${path.join(dir, 'userlist.txt')}`,
    ...(authQuery ? [`auth_user = ${ownerUser}`, `auth_query = ${await deployedAuthQuery()}`] : []),
    `default_pool_size = ${poolSize}`,
    `max_client_conn = ${maxClients}`,
    // Transaction mode: nothing is reset between clients, because nothing may outlive a transaction.
    'server_reset_query =',
    `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    'log_connections = 0',
    'log_disconnections = 0',
    // A server that went away is noticed at the next use, and a new one is tried at once.
    'server_login_retry = 1',
  ].join('\n');
  for (const [file, text] of [
    ['userlist.txt', `${users}\n`],
    ['pgbouncer.ini', `${config}\n`],
  ] as const) {
    const target = path.join(dir, file);
    await writeFile(target, text, { mode: 0o600 });
    if (runAs) await chown(target, runAs.uid, runAs.gid);
  }

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';
  async function start(): Promise<void> {
    if (child) return;
    const started = spawn(pgbouncerBinary, [path.join(dir, 'pgbouncer.ini')], { ...runAs, stdio: ['ignore', 'pipe', 'pipe'] });
    started.stdout?.on('data', (chunk) => (output += chunk));
    started.stderr?.on('data', (chunk) => (output += chunk));
    child = started;
    // A test process that ends without close() (a crash, a killed worker) takes its pooler with it.
    const endWithProcess = () => started.kill('SIGKILL');
    process.once('exit', endWithProcess);
    exited = new Promise((resolve) =>
      started.once('exit', () => {
        process.off('exit', endWithProcess);
        resolve();
      }),
    );
    const deadline = Date.now() + 10_000;
    while (!(await listening(port))) {
      if (started.exitCode !== null || started.signalCode !== null)
        throw new Error(`pgbouncer ended at start: ${output}${await readFile(path.join(dir, 'pgbouncer.log'), 'utf8').catch(() => '')}`);
      if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port} within 10 s: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  async function stop(): Promise<void> {
    if (!child) return;
    // SIGINT: a fast shutdown (clients lose their connections at once), as a crash or restart would.
    child.kill('SIGINT');
    await exited;
    child = undefined;
  }
  await start();
  return {
    url: `postgres://127.0.0.1:${port}/${database}`,
    port,
    start,
    stop,
    log: async () => `${output}${await readFile(path.join(dir, 'pgbouncer.log'), 'utf8').catch(() => '')}`,
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
