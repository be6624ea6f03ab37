// Vote cost benchmark. Not part of `npm test`: `npm run bench` (or `npm run bench votes`).
//
// The service runs as production runs it: `node main.ts` in a process of its own (API, notification
// dispatcher and worker), on a fresh database of DATABASE_URL's server, or of a throwaway embedded
// PostgreSQL (durable: fsync and synchronous commit on). Load comes from another process
// (vote-load.ts). Every repeat runs each phase once, in alternating order, and each goal is a
// ratio of two phases of the same repeat: the machine is shared, so only ratios measured side by
// side mean anything. Phases (BENCH_VOTES operations each, BENCH_CONCURRENCY at a time):
//   floor        the one-row floor: a receipt and one of 16 counter slots, one statement (a printed
//                ratio: the contract makes a vote write more than that)
//   contract-floor  the smallest SQL writing exactly the rows the contract makes a vote write
//                (receipt, scope receipt, sealed ballot, the author's notification, the activity
//                event) in the real tables, one statement, one round trip
//   sql          the vote's SQL exactly as the API sends it (sealed in the client, the viewer's
//                settings and cast_vote, which checks the session, and commit, pipelined: one round trip)
//   http         POST /posts/{postId}/vote over 1,000 public posts
//   hot          the same, all on one post
//   hub          the same over 1,000 public_hub posts of one hub whose members vote
//   session      the session lookup alone (what every authenticated request pays), committed
//   onboarding   GET /users/me/onboarding/status
//   session-paced  the session lookup again, paced at the rate the onboarding phase just ran at
//                (run right after it): the floor onboarding's database CPU is held against, since
//                a server's CPU per statement grows as its arrival rate falls (each statement of a
//                slower stream wakes a sleeping backend)
//   summary-pending  GET /posts/{postId}/vote/summary over 1,000 posts with k - 1 pending sealed ballots each
//   summary-tallied  the same over 1,000 posts whose k - 1 votes are all in the counters
// During the hot phase the orchestrator samples the post's pending ballots every 50 ms: the
// tallier's lag is the time from a ballot's first sighting to its last (commit to tally, within
// the sampling step).
// PostgreSQL CPU per operation comes from the backends' own CPU counters (/proc), so it needs the
// server on this machine.
//
// BENCH_BEFORE=<git ref> also runs that commit's service (its own migrations, on its own database)
// through the same phases, alternating with the current one: the before/after table of README.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { roleUrl } from '../../db/roles.ts';
import { createTokens } from '../../server/auth/tokens.ts';
import { cpuDelta, cpuSeconds } from './backend-cpu.ts';
import { startPhase } from './phase-start.ts';
import { makePosts, seed, type BenchData } from './vote-data.ts';
import type { BallotPosition } from '../../server/votes/ballots.ts';
import type { LoadItem, LoadJob, SessionCheck } from './vote-load.ts';
import { benchBallotKey } from './vote-wire.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const votes = Number(process.env.BENCH_VOTES ?? 1500);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const beforeRef = process.env.BENCH_BEFORE;
const spreadPosts = 1000;
// Eight operations per connection before the timed ones: a statement inside a PL/pgSQL or SQL
// function is planned for its parameters on each of its first five calls on a connection, and its
// plan for good on the sixth; a pool's connection serves thousands of requests, so those plans are
// not what a request costs.
const warmupCount = concurrency * 8;
const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];
const log = (line: string) => process.stdout.write(`${line}\n`);

type Phase =
  | 'floor'
  | 'contract-floor'
  | 'sql'
  | 'http'
  | 'hot'
  | 'hub'
  | 'session'
  | 'onboarding'
  | 'session-paced'
  | 'summary-pending'
  | 'summary-tallied';
/** Operations per second; CPU per operation of PostgreSQL, (HTTP phases) the service process, and the load process. */
interface PhaseResult {
  rate: number;
  cpuMs: number | null;
  /** HTTP phases: CPU per operation of the service's other backends (worker, dispatcher) meanwhile. */
  otherCpuMs: number | null;
  serviceCpuMs: number | null;
  loadCpuMs: number;
}
const allPhases: Phase[] = [
  'floor',
  'contract-floor',
  'sql',
  'http',
  'hot',
  'hub',
  'session',
  'onboarding',
  'session-paced',
  'summary-pending',
  'summary-tallied',
];
/**
 * BENCH_PHASES=session,onboarding runs those phases only (a goal whose phases did not run is left
 * out); session-paced runs whenever onboarding does, right after it.
 */
