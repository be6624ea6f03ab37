// Deploy benchmark: `npm run bench -- deploy`. Not part of `npm test`.
//
// An operator's upgrade under load, twice: the running release (this checkout: two API processes
// and one worker, `node main.ts --only=api|worker`, MIGRATE_ON_START=false) serves a fresh database
// with some data while a separate process (deploy-load.ts) keeps 12 requests in flight, round robin
// over the two APIs (home feed, post reads, votes, comments); the next release's `npm run migrate`
// runs beside it. The next release is a copy of this checkout with one function body changed
// (app.can_see_post), one policy expression changed (posts_select_visible) and one migration adding a
// nullable column to app.posts (test/helpers/releases.ts). Runs:
//   alone   the migration with nothing else on the database;
//   reader  the migration beside a reader that holds ACCESS SHARE on every table of app and
//           app_private for BENCH_DEPLOY_READER_SECONDS (20), as pg_dump or a report query does.
// The old API processes' /readyz is probed every 100 ms throughout. Printed per run: the
// migration's duration, the load's p50/p99/max and its failures (any answer other than the
// expected 200/201, or none within 10 s), and how long any old process answered /readyz other than
// 200; then the goal lines deploy_failed_requests (target 0), deploy_p99_ms (target < 1000) and
// deploy_old_processes_unready_s (target 0), each the worse of the two runs.
// Settings: BENCH_DEPLOY_CONCURRENCY (12), BENCH_DEPLOY_READER_SECONDS (20), BENCH_DEPLOY_USERS (400),
// BENCH_DEPLOY_RUNS (alone,reader). Uses DATABASE_URL's server when set, else an embedded PostgreSQL.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { migrate } from '../../db/migrate.ts';
import { createTokens } from '../../server/auth/tokens.ts';
import { addColumnMigration, changeFunctionBody, changePolicyExpression, checkoutRoot, copyCheckout } from '../helpers/releases.ts';
import type { LoadRecord, LoadStart } from './deploy-load.ts';
import { makePosts, seed } from './vote-data.ts';

const concurrency = Number(process.env.BENCH_DEPLOY_CONCURRENCY ?? 12);
const readerSeconds = Number(process.env.BENCH_DEPLOY_READER_SECONDS ?? 20);
const userCount = Number(process.env.BENCH_DEPLOY_USERS ?? 400);
const runs = (process.env.BENCH_DEPLOY_RUNS ?? 'alone,reader').split(',') as ('alone' | 'reader')[];
const requestTimeoutMs = 10_000;
const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-bench-deploy-'));
await chmod(scratch, 0o755);
let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
let adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  embedded = await startEmbeddedPostgres(path.join(scratch, 'pg'), { persistent: false, durable: false });
  adminUrl = embedded.url;
}
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const version = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;
const jwtSecret = randomBytes(24).toString('hex');
const tokens = createTokens(jwtSecret);
const ballotKey = `bench:${randomBytes(32).toString('hex')}`;

// The next release: this checkout with one function, one policy and one column changed.
const next = path.join(scratch, 'next');
await copyCheckout(next);
changeFunctionBody(path.join(next, 'db', 'sql'), 'posts.sql', 'app.can_see_post');
changePolicyExpression(path.join(next, 'db', 'sql'), 'posts.sql', 'posts_select_visible');
addColumnMigration(next, 'app.posts', 'next_release_note');

interface Service {
  child: ChildProcess;
  output: () => string;
}

