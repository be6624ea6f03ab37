// A PostgreSQL primary and a streaming replica of it, from the machine's PostgreSQL 15 binaries
// (test/helpers/engines.ts; PG15_BIN to use others): initdb in a temporary folder with
// wal_level=replica on a free port, then `pg_basebackup -R` and a hot standby on another free port,
// with `recovery_min_apply_delay` to simulate lag. Passwords are checked (scram) as in production,
// so the API's derived login roles are exercised. As root the servers run as the `postgres` user.
// stop() ends both servers and removes the folder.
import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFile, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../db/free-port.ts';
import { engines } from './engines.ts';

const run = promisify(execFile);
const bin = process.env.PG15_BIN ?? engines.postgres15;

export interface StreamingPair {
  /** The owner's URL on the primary (DATABASE_URL). */
  primaryUrl: string;
  /** The owner's URL on the replica (an entry of DATABASE_REPLICA_URLS). */
  replicaUrl: string;
  /** A connection as the owner, for arranging and inspecting (primary or replica). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    where: 'primary' | 'replica',
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  /** Sets recovery_min_apply_delay on the replica (reloaded, no restart). */
  setApplyDelay(milliseconds: number): Promise<void>;
  /** Waits until the replica has replayed everything the primary has written so far. */
  caughtUp(timeoutMillis?: number): Promise<void>;
  /** Stops the replica at once (SIGQUIT: immediate shutdown, as a crash); startReplica brings it back on the same port. */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  stop(): Promise<void>;
}

interface Account {
  uid: number;
  gid: number;
}

async function postgresAccount(): Promise<Account | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  };
}

interface Server {
  process: ChildProcess;
  exited: Promise<void>;
  output: string[];
}

function startServer(dataDir: string, port: number, settings: string[], account: Account | undefined): Server {
  const args = [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${dataDir}`,
    ...settings.flatMap((s) => ['-c', s]),
  ];
  const child = spawn(path.join(bin, 'postgres'), args, { stdio: ['ignore', 'pipe', 'pipe'], ...(account ?? {}) });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { process: child, exited, output };
}

async function stopServer(server: Server | undefined, signal: NodeJS.Signals = 'SIGINT'): Promise<void> {
  if (!server || server.process.exitCode !== null || server.process.signalCode !== null) return;
  server.process.kill(signal);
  await server.exited;
}

async function ready(url: string, server: Server, timeoutMillis = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (server.process.exitCode !== null || Date.now() > deadline) {
        throw new Error(`PostgreSQL did not start: ${(error as Error).message}\n${server.output.join('')}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

export async function startStreamingPair({ applyDelayMillis = 0 }: { applyDelayMillis?: number } = {}): Promise<StreamingPair> {
  const account = await postgresAccount();
  const folder = await mkdtemp(path.join(os.tmpdir(), 'opinion-replica-'));
  if (account) await chown(folder, account.uid, account.gid);
  const as = account ? { uid: account.uid, gid: account.gid } : {};
  const primaryDir = path.join(folder, 'primary');
  const replicaDir = path.join(folder, 'replica');
  const password = randomBytes(12).toString('hex');
  const passwordFile = path.join(folder, 'password');
  await writeFile(passwordFile, password, { mode: 0o600 });
  if (account) await chown(passwordFile, account.uid, account.gid);

  let primary: Server | undefined;
  let replica: Server | undefined;
  const pools = new Map<string, pg.Pool>();
  const stop = async () => {
    await Promise.all([...pools.values()].map((pool) => pool.end().catch(() => undefined)));
    await stopServer(replica, 'SIGQUIT');
    await stopServer(primary, 'SIGQUIT');
    await rm(folder, { recursive: true, force: true });
  };
  try {
    await run(
      path.join(bin, 'initdb'),
      [
        '-D',
        primaryDir,
        '-U',
        'owner',
        `--pwfile=${passwordFile}`,
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-sync',
      ],
      as,
    );
    const primaryPort = await freePort();
    const common = ['fsync=off', 'full_page_writes=off', 'shared_buffers=32MB', 'max_connections=120'];
    primary = startServer(primaryDir, primaryPort, [...common, 'wal_level=replica', 'max_wal_senders=4', 'wal_keep_size=256MB'], account);
    const primaryUrl = `postgres://owner:${password}@127.0.0.1:${primaryPort}/postgres`;
    await ready(primaryUrl, primary);

    await run(
      path.join(bin, 'pg_basebackup'),
      [
        '-D',
        replicaDir,
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
        '-d',
        `host=127.0.0.1 port=${primaryPort} user=owner password=${password}`,
      ],
      as,
    );
    const replicaPort = await freePort();
    const replicaUrl = `postgres://owner:${password}@127.0.0.1:${replicaPort}/postgres`;
    // In the configuration file, not on the command line (which would override ALTER SYSTEM's later changes).
    await appendFile(path.join(replicaDir, 'postgresql.auto.conf'), `recovery_min_apply_delay = '${Number(applyDelayMillis)}ms'\n`);
    const launchReplica = async () => {
      replica = startServer(replicaDir, replicaPort, [...common, 'hot_standby=on', 'wal_receiver_status_interval=1s'], account);
      await ready(replicaUrl, replica);
    };
    await launchReplica();

    const pool = (where: 'primary' | 'replica') => {
      let found = pools.get(where);
      if (!found) {
        found = new pg.Pool({ connectionString: where === 'primary' ? primaryUrl : replicaUrl, max: 2 });
        found.on('error', () => {});
        pools.set(where, found);
      }
      return found;
    };
    const pair: StreamingPair = {
      primaryUrl,
      replicaUrl,
      query: (where, text, values) => pool(where).query(text, values),
      async setApplyDelay(milliseconds) {
        await pool('replica').query(`alter system set recovery_min_apply_delay = '${Number(milliseconds)}ms'`);
        await pool('replica').query('select pg_reload_conf()');
      },
      async caughtUp(timeoutMillis = 30_000) {
        const { rows } = await pool('primary').query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn');
        const deadline = Date.now() + timeoutMillis;
        for (;;) {
          const { rows: reached } = await pool('replica').query<{ ok: boolean }>('select pg_last_wal_replay_lsn() >= $1::pg_lsn as ok', [
            rows[0]!.lsn,
          ]);
          if (reached[0]!.ok) return;
          if (Date.now() > deadline) throw new Error('the replica did not catch up');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
      async stopReplica() {
        const replicaPool = pools.get('replica');
        pools.delete('replica');
        await replicaPool?.end().catch(() => undefined);
        await stopServer(replica, 'SIGQUIT');
      },
      startReplica: launchReplica,
      stop,
    };
    return pair;
  } catch (error) {
    await stop();
    throw error;
  }
}