const named = process.env.BENCH_PHASES?.split(',');
const phases: Phase[] = named
  ? allPhases.filter((phase) => named.includes(phase) || (phase === 'session-paced' && named.includes('onboarding')))
  : allPhases;
/** Phases that need sealed ballots (a BENCH_BEFORE schema without them skips them). */
const sealedPhases: Phase[] = ['contract-floor', 'summary-pending', 'summary-tallied'];
const ballotKey = randomBytes(32).toString('hex');
const { setting: ballotSetting, box: ballotBox } = benchBallotKey(ballotKey);
const batch = 5;
/** Tallier lag samples (ms), by variant: hot phase ballots from first to last sighting. */
const tallierLag = new Map<string, number[]>();

interface Variant {
  name: string;
  dir: string;
  database: string;
  ownerUrl: string;
  owner: pg.Pool;
  server: ChildProcess;
  base: string;
  data: BenchData;
  /** How its API checks the vote's session (see LoadJob.sessionCheck). */
  sessionCheck: SessionCheck;
  results: Record<Phase, PhaseResult>[];
}

let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-bench-'));
await chmod(scratch, 0o755);
let adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  embedded = await startEmbeddedPostgres(scratch, { persistent: false, durable: true });
  adminUrl = embedded.url;
}
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const server = (
  await admin.query<{ version: string; fsync: string; sync: string }>(
    `select version() as version, current_setting('fsync') as fsync, current_setting('synchronous_commit') as sync`,
  )
).rows[0] as { version: string; fsync: string; sync: string };
const jwtSecret = randomBytes(24).toString('hex');
const tokens = createTokens(jwtSecret);

async function waitForServer(base: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    const answer = await fetch(`${base}/auth/login-config`).catch(() => undefined);
    if (answer?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('service did not start');
}

async function startVariant(name: string, dir: string): Promise<Variant> {
  const database = `opinion_bench_${name}_${randomBytes(3).toString('hex')}`;
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl as string);
  url.pathname = `/${database}`;
  const ownerUrl = url.toString();
  const port = await freePort();
  const dataDir = path.join(scratch, name);
  // BENCH_CPU_PROF=<dir>: the service writes a V8 CPU profile there when it stops (node --cpu-prof).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF, name)}`] : [];
  const child = spawn(process.execPath, [...profile, path.join(dir, 'main.ts')], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      DATABASE_URL: ownerUrl,
      PORT: String(port),
      JWT_SECRET: jwtSecret,
      BALLOT_KEY: ballotSetting,
      BALLOT_BATCH: String(batch),
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      // Votes touch no object storage: an endpoint that is never called, instead of a local store.
      S3_ENDPOINT: 'http://127.0.0.1:9',
    },
  });
  const base = `http://127.0.0.1:${port}/api/v1`;
  await waitForServer(base, child);
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 4 });
  owner.on('error', () => {});
  const data = await seed(owner, votes + warmupCount);
  const gate = await owner.query<{ gate: boolean; in_vote: boolean; sealed: boolean }>(
    `select to_regprocedure('app.session_gate(int, int)') is not null as gate,
            to_regprocedure('app.cast_vote(uuid, text, text, uuid[], text[], int)') is not null as sealed,
            (select prosrc like '%app.viewer_session_id()%' from pg_proc where oid = to_regprocedure('app.cast_vote(uuid, app.vote_position)')) as in_vote`,
  );
  const sessionCheck: SessionCheck = gate.rows[0]?.sealed
    ? 'sealed'
    : gate.rows[0]?.in_vote
      ? 'cast_vote'
      : gate.rows[0]?.gate
        ? 'gate'
        : 'round-trip';
  return { name, dir, database, ownerUrl, owner, server: child, base, data, sessionCheck, results: [] };
}

