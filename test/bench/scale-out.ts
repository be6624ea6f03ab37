// Scale-out benchmark (`npm run bench -- scale-out`): more than one database server's worth of
// clients. Not part of `npm test`.
//
// The pooler part: a real PgBouncer (transaction mode, test/helpers/pgbouncer.ts) in front of a
// PostgreSQL that accepts BENCH_CLIENTS + 100 direct connections (the embedded PostgreSQL 18, started
// here: a server of DATABASE_URL would need max_connections raised). BENCH_CLIENTS (1,000) clients in
// another process (scale-out-load.ts), each one connection as the API login, run the API's request
// transactions, once straight to PostgreSQL and once through the pooler, in alternating order, for
// BENCH_SECONDS each, BENCH_REPEATS times:
//   pooled_vs_direct_throughput        transactions per second through the pooler / direct (>= 1.5)
//   clients_per_server_connection      clients / the most server connections the pooler used (>= 50)
//   pooler_added_p50_ms                at half load (transactions started at half the direct rate of the
//                                      same repeat), p50 through the pooler - p50 direct (<= 0.5)
// and, once, with an API process (`node main.ts --only=api`, DATABASE_POOLER_URL set):
//   direct_connections_1000_vs_10_streams  the direct connections the API process keeps with 1,000
//                                      notification streams open / with 10 (= 1)
//
// The replicas part (another module, test/bench/scale-out-replicas.ts) adds its goal lines at the
// end, on a primary and streaming replica of its own.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { migrate } from '../../db/migrate.ts';
import { survivesServerLoss } from '../../db/pools.ts';
import { roleUrl } from '../../db/roles.ts';
import { createTokens } from '../../server/auth/tokens.ts';
import { startPgBouncer } from '../helpers/pgbouncer.ts';
import { cleanUp, stopOnExit } from './cleanup.ts';
import { startPhase } from './phase-start.ts';
import { makePosts, seed } from './vote-data.ts';
import { replicaScaleOut } from './scale-out-replicas.ts';

const run = promisify(execFile);
const clients = Number(process.env.BENCH_CLIENTS ?? 1000);
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
/** Server connections the pooler keeps for the API login (PgBouncer's default_pool_size). */
const poolSize = Number(process.env.BENCH_POOL_SIZE ?? 20);
const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

function goal(name: string, values: number[], op: '>=' | '<=' | '=', target: number, digits = 2): void {
  const value = median(values);
  const ok = op === '>=' ? value >= target : op === '<=' ? value <= target : Math.abs(value - target) < 1e-9;
  log(
    `goal ${name}: ${value.toFixed(digits)} (min ${Math.min(...values).toFixed(digits)}, max ${Math.max(...values).toFixed(digits)}; target ${op} ${target}) ${ok ? 'ok' : 'short'}`,
  );
}