function startService(only: 'api' | 'worker', ownerUrl: string, port: number): Service {
  let output = '';
  const child = spawn(process.execPath, [path.join(checkoutRoot, 'main.ts'), `--only=${only}`], {
    cwd: checkoutRoot,
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: ownerUrl,
      MIGRATE_ON_START: 'false',
      PORT: String(port),
      DATA_DIR: path.join(scratch, `data-${port}`),
      JWT_SECRET: jwtSecret,
      BALLOT_KEY: ballotKey,
      // The load writes more comments per user than a person does.
      WRITE_LIMITS: 'comments=1000000/3600',
      // Nothing here touches object storage: an endpoint that is never called.
      S3_ENDPOINT: 'http://127.0.0.1:9',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  return { child, output: () => output };
}

async function waitReady(origin: string, service: Service): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt += 1) {
    if (service.child.exitCode !== null) throw new Error(`the API exited (${service.child.exitCode}): ${service.output()}`);
    if (
      await fetch(`${origin}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      )
    )
      return;
    await sleep(200);
  }
  throw new Error(`the API did not become ready: ${service.output()}`);
}

/** Probes every origin's /readyz every 100 ms until stopped; answers the seconds during which any of them was not ready, and the statuses seen. */
function probeReadiness(origins: string[]): () => Promise<{ unreadySeconds: number; statuses: Map<string, number> }> {
  let stopped = false;
  let unready = 0;
  const statuses = new Map<string, number>();
  const loop = (async () => {
    let last = performance.now();
    while (!stopped) {
      const answers = await Promise.all(
        origins.map((origin) =>
          // 5 s: a balancer's health-check timeout (Caddy's default); /readyz bounds its own database
          // check at 2 s and answers 503 then.
          fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
            async (r) => `${r.status}${r.status === 200 ? '' : ` ${JSON.stringify(await r.json().catch(() => null))}`}`,
            (error: Error) => `no answer (${error.name})`,
          ),
        ),
      );
      const now = performance.now();
      if (answers.some((answer) => answer !== '200')) unready += (now - last) / 1000;
      for (const answer of answers) statuses.set(answer, (statuses.get(answer) ?? 0) + 1);
      last = now;
      await sleep(Math.max(0, 100 - (performance.now() - now)));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return { unreadySeconds: unready, statuses };
  };
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};

interface RunResult {
  name: string;
  migrationSeconds: number;
  failed: number;
  p99: number;
  unreadySeconds: number;
}

async function runOnce(name: 'alone' | 'reader'): Promise<RunResult> {
  const database = `opinion_bench_deploy_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl as string);
  url.pathname = `/${database}`;
  const ownerUrl = url.toString();
  const services: Service[] = [];
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 2 });
  owner.on('error', () => {});
  let load: ChildProcess | undefined;
  try {
    await migrate(ownerUrl);
    const data = await seed(owner, userCount);
    const posts = await makePosts(owner, data, userCount, 'public');
    // Every user follows the author: the home feeds have the posts in them.
    await owner.query(`insert into app.follows (follower_id, followee_id) select u, $1 from unnest($2::uuid[]) u`, [
      data.authorId,
      data.voters.map((v) => v.userId),
    ]);
    await owner.query('vacuum analyze');
    const userTokens = data.voters.map((voter) => tokens.issueAccess(voter));

    const ports = [await freePort(), await freePort(), await freePort()];
    const origins = ports.slice(0, 2).map((port) => `http://127.0.0.1:${port}`);
    services.push(startService('api', ownerUrl, ports[0] as number), startService('api', ownerUrl, ports[1] as number));
    services.push(startService('worker', ownerUrl, ports[2] as number));
    for (const [i, origin] of origins.entries()) await waitReady(origin, services[i] as Service);

    load = fork(new URL('./deploy-load.ts', import.meta.url), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const records = new Promise<LoadRecord[]>((resolve) =>
      load?.on(
        'message',
        (message: { type: string; records?: LoadRecord[] }) => message.type === 'records' && resolve(message.records ?? []),
      ),
    );
    const loadStarted = performance.now();
    const start: LoadStart = {
      type: 'start',
      bases: origins.map((o) => `${o}/api/v1`),
      concurrency,
      tokens: userTokens,
      posts,
      timeoutMs: requestTimeoutMs,
    };
    load.send(start);
    const stopProbes = probeReadiness(origins);
    await sleep(3000);

    const readerOrMigrationStart = performance.now();
    let readerDone: Promise<void> = Promise.resolve();
    if (name === 'reader') {
      const reader = new pg.Client({ connectionString: ownerUrl });
      await reader.connect();
      const { rows } = await reader.query<{ name: string }>(
        `select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname in ('app', 'app_private') order by 1`,
      );
      const readerPid = (await reader.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;
      await reader.query('begin');
      await reader.query(`lock table ${rows.map((r) => r.name).join(', ')} in access share mode`);
      log(`  reader: ACCESS SHARE on ${rows.length} tables for ${readerSeconds} s (pid ${readerPid})`);
      readerDone = sleep(readerSeconds * 1000).then(async () => {
        await reader.query('commit');
        await reader.end();
      });
      await sleep(1000);
    }

    const migrationStart = performance.now();
    let migrationOutput = '';
    const migration = spawn(process.execPath, [path.join(next, 'db', 'cli', 'migrate.ts')], {
      cwd: next,
      env: { ...process.env, NODE_ENV: 'development', DATABASE_URL: ownerUrl, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    migration.stdout?.on('data', (chunk: Buffer) => (migrationOutput += chunk.toString()));
    migration.stderr?.on('data', (chunk: Buffer) => (migrationOutput += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => migration.once('exit', resolve));
    const migrationSeconds = (performance.now() - migrationStart) / 1000;
    const migrationWindow = [migrationStart - loadStarted, performance.now() - loadStarted];
    await readerDone;
    await sleep(5000);
    load.send({ type: 'stop' });
    const all = await records;
    const readiness = await stopProbes();

    const latencies = all.map((r) => r.ms);
    const during = all
      .filter((r) => r.at + r.ms >= (migrationWindow[0] as number) && r.at <= (migrationWindow[1] as number))
      .map((r) => r.ms);
    // Before the migration (and the reader) started: what the machine gives without a deploy.
    const baseline = all.filter((r) => r.at + r.ms < readerOrMigrationStart - loadStarted).map((r) => r.ms);
    const failures = all.filter((r) => !r.ok);
    const p99 = percentile(latencies, 99);
    log(`run ${name}:`);
    log(`  migration: ${migrationSeconds.toFixed(1)} s, exit code ${code}`);
    if (code !== 0) {
      const reason = migrationOutput
        .split('\n')
        .filter((line) => /error|fatal|timeout|waited/i.test(line))
        .slice(0, 3);
      log(
        `  migration failed: ${(reason.length ? reason : migrationOutput.trim().split('\n').slice(-3)).map((line) => line.trim().slice(0, 300)).join(' | ')}`,
      );
    }
    log(
      `  load: ${all.length} requests over ${((performance.now() - loadStarted) / 1000).toFixed(0)} s, ${concurrency} in flight: ` +
        `p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms`,
    );
    log(
      `  before the migration: ${baseline.length} requests, p50 ${percentile(baseline, 50).toFixed(0)} ms, p99 ${percentile(baseline, 99).toFixed(0)} ms, ` +
        `max ${baseline.length ? Math.max(...baseline).toFixed(0) : 'NaN'} ms`,
    );
    log(
      `  during the migration: ${during.length} requests, p50 ${percentile(during, 50).toFixed(0)} ms, p99 ${percentile(during, 99).toFixed(0)} ms, ` +
        `max ${during.length ? Math.max(...during).toFixed(0) : 'NaN'} ms`,
    );
    const byKind = new Map<string, number>();
    for (const failure of failures)
      byKind.set(`${failure.kind} ${failure.status}`, (byKind.get(`${failure.kind} ${failure.status}`) ?? 0) + 1);
    log(
      `  failed requests: ${failures.length}${failures.length ? ` (${[...byKind].map(([k, n]) => `${k}: ${n}`).join(', ')}; first: ${failures[0]?.detail ?? ''})` : ''}`,
    );
    log(
      `  old processes not ready: ${readiness.unreadySeconds.toFixed(1)} s (/readyz answers: ${[...readiness.statuses].map(([s, n]) => `${s} x${n}`).join('; ')})`,
    );
    for (const [i, service] of services.entries()) {
      const problems = service.output().trim();
      if (problems) log(`  process ${i} logged: ${problems.split('\n').slice(-3).join(' | ').slice(0, 600)}`);
    }
    return { name, migrationSeconds, failed: failures.length, p99, unreadySeconds: readiness.unreadySeconds };
  } finally {
    load?.disconnect();
    for (const service of services) service.child.kill('SIGTERM');
    await Promise.all(
      services.map((s) => (s.child.exitCode === null ? new Promise((resolve) => s.child.once('exit', resolve)) : undefined)),
    );
    await owner.end();
    await admin.query(`drop database if exists ${database} with (force)`);
  }
}

try {
  log(
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), PostgreSQL ${version}; ${concurrency} requests in flight over 2 API processes, 1 worker`,
  );
  const results: RunResult[] = [];
  for (const name of runs) results.push(await runOnce(name));
  const worst = (pick: (r: RunResult) => number) => Math.max(...results.map(pick));
  const each = (pick: (r: RunResult) => number, digits: number) => results.map((r) => `${r.name} ${pick(r).toFixed(digits)}`).join(', ');
  log('');
  log(
    `goal deploy_failed_requests: ${worst((r) => r.failed)} (${each((r) => r.failed, 0)}; target 0) ${worst((r) => r.failed) === 0 ? 'ok' : 'short'}`,
  );
  log(
    `goal deploy_p99_ms: ${worst((r) => r.p99).toFixed(0)} (${each((r) => r.p99, 0)}; target < 1000) ${worst((r) => r.p99) < 1000 ? 'ok' : 'short'}`,
  );
  log(
    `goal deploy_old_processes_unready_s: ${worst((r) => r.unreadySeconds).toFixed(1)} (${each((r) => r.unreadySeconds, 1)}; target 0) ${worst((r) => r.unreadySeconds) === 0 ? 'ok' : 'short'}`,
  );
  log(`migration duration: ${each((r) => r.migrationSeconds, 1)} s`);
} finally {
  await admin.end();
  await embedded?.stop();
  await rm(scratch, { recursive: true, force: true });
}
