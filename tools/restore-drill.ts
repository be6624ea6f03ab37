// npm run drill:restore: proves that a backup restores (docs/backups.md "The drill").
//
// A throwaway PostgreSQL 15 cluster from the machine's binaries, archiving its WAL with pgBackRest
// (archive-push) into a throwaway repository configured from deploy/backup/pgbackrest.conf; the
// project's migration; the API and the worker as processes of their own on it (and an S3 store);
// data written through the API: posts, votes left pending as sealed ballots (fewer than
// BALLOT_BATCH on a post), a tallied post, hub discussion messages. Then a full backup, more
// writes, a differential backup, more writes, a noted time, more writes (one of them the vote that
// makes a post's ballots tally), a "disaster" (the server stopped with immediate shutdown), and a
// point-in-time restore to the noted time into a new data directory: PostgreSQL and the service
// start on it and the drill checks that what was committed before the time is there, what came
// after is not, counters agree with their rows (counter_drift() and unread_counter_drift()
// empty), pending ballots open with the same BALLOT_KEY and tally, live delivery and push resume
// (a stand-in FCM: every notification the restored database holds is pushed, none that FCM
// accepted by the restore point goes again, and the one push held in flight across the restore
// point does). It prints the restore's duration and the recovery point, runs `pgbackrest verify`,
// searches the repository's files for BALLOT_KEY, and exits 1 on any mismatch.
//
// Options:
//   --plain-repository   no compression and no encryption in the repository, so that the search
//                        for BALLOT_KEY reads what PostgreSQL wrote (a marker written through the
//                        API must be found there, or the search proves nothing)
//   --pgbench-scale=N    before the backup, pgbench's tables at scale N in a database of the same
//                        cluster (about 15 MB per unit): the restore of a larger cluster
//   --keep               leave the temporary folder (its path is printed), clusters stopped
// Environment: PG_BIN (default /usr/lib/postgresql/15/bin, Debian's postgresql-15), PGBACKREST
// (default: pgbackrest on the PATH, else Debian's /usr/bin/pgbackrest), DRILL_BALLOT_KEY (the key's
// 32 bytes in hex; default: a random key). Without PG_BIN or PGBACKREST, the drill installs the
// Debian packages that are missing (as root, with apt-get, as `npm test` does:
// tools/debian-packages.ts), or stops with one line naming them; a PG_BIN or PGBACKREST that names
// no program stops it with one line naming the setting.
// As root, PostgreSQL and pgBackRest run as the `postgres` user.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants, createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { appendFile, chown, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import S3rver from 's3rver';
import { freePort } from '../db/free-port.ts';
import { startFcmStandIn } from '../test/helpers/fcm.ts';
import { ensureDebianPackages } from './debian-packages.ts';
import { keepFolders } from '../server/uploads/s3rver-folders.ts';

const execFileAsync = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const plainRepository = args.includes('--plain-repository');
const keep = args.includes('--keep');
const pgbenchScale = Number(args.find((arg) => arg.startsWith('--pgbench-scale='))?.split('=')[1] ?? 0);
const pgBin = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
/** A full path: as root the drill runs it as `postgres`, who may not search every folder of root's PATH. */
const pgbackrest = process.env.PGBACKREST ?? onPath('pgbackrest') ?? '/usr/bin/pgbackrest';
const stanza = 'drill';
const ballotBatch = 5;
/** How long the stand-in FCM takes to answer the push in flight at the restore point (under a third of pushLeaseSeconds). */
const pushDelayMs = 4000;
const pushLeaseSeconds = 15;

const print = (line: string) => process.stdout.write(`${line}\n`);

