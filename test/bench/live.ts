// Live notifications under load (issues 10 and 12), `npm run bench -- live`. Not part of `npm test`.
// Processes, as in production: one API process (`node main.ts`: API, dispatcher and worker) on a
// fresh database; the stream clients in a process of their own (live-streams.ts); the writes from
// a thread of this process (live-load.ts). Measured, for BENCH_STREAMS (2,000, once) and then
// BENCH_GOAL_STREAMS (3,000, BENCH_REPEATS times, 5 by default) open streams, alternating phases
// with and without the streams:
//   * votes/s over HTTP (each vote on a post of its own, whose author has a stream open) and the
//     time from each vote's answer (after its commit) to the arrival of its post_voted row: p50,
//     p95, and rows still missing 2 s after the writes stopped;
//   * notification rows inserted per second (one transaction each) and their commit-to-arrival;
//   * with BENCH_STREAMS open: 200 clients reconnecting at once with Last-Event-ID, 500 rows each
//     to replay (BENCH_REPLAY=0 skips it, for a server without resume).
// Ends with one `goal` line per live-delivery goal (3,000 streams). BENCH_API_DIR runs another
// checkout's API (a before/after comparison); its migrations run on the fresh database. Each phase
// also reports CPU per written row of PostgreSQL, the API process, the stream clients and the
// writers; BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the API process there, and
// BENCH_STATEMENTS=1 (a server that loads pg_stat_statements) prints each phase's costliest
// statements, nested ones included.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { createTokens } from '../../server/auth/tokens.ts';
import { cpuDelta, cpuSeconds } from './backend-cpu.ts';
import { startPhase } from './phase-start.ts';

const streamCount = Number(process.env.BENCH_STREAMS ?? 2000);
const goalStreams = Number(process.env.BENCH_GOAL_STREAMS ?? 3000);
const repeats = Number(process.env.BENCH_REPEATS ?? 5);
const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const replay = process.env.BENCH_REPLAY !== '0';
const apiDir = path.resolve(process.env.BENCH_API_DIR ?? path.join(import.meta.dirname, '../..'));
const replayClients = 200;
const replayRows = 500;
// Each vote phase uses two posts of every author (post k, k + 1): enough for every round.
const postsPerAuthor = 4 * (1 + repeats);
const voterCount = 2000;

const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);
};
const summary = (values: number[]) =>
  `${quantile(values, 0.5).toFixed(2)} (min ${Math.min(...values).toFixed(2)}, max ${Math.max(...values).toFixed(2)}`;