/** The source tree of a git ref, runnable with this tree's node_modules. */
async function checkout(ref: string): Promise<string> {
  const dir = path.join(scratch, 'before-src');
  execFileSync('mkdir', ['-p', dir]);
  execFileSync('sh', ['-c', `git -C "${root}" archive "${ref}" | tar -x -C "${dir}"`]);
  await symlink(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

/**
 * Backends of the variant's database other than this process's owner connections: the API pool's
 * (application_name api: the requests' own cost) or the rest (the worker, the dispatcher).
 */
async function serverBackends(variant: Variant, which: 'api' | 'others'): Promise<number[]> {
  const { rows } = await variant.owner.query<{ pid: number }>(
    `select pid from pg_stat_activity where datname = current_database() and usename in ('authenticator', 'app_worker')
       and (application_name = 'api') = $1`,
    [which === 'api'],
  );
  return rows.map((r) => r.pid);
}

/**
 * Waits until the variant's worker has run every job that is due (the tallies the previous phase
 * queued, above all), so that a phase does not pay for the one before it.
 */
async function workerSettled(variant: Variant): Promise<void> {
  for (;;) {
    const { rows } = await variant.owner.query<{ due: number }>(
      `select count(*)::int as due from graphile_worker.jobs where run_at <= now() and attempts < max_attempts`,
    );
    if (rows[0]?.due === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Runs one job in a load process. `onWarm` runs once the process has warmed up, right before the
 * timed operations (the orchestrator reads the service's CPU counters there).
 */
async function runLoad(
  job: LoadJob,
  onWarm: () => Promise<void>,
): Promise<{ rate: number; dbCpuSeconds: number | null; loadCpuSeconds: number }> {
  const file = path.join(scratch, `job-${randomBytes(4).toString('hex')}.json`);
  await writeFile(file, JSON.stringify(job));
  const child = spawn(process.execPath, [path.join(root, 'test', 'bench', 'vote-load.ts'), file], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let warm = false;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    out += chunk;
    if (!warm && out.startsWith('warm\n')) {
      warm = true;
      void onWarm().then(() => child.stdin.write('go\n'));
    }
  });
  await new Promise((resolve) => child.once('exit', resolve));
  await rm(file);
  const result = JSON.parse(out.trim().split('\n').at(-1) as string) as {
    rate: number;
    dbCpuSeconds: number | null;
    loadCpuSeconds: number;
    failure?: string;
  };
  if (result.failure) throw new Error(result.failure);
  return result;
}

/** k - 1 votes on each post: as pending sealed ballots, or already in the counters. */
async function preparePending(variant: Variant, posts: string[], pending: boolean): Promise<void> {
  if (pending) {
    const rows = posts.flatMap((post) =>
      Array.from({ length: batch - 1 }, (_, i) => {
        const sealed = ballotBox.seal(post, null, positions[i % positions.length] as BallotPosition);
        return [post, sealed.subarray(0, 12).toString('hex'), sealed.subarray(12).toString('hex')];
      }),
    );
    await variant.owner.query(
      `insert into app_private.sealed_ballots (post_id, hub_id, key_id, nonce, ciphertext)
       select p, null, $4, decode(n, 'hex'), decode(c, 'hex') from unnest($1::uuid[], $2::text[], $3::text[]) x (p, n, c)`,
      [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), ballotBox.keyId],
    );
  } else {
    await variant.owner.query(
      `update app.vote_counters set strong_left_count = strong_left_count + 1, left_count = left_count + 1, neutral_count = neutral_count + 1,
         right_count = right_count + $2 - 3
       where post_id = any ($1) and hub_id is null and slot = 0`,
      [posts, batch - 1],
    );
  }
  await variant.owner.query('analyze app_private.sealed_ballots');
}

/** Samples the hot post's pending ballots until stopped; answers each tallied ballot's lag (ms). */
function watchTallier(variant: Variant, postId: string): () => Promise<number[]> {
  const firstSeen = new Map<string, number>();
  const lags: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const now = performance.now();
      const { rows } = await variant.owner.query<{ id: string }>('select id from app_private.sealed_ballots where post_id = $1', [postId]);
      const present = new Set(rows.map((r) => r.id));
      for (const id of present) if (!firstSeen.has(id)) firstSeen.set(id, now);
      for (const [id, seen] of firstSeen) {
        if (!present.has(id)) {
          lags.push(now - seen);
          firstSeen.delete(id);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return async () => {
    // Let the tallier finish what the phase left (at most one more batch), then stop.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    stopped = true;
    await loop;
    return lags;
  };
}

async function runPhase(variant: Variant, phase: Phase, pace?: number): Promise<PhaseResult> {
  const { data } = variant;
  if (sealedPhases.includes(phase) && variant.sessionCheck !== 'sealed')
    return { rate: Number.NaN, cpuMs: null, otherCpuMs: null, serviceCpuMs: null, loadCpuMs: 0 };
  const postCount = phase === 'hot' ? 1 : spreadPosts;
  const reads = phase === 'summary-pending' || phase === 'summary-tallied';
  const needsPosts = !(['floor', 'session', 'session-paced', 'onboarding'] as Phase[]).includes(phase);
  const posts = needsPosts
    ? await makePosts(variant.owner, data, postCount, phase === 'hub' ? 'hub' : 'public')
    : Array.from({ length: spreadPosts }, () => crypto.randomUUID());
  if (reads) await preparePending(variant, posts, phase === 'summary-pending');
  if (needsPosts) await variant.owner.query('analyze app.posts');
  const all: LoadItem[] = data.voters.map((voter, i) => ({
    ...voter,
    token: tokens.issueAccess(voter),
    postId: posts[i % posts.length] as string,
    position: positions[i % positions.length] as string,
  }));
  const job: LoadJob = {
    mode: {
      floor: 'floor',
      'contract-floor': 'contract-floor',
      sql: 'sql',
      session: 'session',
      'session-paced': 'session',
      http: 'http-vote',
      hot: 'http-vote',
      hub: 'http-vote',
      onboarding: 'http-onboarding',
      'summary-pending': 'http-summary',
      'summary-tallied': 'http-summary',
    }[phase] as LoadJob['mode'],
    databaseUrl: phase === 'floor' || phase === 'contract-floor' ? variant.ownerUrl : roleUrl(variant.ownerUrl, 'authenticator'),
    ballotKey,
    batch,
    authorId: data.authorId,
    base: variant.base,
    sessionCheck: variant.sessionCheck,
    concurrency,
    pace,
    warmup: all.slice(0, warmupCount),
    items: all.slice(warmupCount),
  };
  await workerSettled(variant);
  await startPhase(variant.owner);
  const watching = phase === 'hot' && variant.sessionCheck === 'sealed' ? watchTallier(variant, posts[0] as string) : undefined;
  let pidsBefore: number[] = [];
  let othersBefore: number[] = [];
  let before = new Map<number, number>();
  let othersCpuBefore = new Map<number, number>();
  const servicePid = variant.server.pid as number;
  let serviceBefore = new Map<number, number>();
  const result = await runLoad(job, async () => {
    pidsBefore = await serverBackends(variant, 'api');
    othersBefore = await serverBackends(variant, 'others');
    before = cpuSeconds(pidsBefore);
    othersCpuBefore = cpuSeconds(othersBefore);
    serviceBefore = cpuSeconds([servicePid]);
  });
  const serviceCpu = cpuDelta(serviceBefore, cpuSeconds([servicePid]));
  if (watching) tallierLag.set(variant.name, [...(tallierLag.get(variant.name) ?? []), ...(await watching())]);
  // The requests' own cost: the API pool's backends. What the worker and the dispatcher ran meanwhile is printed apart.
  const serverCpu = cpuDelta(before, cpuSeconds([...new Set([...pidsBefore, ...(await serverBackends(variant, 'api'))])]));
  const othersCpu = cpuDelta(othersCpuBefore, cpuSeconds([...new Set([...othersBefore, ...(await serverBackends(variant, 'others'))])]));
  // SQL phases: the load process's own connections; HTTP phases: the service's connections.
  const cpu =
    job.mode === 'floor' || job.mode === 'contract-floor' || job.mode === 'sql' || job.mode === 'session' ? result.dbCpuSeconds : serverCpu;
  if (needsPosts && !reads) {
    const counted = await variant.owner.query<{ n: number }>('select count(*)::int as n from app.vote_receipts where post_id = any($1)', [
      posts,
    ]);
    const expected = all.length; // warm-up votes count too
    if (counted.rows[0]?.n !== expected) throw new Error(`${variant.name} ${phase}: ${counted.rows[0]?.n} receipts, expected ${expected}`);
  }
  const perOp = (seconds: number | null) => (seconds === null ? null : (seconds * 1000) / job.items.length);
  return {
    rate: result.rate,
    cpuMs: perOp(cpu),
    otherCpuMs: job.mode.startsWith('http') ? perOp(othersCpu) : null,
    serviceCpuMs: job.mode.startsWith('http') ? perOp(serviceCpu) : null,
    loadCpuMs: perOp(result.loadCpuSeconds) as number,
  };
}

const variants: Variant[] = [];
const stop = async () => {
  for (const variant of variants) {
    variant.server.kill('SIGTERM');
    await new Promise((resolve) => (variant.server.exitCode === null ? variant.server.once('exit', resolve) : resolve(null)));
    await variant.owner.end();
    await admin.query(`drop database ${variant.database} with (force)`);
  }
  await admin.end();
  await embedded?.stop();
  await rm(scratch, { recursive: true, force: true });
};

try {
  variants.push(await startVariant('current', root));
  if (beforeRef) variants.push(await startVariant('before', await checkout(beforeRef)));
  log(
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, load average ${os
      .loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')}`,
  );
  log(
    `PostgreSQL: ${server.version.split(' on ')[0]} (${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded'}), fsync ${server.fsync}, synchronous_commit ${server.sync}`,
  );
  log(
    `repeats: ${repeats}, operations per phase: ${votes} (+${warmupCount} warm-up), concurrency: ${concurrency}${beforeRef ? `, before = ${beforeRef}` : ''}`,
  );
  for (let r = 0; r < repeats; r++) {
    // Alternating order, with session-paced right behind onboarding (it takes onboarding's rate).
    const alternating = phases.filter((phase) => phase !== 'session-paced');
    const order = (r % 2 === 0 ? alternating : [...alternating].reverse()).flatMap((phase) =>
      phase === 'onboarding' && phases.includes('session-paced') ? [phase, 'session-paced' as const] : [phase],
    );
    const results = variants.map(() => ({}) as Record<Phase, PhaseResult>);
    for (const phase of order) {
      for (const [i, variant] of (r % 2 === 0 ? variants : [...variants].reverse()).entries()) {
        const index = r % 2 === 0 ? i : variants.length - 1 - i;
        const pace = phase === 'session-paced' ? (results[index] as Record<Phase, PhaseResult>).onboarding.rate : undefined;
        (results[index] as Record<Phase, unknown>)[phase] = await runPhase(variant, phase, pace);
      }
    }
    results.forEach((result, i) => (variants[i] as Variant).results.push(result));
    log(
      `repeat ${r + 1}: ` +
        variants.map((v) => `${v.name} ` + phases.map((p) => `${p} ${v.results[r]?.[p].rate.toFixed(0)}/s`).join(', ')).join(' | '),
    );
  }

  const stats = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return { min: sorted[0] as number, median: sorted[Math.floor(sorted.length / 2)] as number, max: sorted.at(-1) as number };
  };
  const fmt = (n: number, digits = 0) => n.toFixed(digits);
  log('');
  log(
    'operations per second, and CPU per operation of PostgreSQL, of the service process and of the load process (median over repeats; min-max):',
  );
  for (const variant of variants) {
    for (const phase of phases) {
      const rate = stats(variant.results.map((r) => r[phase].rate));
      const median = (key: 'cpuMs' | 'otherCpuMs' | 'serviceCpuMs' | 'loadCpuMs') => {
        const values = variant.results.map((r) => r[phase][key]).filter((n): n is number => n !== null);
        return values.length ? stats(values) : undefined;
      };
      const cpu = median('cpuMs');
      const others = median('otherCpuMs');
      const service = median('serviceCpuMs');
      const load = median('loadCpuMs');
      log(
        `  ${variant.name.padEnd(8)} ${phase.padEnd(11)} ${fmt(rate.median).padStart(6)}/s (${fmt(rate.min)}-${fmt(rate.max)})` +
          (cpu ? `   PostgreSQL ${fmt(cpu.median, 3)} ms (${fmt(cpu.min, 3)}-${fmt(cpu.max, 3)})` : '   PostgreSQL n/a') +
          (others ? ` (+ worker and dispatcher ${fmt(others.median, 3)} ms)` : '') +
          (service ? `   service ${fmt(service.median, 3)} ms` : '') +
          (load ? `   load ${fmt(load.median, 3)} ms` : ''),
      );
    }
  }
  const printed = (name: string, ratios: number[]) => {
    const s = stats(ratios);
    return `${name}: ${fmt(s.median, 2)} (min ${fmt(s.min, 2)}, max ${fmt(s.max, 2)}; printed, no goal)`;
  };
  const goal = (name: string, ratios: number[], op: '>=' | '<=', target: number) => {
    const s = stats(ratios);
    const ok = op === '>=' ? s.median >= target : s.median <= target;
    return `${name}: ${fmt(s.median, 2)} (min ${fmt(s.min, 2)}, max ${fmt(s.max, 2)}; target ${op} ${target}) ${ok ? 'ok' : 'short'}`;
  };
  const goals = (variant: Variant): string[] => {
    const ratio = (a: Phase, b: Phase) => variant.results.map((r) => (r[a]?.rate ?? Number.NaN) / (r[b]?.rate ?? Number.NaN));
    const cpuRatio = (a: Phase, b: Phase) =>
      variant.results.flatMap((r) => (r[a] && r[b] && r[a].cpuMs !== null && r[b].cpuMs ? [r[a].cpuMs / r[b].cpuMs] : []));
    const cpuRatios = cpuRatio('onboarding', 'session-paced');
    const saturatedRatios = cpuRatio('onboarding', 'session');
    const sealed = variant.sessionCheck === 'sealed';
    return [
      printed('vote-sql-vs-floor', ratio('sql', 'floor')),
      sealed
        ? goal('vote-sql-vs-contract-floor', ratio('sql', 'contract-floor'), '>=', 0.7)
        : 'vote-sql-vs-contract-floor: n/a (no sealed ballots)',
      // Time per read with k - 1 pending ballots over time per read with none (a rate ratio inverted).
      sealed
        ? goal('vote_summary_pending_vs_tallied', ratio('summary-tallied', 'summary-pending'), '<=', 1.3)
        : 'vote_summary_pending_vs_tallied: n/a (no sealed ballots)',
      goal('vote-http-vs-sql', ratio('http', 'sql'), '>=', 0.5),
      goal('hot-vs-spread', ratio('hot', 'http'), '>=', 0.8),
      goal('hub-vs-public', ratio('hub', 'http'), '>=', 0.8),
      cpuRatios.length
        ? goal('onboarding-cpu-vs-session-lookup', cpuRatios, '<=', 2)
        : 'onboarding-cpu-vs-session-lookup: n/a (database CPU is readable only for a server on this machine) short',
      saturatedRatios.length ? printed('onboarding-cpu-vs-saturated-session', saturatedRatios) : 'onboarding-cpu-vs-saturated-session: n/a',
    ];
  };
  /** The phases each goal line compares (BENCH_PHASES may leave some out). */
  const goalPhases: Record<string, Phase[]> = {
    'vote-sql-vs-floor': ['sql', 'floor'],
    'vote-sql-vs-contract-floor': ['sql', 'contract-floor'],
    vote_summary_pending_vs_tallied: ['summary-tallied', 'summary-pending'],
    'vote-http-vs-sql': ['http', 'sql'],
    'hot-vs-spread': ['hot', 'http'],
    'hub-vs-public': ['hub', 'http'],
    'onboarding-cpu-vs-session-lookup': ['onboarding', 'session-paced'],
    'onboarding-cpu-vs-saturated-session': ['onboarding', 'session'],
  };
  const ranGoals = (variant: Variant) =>
    Object.entries(goalPhases)
      .filter(([, needs]) => needs.every((phase) => phases.includes(phase)))
      .map(([name]) => goals(variant).find((line) => line.startsWith(`${name}:`)) as string);
  for (const variant of variants) {
    const lags = [...(tallierLag.get(variant.name) ?? [])].sort((a, b) => a - b);
    if (lags.length === 0) continue;
    const p = (q: number) => fmt(lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] as number);
    log(
      `${variant.name} tallier lag (hot phase, ballot commit to tally, sampled every 50 ms): p50 ${p(0.5)} ms, p95 ${p(0.95)} ms, max ${p(1)} ms over ${lags.length} ballots`,
    );
  }
  // The same ratios of the before variant, for comparison; the goal lines (last) are the current code's.
  for (const variant of variants.slice(1)) {
    log('');
    for (const line of ranGoals(variant)) log(`${variant.name} ${line}`);
  }
  log('');
  for (const line of ranGoals(variants[0] as Variant)) log(`goal ${line}`);
} finally {
  await stop();
}