/** The first executable `name` in a folder of the PATH, or undefined. */
function onPath(name: string): string | undefined {
  for (const folder of (process.env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(folder || '.', name);
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return path.resolve(file);
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * The programs the drill runs: Debian's packages installed when missing (as root; elsewhere one
 * line naming them), or, set through PG_BIN or PGBACKREST, there.
 */
function ensurePrograms(): void {
  const programs = [
    { file: path.join(pgBin, 'initdb'), pkg: 'postgresql-15', setting: 'PG_BIN' },
    { file: pgbackrest, pkg: 'pgbackrest', setting: 'PGBACKREST' },
  ];
  for (const { file, pkg, setting } of programs) {
    if (process.env[setting] !== undefined && !existsSync(file))
      throw new Error(
        `${setting} names no program (${file} is missing): install Debian's ${pkg} (apt-get install ${pkg}) or set ${setting} to where it is`,
      );
  }
  ensureDebianPackages(
    programs.filter(({ setting }) => process.env[setting] === undefined).map(({ file, pkg }) => [file, pkg] as const),
    'the restore drill',
  );
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const failures: string[] = [];
function check(ok: boolean, what: string, detail?: unknown): void {
  if (ok) print(`  ok    ${what}`);
  else {
    failures.push(what);
    print(`  FAIL  ${what}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Processes: PostgreSQL's programs and pgBackRest run as `postgres` when this runs as root.

interface Account {
  uid: number;
  gid: number;
}
let account: Account | undefined;
if (process.getuid?.() === 0) {
  const id = async (flag: string) => Number((await execFileAsync('id', [flag, 'postgres'])).stdout.trim());
  account = { uid: await id('-u'), gid: await id('-g') };
}

async function runTool(command: string, commandArgs: string[], env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, commandArgs, {
      ...account,
      cwd: os.tmpdir(),
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const failed = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(
      `${path.basename(command)} ${commandArgs.filter((arg) => !arg.startsWith('--config')).join(' ')} failed: ${(failed.stderr || failed.stdout || failed.message).trim().split('\n').slice(-6).join('\n')}`,
      { cause: error },
    );
  }
}

/** Folders PostgreSQL and pgBackRest write, owned by the account they run as. */
async function ownedFolder(folder: string): Promise<string> {
  await mkdir(folder, { recursive: true, mode: 0o700 });
  if (account) await chown(folder, account.uid, account.gid);
  return folder;
}

interface Service {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function startService(only: 'api' | 'worker', env: Record<string, string>, logFile: string): Service {
  const child = spawn(process.execPath, ['main.ts', `--only=${only}`], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    void appendFile(logFile, chunk);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function waitFor(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 120_000, service?: Service): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await Promise.resolve()
      .then(condition)
      .catch(() => false))
  ) {
    if (service && service.child.exitCode !== null)
      throw new Error(`the process ended while waiting for ${what}:\n${service.output().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${service ? `:\n${service.output().slice(-2000)}` : ''}`);
    await sleep(100);
  }
}

async function stopService(service: Service | undefined): Promise<void> {
  if (!service || service.child.exitCode !== null) return;
  service.child.kill('SIGTERM');
  await service.exited;
}

// ---------------------------------------------------------------------------------------------
// The API, as a phone speaks it (every request its own client address behind a trusted proxy).

interface Envelope {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
  error?: { code: string };
}
let addressCounter = 0;
function api(base: string) {
  return async (method: string, route: string, body?: unknown, token?: string): Promise<Envelope> => {
    addressCounter += 1;
    const response = await fetch(`${base}/api/v1${route}`, {
      method,
      headers: {
        'content-type': 'application/json',
        'x-forwarded-for': `2001:db8:d:${addressCounter.toString(16)}::1`,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json().catch(() => ({}))) as { data?: unknown; error?: { code: string } };
    return { status: response.status, data: json.data, error: json.error };
  };
}
type Call = ReturnType<typeof api>;

async function must(call: Promise<Envelope>, what: string, status = [200, 201]): Promise<Envelope> {
  const answer = await call;
  if (!status.includes(answer.status)) throw new Error(`${what} answered ${answer.status} ${answer.error?.code ?? ''}`);
  return answer;
}

interface User {
  id: string;
  token: string;
  phone?: { phoneCountryCode: string; phoneNumber: string };
}
let phoneCounter = 0;
const testPhone = (n: number) => ({ phoneCountryCode: '+1', phoneNumber: `555000${String(n).padStart(4, '0')}` });
const otpTestCodes = Array.from({ length: 100 }, (_, n) => `+1555000${String(n).padStart(4, '0')}=1234`).join(',');

async function newUser(call: Call, level: 2 | 4, name: string): Promise<User> {
  const anonymous = await must(
    call('POST', '/auth/anonymous/session', { deviceId: `drill-${name}-${randomBytes(4).toString('hex')}` }),
    'an anonymous session',
  );
  const user: User = { id: anonymous.data.user.id, token: anonymous.data.accessToken };
  await must(
    call(
      'PUT',
      '/users/me/onboarding/profile-basics',
      { fullName: `Drill ${name}`, username: `drill_${name}`, acceptTerms: true },
      user.token,
    ),
    'profile basics',
  );
  if (level === 2) return user;
  await must(call('PUT', '/users/me/onboarding/media', {}, user.token), 'onboarding media');
  phoneCounter += 1;
  const phone = testPhone(phoneCounter);
  await must(call('POST', '/auth/otp/request', phone), 'an OTP request');
  const verified = await must(call('POST', '/auth/otp/verify', { ...phone, code: '1234' }, user.token), 'an OTP verification');
  await must(call('PUT', '/users/me/onboarding/contacts', undefined, verified.data.accessToken), 'onboarding contacts');
  return { id: user.id, token: verified.data.accessToken, phone };
}

const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

async function hubPhoto(call: Call, user: User): Promise<string> {
  const intent = await must(
    call('POST', '/uploads/presign', { purpose: 'hub_photo', contentType: 'image/png', contentLength: png.length }, user.token),
    'an upload presign',
  );
  const put = await fetch(intent.data.uploadUrl, { method: 'PUT', body: new Uint8Array(png), headers: intent.data.headers });
  if (!put.ok) throw new Error(`the upload PUT answered ${put.status}`);
  const checksum = createHash('sha256').update(png).digest('hex');
  return (
    await must(
      call('POST', '/uploads/complete', { uploadId: intent.data.uploadId, purpose: 'hub_photo', checksum }, user.token),
      'an upload completion',
    )
  ).data.assetId;
}

const slider = { sliderText: 'Should the drill pass?', slider: { leftLabel: 'No', rightLabel: 'Yes' } };

// ---------------------------------------------------------------------------------------------
// The repository's files, searched for byte strings (chunked, with an overlap for a match across chunks).

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

async function fileHolds(file: string, needles: Buffer[]): Promise<boolean> {
  const overlap = Math.max(...needles.map((needle) => needle.length));
  let tail = Buffer.alloc(0);
  for await (const chunk of createReadStream(file, { highWaterMark: 4 * 1024 * 1024 })) {
    const window = Buffer.concat([tail, chunk as Buffer]);
    if (needles.some((needle) => window.includes(needle))) return true;
    tail = window.subarray(Math.max(0, window.length - overlap));
  }
  return false;
}

async function folderBytes(folder: string): Promise<number> {
  let total = 0;
  for (const file of await filesUnder(folder)) total += (await stat(file)).size;
  return total;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

// ---------------------------------------------------------------------------------------------

/** deploy/backup/pgbackrest.conf's [global] section, with the drill's own paths (and, plain, neither compression nor encryption). */
function drillConfig(
  folders: { repo: string; log: string; lock: string; spool: string },
  source: { dataDir: string; port: number; socketDir: string },
): string {
  const shipped = readFileSync(path.join(root, 'deploy/backup/pgbackrest.conf'), 'utf8');
  const global: [string, string][] = [];
  let section = '';
  for (const line of shipped.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('[')) section = trimmed;
    else if (section === '[global]' && trimmed && !trimmed.startsWith('#')) {
      const [key, ...value] = trimmed.split('=');
      global.push([key as string, value.join('=')]);
    }
  }
  const overrides: Record<string, string | undefined> = {
    'repo1-type': 'posix',
    'repo1-path': folders.repo,
    'log-path': folders.log,
    'lock-path': folders.lock,
    'spool-path': folders.spool,
    'log-level-console': 'warn',
    ...(plainRepository ? { 'compress-type': 'none', 'compress-level': undefined, 'repo1-cipher-type': undefined } : {}),
  };
  const lines = global.filter(([key]) => !(key in overrides)).map(([key, value]) => `${key}=${value}`);
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) lines.push(`${key}=${value}`);
  return [
    '[global]',
    ...lines,
    '',
    `[${stanza}]`,
    `pg1-path=${source.dataDir}`,
    `pg1-port=${source.port}`,
    `pg1-socket-path=${source.socketDir}`,
    'pg1-user=postgres',
    '',
  ].join('\n');
}

/** A notification stream (GET /notifications/stream) and the first notification event it sends. */
async function openStream(
  base: string,
  token: string,
): Promise<{ notification(timeoutMs: number): Promise<{ type?: string; postId?: string } | undefined>; close(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${base}/api/v1/notifications/stream`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal: controller.signal,
  });
  if (response.status !== 200 || !response.body) throw new Error(`the notification stream answered ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  return {
    async notification(timeoutMs) {
      const timer = setTimeout(() => controller.abort(), timeoutMs);
      try {
        for (;;) {
          const match = /event: notification\ndata: (.*)\n/.exec(text);
          if (match) return JSON.parse(match[1] as string) as { type?: string; postId?: string };
          const { value, done } = await reader.read();
          if (done) return undefined;
          text += value;
        }
      } catch {
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => controller.abort(),
  };
}

/** Its own pgBackRest processes still running (archive-push's asynchronous process outlives the command). */
async function pgbackrestProcesses(configFile: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(entry)) continue;
    const commandLine = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (commandLine.includes(configFile)) pids.push(Number(entry));
  }
  return pids;
}

async function main(): Promise<void> {
  ensurePrograms();
  const work = await mkdtemp(path.join(os.tmpdir(), 'opinion-drill-'));
  if (account) await chown(work, account.uid, account.gid); // PostgreSQL and pgBackRest work in it
  print(
    `restore drill in ${work} (PostgreSQL ${path.basename(path.dirname(pgBin))} from ${pgBin}, ${(await runTool(pgbackrest, ['version'])).trim()}, ${os.cpus().length} cores)`,
  );
  const folders = {
    repo: await ownedFolder(path.join(work, 'repo')),
    log: await ownedFolder(path.join(work, 'log')),
    lock: await ownedFolder(path.join(work, 'lock')),
    spool: await ownedFolder(path.join(work, 'spool')),
    include: await ownedFolder(path.join(work, 'conf.d')),
  };
  const socketDir = await ownedFolder(path.join(work, 'socket'));
  const source = { dataDir: path.join(work, 'pg'), port: await freePort(), socketDir };
  const restoredDir = path.join(work, 'restored');
  const configFile = path.join(work, 'pgbackrest.conf');
  await writeFile(configFile, drillConfig(folders, source));
  if (account) await chown(configFile, account.uid, account.gid);
  if (!plainRepository) {
    // The repository's passphrase, in a file of its own beside the configuration (as a secret
    // mounted into /etc/pgbackrest/conf.d would be): archive-push, run by PostgreSQL, reads it too.
    const secret = path.join(folders.include, 'cipher.conf');
    await writeFile(secret, `[global]\nrepo1-cipher-pass=${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    if (account) await chown(secret, account.uid, account.gid);
  }
  const backrest = (commandArgs: string[]) =>
    runTool(pgbackrest, [`--config=${configFile}`, `--config-include-path=${folders.include}`, `--stanza=${stanza}`, ...commandArgs]);
  const archiveCommand = (dataDir: string) =>
    `${pgbackrest} --config=${configFile} --config-include-path=${folders.include} --stanza=${stanza} --pg1-path=${dataDir} archive-push %p`;

  // DRILL_BALLOT_KEY (64 hex digits) lets a caller search the kept repository for the key itself.
  const ballotKeyBytes = process.env.DRILL_BALLOT_KEY ? Buffer.from(process.env.DRILL_BALLOT_KEY, 'hex') : randomBytes(32);
  if (ballotKeyBytes.length !== 32) throw new Error('DRILL_BALLOT_KEY must be 64 hex digits');
  const ballotKey = `drill:${ballotKeyBytes.toString('hex')}`;
  const s3Dir = path.join(work, 's3');
  const s3Port = await freePort();
  const s3 = keepFolders(
    new S3rver({ address: '127.0.0.1', port: s3Port, directory: s3Dir, silent: true, configureBuckets: [{ name: 'drill' }] }),
  );
  await s3.run();
  const fcm = await startFcmStandIn({ dir: work });
  const serviceEnv = (databasePort: number, port: number) => ({
    ...fcm.env,
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    DATA_DIR: path.join(work, 'app'),
    DATABASE_URL: `postgres://postgres@127.0.0.1:${databasePort}/opinion`,
    MIGRATE_ON_START: 'false',
    PORT: String(port),
    JWT_SECRET: 'restore-drill',
    BALLOT_KEY: ballotKey,
    BALLOT_BATCH: String(ballotBatch),
    OTP_TEST_CODES: otpTestCodes,
    TRUST_PROXY: 'loopback',
    S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
    S3_BUCKET: 'drill',
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    S3_FORCE_PATH_STYLE: 'true',
    PUSH_LEASE_SECONDS: String(pushLeaseSeconds),
  });
  const running: Service[] = [];
  const clusters: string[] = [];
  const pgCtl = (dataDir: string, commandArgs: string[]) => runTool(path.join(pgBin, 'pg_ctl'), ['-D', dataDir, ...commandArgs]);
  // Everything the drill started stops, also when the drill is interrupted (Ctrl-C, a test's
  // timeout): PostgreSQL runs detached from it and would otherwise outlive it.
  let cleaning: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      await Promise.all(running.map(stopService));
      for (const dataDir of clusters) await pgCtl(dataDir, ['-m', 'immediate', 'stop']).catch(() => undefined);
      await s3.close().catch(() => undefined);
      await fcm.close().catch(() => undefined);
      for (const pid of await pgbackrestProcesses(configFile)) process.kill(pid, 'SIGTERM');
      if (keep) print(`kept ${work} (repository: ${folders.repo})`);
      else await rm(work, { recursive: true, force: true });
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      print(`${signal}: stopping what the drill started`);
      void cleanUp().finally(() => process.exit(1));
    });
  }

  async function startApp(
    databasePort: number,
    logName: string,
  ): Promise<{ call: Call; base: string; api: Service; worker: Service; migrateMs: number }> {
    const port = await freePort();
    const env = serviceEnv(databasePort, port);
    const migrateStarted = Date.now();
    await execFileAsync(process.execPath, ['db/cli/migrate.ts'], { cwd: root, env: { ...process.env, ...env } }).catch(
      (error: { stdout?: string; stderr?: string }) => {
        throw new Error(`the migration failed: ${error.stdout ?? ''}${error.stderr ?? ''}`);
      },
    );
    const migrateMs = Date.now() - migrateStarted;
    const apiProcess = startService('api', env, path.join(work, `${logName}-api.log`));
    const worker = startService('worker', { ...env, PORT: String(await freePort()) }, path.join(work, `${logName}-worker.log`));
    running.push(apiProcess, worker);
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 'the API to be ready (/readyz)', 120_000, apiProcess);
    await waitFor(() => worker.output().includes('worker running'), 'the worker', 120_000, worker);
    return { call: api(base), base, api: apiProcess, worker, migrateMs };
  }

  const owner = (port: number, database = 'opinion') => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/${database}` });
    client.on('error', () => undefined); // the server going away (the disaster, an interruption) is no crash of the drill
    return client;
  };
  const one = async <T>(client: pg.Client, sql: string, params: unknown[] = []): Promise<T> =>
    (await client.query(sql, params)).rows[0] as T;

  try {
    // ---- A cluster archiving its WAL with pgBackRest -----------------------------------------
    await runTool(path.join(pgBin, 'initdb'), [
      '-D',
      source.dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C',
      '--data-checksums',
    ]);
    clusters.push(source.dataDir);
    await appendFile(
      path.join(source.dataDir, 'postgresql.conf'),
      [
        '',
        '# restore drill',
        `port = ${source.port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${socketDir}'`,
        'max_connections = 100',
        'wal_level = replica',
        'archive_mode = on',
        `archive_command = '${archiveCommand(source.dataDir)}'`,
        'archive_timeout = 60',
        '',
      ].join('\n'),
    );
    await pgCtl(source.dataDir, ['-l', path.join(work, 'pg.log'), '-w', 'start']);
    const admin = owner(source.port, 'postgres');
    await admin.connect();
    await admin.query('create database opinion');
    if (pgbenchScale > 0) await admin.query('create database bench');
    await admin.end();
    await backrest(['stanza-create']);
    await backrest(['check']);
    print('cluster: initdb, archive_mode on with pgBackRest archive-push, stanza created, check passed');

    if (pgbenchScale > 0) {
      const started = Date.now();
      await runTool(path.join(pgBin, 'pgbench'), [
        '-i',
        '-q',
        '-s',
        String(pgbenchScale),
        '-h',
        socketDir,
        '-p',
        String(source.port),
        '-U',
        'postgres',
        'bench',
      ]);
      print(`pgbench tables at scale ${pgbenchScale} in ${seconds(Date.now() - started)}`);
    }

    // ---- The service on it, and data written through the API -----------------------------------
    let app = await startApp(source.port, 'source');
    let call = app.call;
    print(`service: migrated in ${seconds(app.migrateMs)}, API and worker running`);
    const marker = `drill-marker-${randomBytes(8).toString('hex')}`;
    print(`written through the API in a post's text: ${marker}`);
    const author = await newUser(call, 4, 'author');
    const member = await newUser(call, 4, 'member');
    const deviceToken = `drill-device-${randomBytes(16).toString('hex')}`;
    await must(
      call('POST', '/users/me/push-devices', { provider: 'fcm', token: deviceToken, platform: 'android' }, author.token),
      'a push device',
    );
    const voters: User[] = [];
    for (let i = 0; i < 8; i += 1) voters.push(await newUser(call, 2, `voter${i}`));
    const voter = (i: number) => voters[i] as User;
    const hubId = (
      await must(call('POST', '/hubs', { name: 'Drill hub', profileAssetId: await hubPhoto(call, author) }, author.token), 'a hub')
    ).data.hubId as string;
    const invitation = await must(call('POST', `/hubs/${hubId}/invitations`, { invitees: [member.phone] }, author.token), 'an invitation');
    await must(
      call('POST', `/hub-invitations/${invitation.data.invitations[0].invitationId}/accept`, undefined, member.token),
      'accepting the invitation',
    );
    const post = async (user: User, text: string, extra: Record<string, unknown> = {}) =>
      (await must(call('POST', '/posts', { thoughtText: text, visibility: 'public', ...slider, ...extra }, user.token), 'a post')).data
        .id as string;
    const castVote = (user: User, postId: string, position: string) =>
      must(call('POST', `/posts/${postId}/vote`, { position }, user.token), 'a vote');
    const discussionOf = async (postId: string) => {
      const page = await must(call('GET', `/hubs/${hubId}/discussions`, undefined, member.token), 'the discussions');
      return (page.data.items as { id: string; postId: string }[]).find((item) => item.postId === postId)?.id as string;
    };
    const say = (user: User, discussionId: string, text: string) =>
      must(call('POST', `/hubs/${hubId}/discussions/${discussionId}/messages`, { text }, user.token), 'a hub message');

    // Before the backup: a post tallied by the worker (k votes), a post with pending ballots, a hub post with its discussion.
    const tallied = await post(author, `Tallied before the backup ${marker}`);
    const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];
    for (let i = 0; i < ballotBatch; i += 1) await castVote(voter(i), tallied, positions[i] as string);
    const pendingPost = await post(author, 'Pending ballots across the restore');
    for (let i = 0; i < 3; i += 1) await castVote(voter(i), pendingPost, i === 0 ? 'right' : 'left');
    const hubPost = await post(author, 'A hub post', { visibility: 'public_hub', hubIds: [hubId] });
    await castVote(member, hubPost, 'strong_right');
    const discussion = await discussionOf(hubPost);
    await say(author, discussion, 'before the backup: hello');
    await say(member, discussion, 'before the backup: hi');
    const source1 = owner(source.port);
    await source1.connect();
    await waitFor(
      async () =>
        (await one<{ n: number }>(source1, 'select count(*)::int as n from app_private.sealed_ballots where post_id = $1', [tallied])).n ===
        0,
      'the tallier to fold the first post',
    );

    const backupStarted = Date.now();
    await backrest(['--type=full', 'backup']);
    const backupMs = Date.now() - backupStarted;
    print(`full backup in ${seconds(backupMs)}`);

    // After the backup, before the noted time.
    const beforePost = await post(member, 'Written after the backup, before the restore point');
    await castVote(voter(0), beforePost, 'neutral');
    await castVote(voter(1), beforePost, 'strong_left');
    // A differential backup, as the schedule takes on the days between fulls: the restore starts
    // from it (the full it depends on, plus what changed since) and replays the WAL after it.
    const diffStarted = Date.now();
    await backrest(['--type=diff', 'backup']);
    print(`differential backup in ${seconds(Date.now() - diffStarted)}`);
    await castVote(voter(3), pendingPost, 'strong_right'); // 4 pending: one short of a batch
    await say(member, discussion, 'after the backup, before the restore point');

    // The state the restore must bring back, as the API and the owner read it at the noted time.
    const counted = `select (select count(*) from app.users)::int as users, (select count(*) from app.posts)::int as posts,
      (select count(*) from app.vote_receipts)::int as votes, (select count(*) from app.hub_discussion_messages)::int as messages,
      (select count(*) from app.sessions)::int as sessions`;
    // A push in flight at the restore point: sent before it, answered by FCM after it, so the
    // outcome of its delivery is written after it (the one repeat a restore cannot avoid).
    fcm.delayMs = pushDelayMs;
    await castVote(voter(5), tallied, 'right');
    const inFlight = (
      await one<{ id: string }>(
        source1,
        "select id from app.notifications where recipient_id = $1 and type = 'post_voted' order by created_at desc, id desc limit 1",
        [author.id],
      )
    ).id;
    await waitFor(
      async () =>
        (
          await one<{ n: number }>(
            source1,
            "select count(*)::int as n from app_private.push_deliveries where notification_id = $1 and state = 'pending' and attempts > 0",
            [inFlight],
          )
        ).n === 1,
      'the in-flight push to be claimed',
    );
    // The restore point: noted while that push waits for FCM's answer. The drill writes nothing
    // more until it has read what the restore must bring back (the worker's tallies and push
    // outcomes change none of it).
    await sleep(300);
    const target = (
      await one<{ at: string }>(source1, "select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' as at")
    ).at;
    print(`restore point noted: ${target}`);
    const expectedCounts = await one<Record<string, number>>(source1, counted);
    const summaries = async (c: Call, ids: string[]) => {
      const result: Record<string, unknown> = {};
      for (const id of ids)
        result[id] = (await must(c('GET', `/posts/${id}/vote/summary`, undefined, author.token), 'a vote summary')).data;
      result.hub = (
        await must(c('GET', `/posts/${hubPost}/vote/summary?hubId=${hubId}`, undefined, author.token), 'a hub vote summary')
      ).data;
      return result;
    };
    const expectedSummaries = await summaries(call, [tallied, pendingPost, hubPost, beforePost]);
    const messagesOf = async (c: Call) =>
      (
        (await must(c('GET', `/hubs/${hubId}/discussions/${discussion}/messages`, undefined, member.token), 'the messages')).data.items as {
          text: string;
        }[]
      ).map((m) => m.text);
    const expectedMessages = await messagesOf(call);
    fcm.delayMs = 0;
    await sleep(1000);

    // After the noted time: a post, the vote that makes the pending post's ballots a batch (tallied
    // at once by the worker), a message, a new user.
    const afterPost = await post(author, 'Written after the restore point');
    await castVote(voter(4), pendingPost, 'neutral');
    await say(author, discussion, 'after the restore point');
    const lateUser = await newUser(call, 2, 'late');
    await waitFor(
      async () =>
        (
          await one<{ n: number }>(
            source1,
            'select count(*)::int as n from app_private.sealed_ballots where post_id = $1 and hub_id is null',
            [pendingPost],
          )
        ).n === 0,
      'the tallier to fold the pending post after the restore point',
    );

    const targetMs = Date.parse(target.replace(' ', 'T').replace('+00', 'Z'));
    await waitFor(
      () => fcm.accepted.some((accepted) => accepted.message.data?.notificationId === inFlight),
      'FCM to accept the in-flight push',
    );
    const inFlightAnswered = fcm.accepted.find((accepted) => accepted.message.data?.notificationId === inFlight)?.at ?? 0;

    // Continuous archiving: the WAL up to here reaches the repository (archive_timeout would do
    // it within a minute); what is written next is not archived when the server dies.
    const switched = await one<{ wal: string }>(source1, 'select pg_walfile_name(pg_switch_wal()) as wal');
    await waitFor(
      async () =>
        ((await one<{ wal: string | null }>(source1, 'select last_archived_wal as wal from pg_stat_archiver')).wal ?? '') >= switched.wal,
      'the switched WAL segment to be archived',
    );
    const unarchivedPost = await post(author, 'Written after the last archived segment');
    const archiver = await one<{ segment: string; last: string; age: number; insert: string; size: string }>(
      source1,
      `select last_archived_wal as segment, last_archived_time::text as last, extract(epoch from clock_timestamp() - last_archived_time)::float8 as age,
              pg_current_wal_insert_lsn()::text as insert, current_setting('wal_segment_size') as size from pg_stat_archiver`,
    );
    await source1.end();

    // ---- The disaster: the service stops, the server dies -------------------------------------
    await Promise.all(running.splice(0).map(stopService));
    await pgCtl(source.dataDir, ['-m', 'immediate', 'stop']);
    clusters.splice(clusters.indexOf(source.dataDir), 1);
    const segmentBytes = 16 * 1024 * 1024;
    const archivedEnd =
      BigInt(`0x${archiver.segment.slice(8, 16)}`) * 2n ** 32n +
      (BigInt(`0x${archiver.segment.slice(16, 24)}`) + 1n) * BigInt(segmentBytes);
    const [high, low] = archiver.insert.split('/') as [string, string];
    const insertLsn = BigInt(`0x${high}`) * 2n ** 32n + BigInt(`0x${low}`);
    const unarchivedBytes = Number(insertLsn > archivedEnd ? insertLsn - archivedEnd : 0n);
    print(
      `disaster: server stopped (immediate); last archived segment ${archiver.segment} at ${archiver.last}, ${unarchivedBytes} bytes of WAL (${archiver.age.toFixed(1)} s) not archived`,
    );

    // ---- The restore to the noted time into a new data directory ------------------------------
    const restoreStarted = Date.now();
    await ownedFolder(restoredDir);
    await backrest([`--pg1-path=${restoredDir}`, '--type=time', `--target=${target}`, '--target-action=promote', 'restore']);
    const filesMs = Date.now() - restoreStarted;
    const restoredPort = await freePort();
    await appendFile(
      path.join(restoredDir, 'postgresql.auto.conf'),
      `\n# restore drill: the restored cluster's own port and archive_command\nport = ${restoredPort}\narchive_command = '${archiveCommand(restoredDir)}'\n`,
    );
    const recoveryStarted = Date.now();
    await pgCtl(restoredDir, ['-l', path.join(work, 'restored.log'), '-w', '-t', '600', 'start']);
    clusters.push(restoredDir);
    const restored = owner(restoredPort);
    await waitFor(
      async () => {
        const client = owner(restoredPort);
        await client.connect();
        try {
          return !(await one<{ recovering: boolean }>(client, 'select pg_is_in_recovery() as recovering')).recovering;
        } finally {
          await client.end();
        }
      },
      'recovery to end (promotion)',
      600_000,
    );
    const recoveryMs = Date.now() - recoveryStarted;
    await restored.connect();
    const replayed = await one<{ at: string | null; timeline: number }>(
      restored,
      "select to_char(pg_last_xact_replay_timestamp() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' as at, (select timeline_id from pg_control_checkpoint()) as timeline",
    );
    app = await startApp(restoredPort, 'restored');
    call = app.call;
    const restoreMs = Date.now() - restoreStarted;
    const dataBytes = await folderBytes(restoredDir);
    print(
      `restored ${mb(dataBytes)} to ${target} in ${seconds(restoreMs)}: files ${seconds(filesMs)}, WAL replay and promotion ${seconds(recoveryMs)}, migration and service ready ${seconds(restoreMs - filesMs - recoveryMs)}`,
    );
    print(`recovery point: last transaction replayed committed at ${replayed.at} (target ${target}), now on timeline ${replayed.timeline}`);

    // ---- What the restored database holds -----------------------------------------------------
    print('checks:');
    for (const id of [tallied, pendingPost, hubPost, beforePost])
      check(
        (await call('GET', `/posts/${id}`, undefined, author.token)).status === 200,
        `post ${id.slice(0, 8)} written before the restore point is there`,
      );
    for (const id of [afterPost, unarchivedPost]) {
      const answer = await call('GET', `/posts/${id}`, undefined, author.token);
      check(answer.status === 404, `post ${id.slice(0, 8)} written after the restore point is not`, answer.status);
    }
    const lateAnswer = (await call('GET', '/users/me/notification-settings', undefined, lateUser.token)).status;
    const earlyAnswer = (await call('GET', '/users/me/notification-settings', undefined, voter(7).token)).status;
    check(
      lateAnswer === 401 && earlyAnswer === 200,
      'the session made after the restore point is gone (its token is refused), one made before still signs in',
      { lateAnswer, earlyAnswer },
    );
    check(
      JSON.stringify(await messagesOf(call)) === JSON.stringify(expectedMessages),
      'the hub discussion holds the messages of before the restore point, and only those',
      await messagesOf(call),
    );
    const restoredCounts = await one<Record<string, number>>(restored, counted);
    check(
      JSON.stringify(restoredCounts) === JSON.stringify(expectedCounts),
      `row counts as at the restore point ${JSON.stringify(expectedCounts)}`,
      restoredCounts,
    );
    const restoredSummaries = await summaries(call, [tallied, pendingPost, hubPost, beforePost]);
    check(
      JSON.stringify(restoredSummaries) === JSON.stringify(expectedSummaries),
      'vote summaries as at the restore point (pending sealed ballots opened with the same BALLOT_KEY)',
      restoredSummaries,
    );
    const pending = await one<{ n: number }>(
      restored,
      'select count(*)::int as n from app_private.sealed_ballots where post_id = $1 and hub_id is null',
      [pendingPost],
    );
    check(pending.n === 4, 'the pending post holds its 4 sealed ballots again (the tally after the restore point is undone)', pending.n);
    const drift = (await restored.query('select * from app_private.counter_drift()')).rows;
    check(drift.length === 0, 'counter_drift() is empty', drift);
    const unreadDrift = (await restored.query('select * from app_private.unread_counter_drift()')).rows;
    check(unreadDrift.length === 0, 'unread_counter_drift() is empty', unreadDrift);
    const again = await call('GET', `/posts/${pendingPost}/vote/me`, undefined, voter(4).token);
    check(again.data?.hasVoted === false, 'the vote cast after the restore point is gone for its voter', again.data);
    // The fifth ballot makes a batch: the restored worker opens the restored ballots with the key
    // and tallies them. Its post_voted notification reaches the author's stream, opened on the
    // restored service, live.
    const stream = await openStream(app.base, author.token);
    await castVote(voter(4), pendingPost, 'neutral');
    const streamed = await stream.notification(30_000);
    check(
      streamed?.type === 'post_voted' && streamed.postId === pendingPost,
      "live delivery resumes: the new vote reaches the author's stream",
      streamed,
    );
    const folded = await (async () => {
      try {
        await waitFor(
          async () =>
            (
              await one<{ n: number }>(
                restored,
                'select count(*)::int as n from app_private.sealed_ballots where post_id = $1 and hub_id is null',
                [pendingPost],
              )
            ).n === 0,
          'the tallier',
          60_000,
        );
        return true;
      } catch {
        return false;
      }
    })();
    check(folded, 'the restored worker tallies the restored pending ballots with the same BALLOT_KEY');
    const tally = (await must(call('GET', `/posts/${pendingPost}/vote/summary`, undefined, author.token), 'a vote summary')).data as {
      totalVotes: number;
      leftCount: number;
      neutralCount: number;
      rightCount: number;
    };
    check(
      tally.totalVotes === 5 && tally.leftCount === 2 && tally.neutralCount === 1 && tally.rightCount === 2,
      'the tally counts the restored ballots and the new one',
      tally,
    );
    const driftAfter = (await restored.query('select * from app_private.counter_drift()')).rows;
    check(driftAfter.length === 0, 'counter_drift() is still empty after the tally', driftAfter);
    // Push: every notification of the author the restored database holds (of the pushed types) is
    // pushed, and none twice across the restore (those pushed before the restore point have their
    // delivery rows in the restored database).
    const held = (
      await restored.query<{ id: string }>(
        "select id from app.notifications where recipient_id = $1 and type::text not in ('hub_post_created', 'post_shared_to_hub')",
        [author.id],
      )
    ).rows.map((row) => row.id);
    const pushedIds = () =>
      fcm.accepted
        .map((accepted) => accepted.message.data?.notificationId as string | undefined)
        .filter((id): id is string => id !== undefined);
    // The in-flight push's delivery is claimed in the restored database until its lease ends: it goes again then.
    await waitFor(
      () => pushedIds().filter((id) => id === inFlight).length >= 2,
      'the in-flight push to go again',
      (pushLeaseSeconds + 15) * 1000,
    ).catch(() => undefined);
    const allPushed = await waitFor(() => held.every((id) => pushedIds().includes(id)), 'the pushes', 30_000).then(
      () => true,
      () => false,
    );
    check(
      allPushed,
      `push resumes: all ${held.length} notifications of the author in the restored database are pushed`,
      held.filter((id) => !pushedIds().includes(id)),
    );
    // A push FCM accepted by the restore point has its delivery recorded in the restored database
    // and never goes again; one accepted after it (in flight at it, or sent after it) for a
    // notification the restored database holds goes again: its delivery record was lost.
    const firstAccepted = (id: string) =>
      Math.min(...fcm.accepted.filter((accepted) => accepted.message.data?.notificationId === id).map((accepted) => accepted.at));
    const twice = [...new Set(pushedIds().filter((id, index, all) => all.indexOf(id) !== index))];
    const repeatedEarly = twice.filter((id) => firstAccepted(id) <= targetMs);
    check(repeatedEarly.length === 0, `no push FCM accepted by the restore point goes again (${pushedIds().length} pushes)`, repeatedEarly);
    check(
      twice.includes(inFlight),
      `the push in flight at the restore point (answered ${((inFlightAnswered - targetMs) / 1000).toFixed(1)} s after it) goes again: ${twice.length} notification(s) pushed twice`,
    );
    stream.close();
    await restored.end();

    // ---- The repository: verify, and no BALLOT_KEY in it -------------------------------------
    await Promise.all(running.splice(0).map(stopService));
    await pgCtl(restoredDir, ['-m', 'fast', 'stop']);
    clusters.splice(clusters.indexOf(restoredDir), 1);
    await waitFor(
      async () => (await pgbackrestProcesses(configFile)).length === 0,
      "pgBackRest's asynchronous archiving to finish",
      60_000,
    );
    const verified = await backrest(['--log-level-console=info', 'verify']).then(
      () => true,
      (error: Error) => {
        print(`  ${error.message}`);
        return false;
      },
    );
    check(verified, 'pgbackrest verify passes on the repository');
    const repositoryFiles = await filesUnder(folders.repo);
    const repositoryBytes = await folderBytes(folders.repo);
    const keyForms = [
      ballotKeyBytes,
      Buffer.from(ballotKeyBytes.toString('hex')),
      Buffer.from(ballotKeyBytes.toString('hex').toUpperCase()),
      Buffer.from(ballotKeyBytes.toString('base64')),
    ];
    const holdingKey: string[] = [];
    const holdingMarker: string[] = [];
    for (const file of repositoryFiles) {
      if (await fileHolds(file, keyForms)) holdingKey.push(path.relative(folders.repo, file));
      if (await fileHolds(file, [Buffer.from(marker)])) holdingMarker.push(path.relative(folders.repo, file));
    }
    check(
      holdingKey.length === 0,
      `no file of the repository (${repositoryFiles.length} files, ${mb(repositoryBytes)}) holds BALLOT_KEY (raw, hex or base64)`,
      holdingKey,
    );
    if (plainRepository)
      check(
        holdingMarker.length > 0,
        `the search reads the data: a post's text written through the API is found in ${holdingMarker.length} file(s)`,
      );
    else print(`  (the repository is compressed and encrypted: a post's text is found in ${holdingMarker.length} files)`);

    const result = {
      ok: failures.length === 0,
      restoreSeconds: restoreMs / 1000,
      filesSeconds: filesMs / 1000,
      recoverySeconds: recoveryMs / 1000,
      backupSeconds: backupMs / 1000,
      dataBytes,
      repositoryBytes,
      target,
      lastReplayed: replayed.at,
      unarchivedBytes,
      lastArchivedAgeSeconds: archiver.age,
      keyFiles: holdingKey.length,
      markerFiles: holdingMarker.length,
      failures,
    };
    print(`drill result: ${JSON.stringify(result)}`);
  } finally {
    await cleanUp();
  }
}

try {
  await main();
} catch (error) {
  failures.push((error as Error).message);
  print(`drill failed: ${(error as Error).message}`);
}
if (failures.length > 0) {
  print(`${failures.length} check(s) failed`);
  process.exit(1);
}
print('drill passed');