// The database: DATABASE_URL's server, or a throwaway embedded one (durable, like production).
let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-live-bench-'));
await chmod(dataDir, 0o755);
let adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  embedded = await startEmbeddedPostgres(dataDir, { persistent: false, durable: true });
  adminUrl = embedded.url;
}
const database = `opinion_live_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`create database ${database}`);
const version = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;
const ownerUrlObject = new URL(adminUrl);
ownerUrlObject.pathname = `/${database}`;
const ownerUrl = ownerUrlObject.toString();

// The API process (it migrates the database on startup).
const jwtSecret = randomBytes(16).toString('hex');
const port = await freePort();
const base = `http://127.0.0.1:${port}/api/v1`;
let apiOutput = '';
// BENCH_CPU_PROF=<dir>: the API process writes a V8 CPU profile there when it stops (node --cpu-prof).
const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];
const api: ChildProcess = spawn(process.execPath, [...profile, 'main.ts'], {
  cwd: apiDir,
  env: {
    ...process.env,
    NODE_ENV: 'development',
    PORT: String(port),
    DATABASE_URL: ownerUrl,
    DATA_DIR: dataDir,
    JWT_SECRET: jwtSecret,
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
api.stdout?.on('data', (chunk) => (apiOutput = (apiOutput + chunk).slice(-5000)));
api.stderr?.on('data', (chunk) => (apiOutput = (apiOutput + chunk).slice(-5000)));
for (const started = Date.now(); ; await sleep(200)) {
  if ((await fetch(`${base}/auth/login-config`).catch(() => undefined))?.status === 200) break;
  if (api.exitCode !== null || Date.now() - started > 60_000) throw new Error(`the API process did not start:\n${apiOutput}`);
}

// Users with one live session each: authors (who hold the streams), voters, replay clients.
const owner = new pg.Pool({ connectionString: ownerUrl, max: 4 });
const tokens = createTokens(jwtSecret);
async function makeUsers(prefix: string, count: number) {
  const { rows } = await owner.query<{ id: string; session_id: string }>(
    `with made as (
       insert into app.users (username, full_name, terms_accepted_at, terms_version)
       select $1 || g, 'Bench User', now(), 'bench' from generate_series(1, $2) g returning id)
     insert into app.sessions (user_id, expires_at) select id, now() + interval '1 day' from made returning user_id as id, id as session_id`,
    [prefix, count],
  );
  return rows.map((row) => ({ id: row.id, token: tokens.issueAccess({ userId: row.id, sessionId: row.session_id }) }));
}
const authors = await makeUsers('author_', Math.max(streamCount, goalStreams));
const voters = await makeUsers('voter_', voterCount);
const replayUsers = await makeUsers('replay_', replayClients);
// Posts: post k of every author, k = 0..postsPerAuthor-1, so that consecutive votes reach different authors.
const { rows: postRows } = await owner.query<{ id: string; author: number; k: number }>(
  `insert into app.posts (author_id, slider_text, slider_left_label, slider_right_label, visibility)
   select a.id, 'Bench prompt', 'No', 'Yes', 'public'
   from generate_series(0, $2 - 1) k, unnest($1::uuid[]) with ordinality a(id, n) order by k, a.n
   returning id`,
  [authors.map((author) => author.id), postsPerAuthor],
);
const postsByRound = Array.from({ length: postsPerAuthor }, (_, k) =>
  postRows.slice(k * authors.length, (k + 1) * authors.length).map((row) => row.id),
);
// Each replay client: one row to resume after, then replayRows rows (one transaction: (tx_id, id) order is id order).
await owner.query(
  `insert into app.notifications (recipient_id, type) select u, 'user_followed' from unnest($1::uuid[]) u, generate_series(0, $2)`,
  [replayUsers.map((user) => user.id), replayRows],
);
const places = await owner.query<{ recipient_id: string; id: string }>(
  'select recipient_id, min(id::text) as id from app.notifications where recipient_id = any ($1) group by recipient_id',
  [replayUsers.map((user) => user.id)],
);
const placeOf = new Map(places.rows.map((row) => [row.recipient_id, row.id]));
await owner.query('vacuum analyze');

// The stream clients' process.
const clients = fork(path.join(import.meta.dirname, 'live-streams.ts'), [base], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const replies: ((message: any) => void)[] = [];
clients.on('message', (message) => replies.shift()?.(message));
await new Promise((resolve) => replies.push(resolve));
const ask = (message: unknown) =>
  new Promise<any>((resolve) => {
    replies.push(resolve);
    clients.send(message as object);
  });

let nextRound = 0;
const statements = process.env.BENCH_STATEMENTS === '1';
if (statements) await owner.query('create extension if not exists pg_stat_statements');
/** Streams open now (for the statement report). */
let clientsOpen = 0;
async function logStatements(phase: string, rows: number): Promise<void> {
  const { rows: top } = await owner.query<{ calls: string; us: string; query: string }>(
    `select calls, round(((total_exec_time + total_plan_time) * 1000 / $1)::numeric, 1) as us, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) as query
     from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
     order by total_exec_time + total_plan_time desc limit 8`,
    [rows],
  );
  log(`    statements, ${phase} (µs per written row, calls):`);
  for (const row of top) log(`      ${String(row.us).padStart(7)} ${String(row.calls).padStart(7)}  ${row.query}`);
}

/** CPU per phase, in ms per written row: PostgreSQL (every backend of the database), the API process, the stream clients' process, this process (the writers). */
interface PhaseCpu {
  pg: number;
  api: number;
  streams: number;
  load: number;
}
async function backends(): Promise<number[]> {
  const { rows } = await owner.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  return rows.map((row) => row.pid);
}
async function cpuNow() {
  const pids = await backends();
  return { pids, pg: cpuSeconds(pids), processes: cpuSeconds([api.pid as number, clients.pid as number]), own: process.cpuUsage() };
}
/** `writers`: the writers' own connections and their CPU, read by the writers (the connections have ended by now). */
async function cpuSince(
  before: Awaited<ReturnType<typeof cpuNow>>,
  rows: number,
  writers: { pids: number[]; seconds: number },
): Promise<PhaseCpu> {
  const after = cpuSeconds([...new Set([...before.pids, ...(await backends())])].filter((pid) => !writers.pids.includes(pid)));
  const processes = cpuSeconds([api.pid as number, clients.pid as number]);
  const own = process.cpuUsage(before.own);
  const perRow = (seconds: number) => (seconds * 1000) / rows;
  const of = (pid: number) => (processes.get(pid) ?? 0) - (before.processes.get(pid) ?? 0);
  return {
    pg: perRow((cpuDelta(before.pg, after) ?? 0) + writers.seconds),
    api: perRow(of(api.pid as number)),
    streams: perRow(of(clients.pid as number)),
    load: perRow((own.user + own.system) / 1e6),
  };
}

/**
 * Every phase starts from the same state (startPhase) with the processes quiet: the API, the
 * stream clients and the database use under 5 % of a core for 300 ms (at most 15 s). Without that
 * wait, a phase that followed the closing of 3,000 streams ran while their teardown (sockets,
 * garbage collection) still took CPU, at half the rate of the same phase after a quiet start.
 */
async function settle(): Promise<void> {
  await startPhase(owner);
  const busy = async () => {
    const pids = [api.pid as number, clients.pid as number, ...(await backends())];
    const before = cpuSeconds(pids);
    await sleep(300);
    return cpuDelta(before, cpuSeconds(pids)) ?? 0;
  };
  for (const started = Date.now(); Date.now() - started < 15_000 && (await busy()) > 0.05 * 0.3;);
}

async function load(mode: 'votes' | 'inserts', recipients: typeof authors) {
  let votes: { token: string; postId: string }[] = [];
  if (mode === 'votes') {
    // A round of posts of their own for these authors (one per author), more rounds if needed.
    const posts = postsByRound.slice(nextRound, nextRound + 2).flatMap((round) => round.slice(0, recipients.length));
    nextRound += 2;
    votes = posts.map((postId, i) => ({ postId, token: (voters[i % voters.length] as (typeof voters)[number]).token }));
  }
  await settle();
  if (statements) await owner.query('select pg_stat_statements_reset()');
  const cpuBefore = await cpuNow();
  const worker = new Worker(new URL('./live-load.ts', import.meta.url), {
    workerData: { mode, base, ownerUrl, votes, recipients: recipients.map((user) => user.id), concurrency, seconds },
  });
  const result = await new Promise<{
    responses: [string, number][];
    seconds: number;
    dbCpuSeconds: number;
    pids: number[];
    failure?: string;
  }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  if (result.failure) throw new Error(result.failure);
  const cpu = await cpuSince(cpuBefore, result.responses.length, { pids: result.pids, seconds: result.dbCpuSeconds });
  if (statements) await logStatements(`${mode}, ${clientsOpen} streams`, result.responses.length);
  return { rate: result.responses.length / result.seconds, responses: result.responses, cpu };
}

interface Delivery {
  p50: number;
  p95: number;
  missing: number;
}
async function deliveryOf(responses: [string, number][]): Promise<Delivery> {
  await sleep(2000);
  const { arrivals } = (await ask({ type: 'collect' })) as { arrivals: [string, number][] };
  const arrived = new Map<string, number>();
  for (const [key, at] of arrivals) if (!arrived.has(key)) arrived.set(key, at);
  const latencies: number[] = [];
  let missing = 0;
  for (const [key, at] of responses) {
    const arrival = arrived.get(key);
    if (arrival === undefined) missing += 1;
    else latencies.push(Math.max(0, arrival - at));
  }
  return { p50: quantile(latencies, 0.5), p95: quantile(latencies, 0.95), missing };
}

interface Round {
  votes0: number;
  votesS: number;
  inserts0: number;
  insertsS: number;
  voteDelivery: Delivery;
  insertDelivery: Delivery;
  openMs: number;
  cpu: { votes0: PhaseCpu; votesS: PhaseCpu; inserts0: PhaseCpu; insertsS: PhaseCpu };
}
async function round(streams: number, repeat: number): Promise<Round> {
  const recipients = authors.slice(0, streams);
  const without = async () => {
    const votes = await load('votes', recipients);
    const inserts = await load('inserts', recipients);
    return { votes: votes.rate, inserts: inserts.rate, votesCpu: votes.cpu, insertsCpu: inserts.cpu };
  };
  const withStreams = async () => {
    const { ms } = await ask({ type: 'open', tokens: recipients.map((user) => user.token) });
    clientsOpen = recipients.length;
    await sleep(500);
    const votes = await load('votes', recipients);
    const voteDelivery = await deliveryOf(votes.responses);
    const inserts = await load('inserts', recipients);
    const insertDelivery = await deliveryOf(inserts.responses);
    await ask({ type: 'close' });
    clientsOpen = 0;
    await sleep(500);
    return {
      votes: votes.rate,
      inserts: inserts.rate,
      votesCpu: votes.cpu,
      insertsCpu: inserts.cpu,
      voteDelivery,
      insertDelivery,
      openMs: ms as number,
    };
  };
  // Alternate which phase goes first.
  const [a, b] =
    repeat % 2 === 0 ? [await without(), await withStreams()] : await withStreams().then(async (w) => [await without(), w] as const);
  return {
    votes0: a.votes,
    votesS: b.votes,
    inserts0: a.inserts,
    insertsS: b.inserts,
    voteDelivery: b.voteDelivery,
    insertDelivery: b.insertDelivery,
    openMs: b.openMs,
    cpu: { votes0: a.votesCpu, votesS: b.votesCpu, inserts0: a.insertsCpu, insertsS: b.insertsCpu },
  };
}

function report(streams: number, rounds: Round[]) {
  log(`\n${streams} streams open in one API process (${rounds.length} repeats, ${seconds} s phases, ${concurrency} writers):`);
  for (const [i, r] of rounds.entries()) {
    log(
      `  repeat ${i + 1}: votes/s ${r.votes0.toFixed(0)} without streams, ${r.votesS.toFixed(0)} with; arrival p50 ${r.voteDelivery.p50.toFixed(0)} ms, ` +
        `p95 ${r.voteDelivery.p95.toFixed(0)} ms, missing after 2 s ${r.voteDelivery.missing}; inserts/s ${r.inserts0.toFixed(0)} without, ` +
        `${r.insertsS.toFixed(0)} with; arrival p50 ${r.insertDelivery.p50.toFixed(0)} ms, p95 ${r.insertDelivery.p95.toFixed(0)} ms, ` +
        `missing ${r.insertDelivery.missing}; ${streams} streams opened in ${(r.openMs / 1000).toFixed(1)} s`,
    );
    const cpu = (c: PhaseCpu) => [c.pg, c.api, c.streams, c.load].map((ms) => ms.toFixed(3)).join(' / ');
    log(
      `    CPU ms per written row (PostgreSQL / API / stream clients / writers): votes ${cpu(r.cpu.votes0)} without, ${cpu(r.cpu.votesS)} with; ` +
        `inserts ${cpu(r.cpu.inserts0)} without, ${cpu(r.cpu.insertsS)} with`,
    );
  }
}

log(`machine: ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; PostgreSQL ${version}; API from ${apiDir}`);
const first: Round[] = [];
first.push(await round(streamCount, 0));
report(streamCount, first);

if (replay) {
  await ask({ type: 'open', tokens: authors.slice(0, streamCount).map((user) => user.token) });
  const { ms, events } = (await ask({
    type: 'resume',
    tokens: replayUsers.map((user) => user.token),
    lastEventIds: replayUsers.map((user) => placeOf.get(user.id)),
    expect: replayRows,
  })) as { ms: number[]; events: number[] };
  await ask({ type: 'close' });
  log(
    `  replay: ${replayClients} clients reconnecting at once with Last-Event-ID, ${replayRows} rows each, ${streamCount} other streams open: ` +
      `complete after p50 ${quantile(ms, 0.5).toFixed(0)} ms, p95 ${quantile(ms, 0.95).toFixed(0)} ms, all ${Math.max(...ms).toFixed(0)} ms; ` +
      `${events.filter((count) => count === replayRows).length} of ${replayClients} got all ${replayRows} rows`,
  );
}

const goal: Round[] = [];
for (let i = 0; i < repeats; i += 1) goal.push(await round(goalStreams, i));
report(goalStreams, goal);

const line = (name: string, values: number[], op: '<' | '>=' | '<=', target: number, unit = '') => {
  const median = quantile(values, 0.5);
  const ok = op === '<' ? median < target : op === '>=' ? median >= target : median <= target;
  log(`goal ${name}: ${summary(values)}; target ${op} ${target}${unit}) ${ok ? 'ok' : 'short'}`);
};
log('');
const streamsLabel = `${goalStreams.toLocaleString('en')} streams`;
line(
  `live p95 commit-to-arrival ms (${streamsLabel}, steady votes)`,
  goal.map((r) => r.voteDelivery.p95),
  '<',
  250,
  ' ms',
);
line(
  `live rows missing 2 s after writes stop (${streamsLabel})`,
  goal.map((r) => r.voteDelivery.missing + r.insertDelivery.missing),
  '<=',
  0,
);
line(
  `live vote throughput with / without ${streamsLabel}`,
  goal.map((r) => r.votesS / r.votes0),
  '>=',
  0.9,
);
line(
  `live notification inserts with / without ${streamsLabel}`,
  goal.map((r) => r.insertsS / r.inserts0),
  '>=',
  0.8,
);

clients.kill();
api.kill('SIGINT');
await new Promise((resolve) => api.once('exit', resolve));
await owner.end();
await admin.query(`drop database ${database} with (force)`);
await admin.end();
await embedded?.stop();
await rm(dataDir, { recursive: true, force: true });