// The database: its own embedded PostgreSQL, durable (fsync and synchronous commit on).
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-scale-out-'));
stopOnExit(() => rm(dataDir, { recursive: true, force: true }));
const embedded = await startEmbeddedPostgres(dataDir, { persistent: false, durable: true, maxConnections: clients + 100 });
stopOnExit(() => embedded.stop());
const database = `opinion_scale_out_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: embedded.url });
await admin.connect();
await admin.query(`create database ${database}`);
const version = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;
await admin.end();
const ownerUrlObject = new URL(embedded.url);
ownerUrlObject.pathname = `/${database}`;
const ownerUrl = ownerUrlObject.toString();
await migrate(ownerUrl);
const owner = survivesServerLoss(new pg.Pool({ connectionString: ownerUrl, max: 4 }));
stopOnExit(() => owner.end());
const data = await seed(owner, clients);
const posts = await makePosts(owner, data, 1000, 'public');
const pooler = await startPgBouncer(ownerUrl, { poolSize, maxClients: clients + 200 });
stopOnExit(() => pooler.close());
const { stdout: pgbouncerVersion } = await run('/usr/sbin/pgbouncer', ['--version']).catch(() => ({ stdout: 'pgbouncer ?' }));
log(
  `scale-out: ${clients} clients, ${seconds} s per phase, ${repeats} repeats; PostgreSQL ${version} (embedded, max_connections ${clients + 100}), ${pgbouncerVersion.split('\n')[0]} (transaction mode, default_pool_size ${poolSize}); ${os.cpus().length} cores, ${os.cpus()[0]?.model}`,
);

const load: ChildProcess = fork(path.join(import.meta.dirname, 'scale-out-load.ts'), [], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
stopOnExit(async () => load.kill());
const replies: ((message: any) => void)[] = [];
load.on('message', (message) => replies.shift()?.(message));
await new Promise((resolve) => replies.push(resolve));
const ask = (message: unknown) =>
  new Promise<any>((resolve) => {
    replies.push(resolve);
    load.send(message as object);
  });

const routes = { direct: roleUrl(ownerUrl, 'authenticator'), pooled: roleUrl(ownerUrl, 'authenticator', pooler.url) } as const;
type Route = keyof typeof routes;

/** The API login's server connections now (direct: one per client; pooled: the pooler's). */
async function serverConnections(): Promise<number> {
  const { rows } = await owner.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where datname = $1 and usename = 'authenticator'",
    [database],
  );
  return rows[0]?.n ?? 0;
}

interface PhaseResult {
  rate: number;
  p50: number;
  p99: number;
  errors: number;
  servers: number;
}

/** One phase: every client connected on `route`, then `mode` for `seconds`, sampling the server connections. */
async function phase(route: Route, mode: { type: 'closed' } | { type: 'open'; rate: number }): Promise<PhaseResult> {
  await ask({ type: 'connect', url: routes[route], clients, voters: data.voters, posts });
  await startPhase(owner);
  let servers = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      servers = Math.max(servers, await serverConnections());
      await sleep(200);
    }
  })();
  const result = await ask({ ...mode, seconds });
  sampling = false;
  await sampler;
  await ask({ type: 'end' });
  if (result.errors > 0) log(`  ${route}: ${result.errors} errors (first: ${result.firstError})`);
  const rate = result.transactions / result.seconds;
  log(
    `  ${route} ${mode.type === 'open' ? `at ${mode.rate.toFixed(0)}/s` : 'closed loop'}: ${rate.toFixed(0)} tx/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ${servers} server connections`,
  );
  return { rate, p50: result.p50, p99: result.p99, errors: result.errors, servers };
}

const throughput: number[] = [];
const clientsPerServer: number[] = [];
const addedP50: number[] = [];
for (let repeat = 0; repeat < repeats; repeat++) {
  log(`repeat ${repeat + 1}`);
  const order: Route[] = repeat % 2 === 0 ? ['direct', 'pooled'] : ['pooled', 'direct'];
  const full = new Map<Route, PhaseResult>();
  for (const route of order) full.set(route, await phase(route, { type: 'closed' }));
  const direct = full.get('direct') as PhaseResult;
  const pooled = full.get('pooled') as PhaseResult;
  throughput.push(pooled.rate / direct.rate);
  clientsPerServer.push(clients / Math.max(1, pooled.servers));
  const half = Math.min(direct.rate, pooled.rate) / 2;
  const atHalf = new Map<Route, PhaseResult>();
  for (const route of order) atHalf.set(route, await phase(route, { type: 'open', rate: half }));
  addedP50.push((atHalf.get('pooled') as PhaseResult).p50 - (atHalf.get('direct') as PhaseResult).p50);
}

// The direct connections of one API process behind the pooler, with 10 and then 1,000 streams open.
async function directConnectionsOfApi(): Promise<number[]> {
  const port = await freePort();
  const jwtSecret = randomBytes(16).toString('hex');
  const api = spawn(process.execPath, ['main.ts', '--only=api'], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    env: {
      ...process.env,
      NODE_ENV: 'development',
      PORT: String(port),
      S3_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      DATABASE_URL: ownerUrl,
      DATABASE_POOLER_URL: pooler.url,
      MIGRATE_ON_START: 'false',
      JWT_SECRET: jwtSecret,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  api.stdout?.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  api.stderr?.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  const base = `http://127.0.0.1:${port}/api/v1`;
  for (const started = Date.now(); ; await sleep(200)) {
    if ((await fetch(`${base}/auth/login-config`).catch(() => undefined))?.status === 200) break;
    if (api.exitCode !== null || Date.now() - started > 60_000) throw new Error(`the API process did not start:\n${output}`);
  }
  const pgPort = new URL(ownerUrl).port;
  /** TCP connections from the API process straight to PostgreSQL's port (not the pooler's). */
  const direct = async () => {
    const { stdout } = await run('ss', ['-tnpH', 'state', 'established', `( dport = :${pgPort} )`]);
    return stdout.split('\n').filter((line) => line.includes(`pid=${api.pid},`)).length;
  };
  const tokens = createTokens(jwtSecret);
  const streams = fork(path.join(import.meta.dirname, 'live-streams.ts'), [base], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const answers: ((message: any) => void)[] = [];
  streams.on('message', (message) => answers.shift()?.(message));
  await new Promise((resolve) => answers.push(resolve));
  const open = (voters: typeof data.voters) =>
    new Promise<any>((resolve) => {
      answers.push(resolve);
      streams.send({
        type: 'open',
        tokens: voters.map((voter) => tokens.issueAccess({ userId: voter.userId, sessionId: voter.sessionId })),
      });
    });
  const counts: number[] = [];
  try {
    await open(data.voters.slice(0, 10));
    await sleep(1000);
    counts.push(await direct());
    await open(data.voters.slice(10, 1000));
    await sleep(1000);
    counts.push(await direct());
  } finally {
    streams.kill();
    api.kill('SIGTERM');
    await new Promise((resolve) => api.once('exit', resolve));
  }
  log(`  API process behind the pooler: ${counts[0]} direct connections with 10 streams open, ${counts[1]} with 1,000`);
  return counts;
}
const [with10, with1000] = await directConnectionsOfApi();

goal('pooled_vs_direct_throughput', throughput, '>=', 1.5);
goal('clients_per_server_connection', clientsPerServer, '>=', 50, 1);
goal('pooler_added_p50_ms', addedP50, '<=', 0.5);
goal('direct_connections_1000_vs_10_streams', [(with1000 as number) / Math.max(1, with10 as number)], '=', 1);

await cleanUp();

// The replicas part (test/bench/scale-out-replicas.ts) runs last, on a PostgreSQL 15 primary and
// streaming replica of its own (the embedded server has none), printing its goal lines
// (replica_read_share_lag_*, read_your_writes_violations_lag_*).
await replicaScaleOut();
