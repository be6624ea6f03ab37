// Scale benchmark: `npm run bench -- scale`. Not part of `npm test`.
// For every hot dimension (comments on a post, replies of a comment, votes received, posts written,
// followers and following with and without q, members of a hub with q and role, its invitations and
// join requests, active users, hub feed, discussions, messages, thread replies, saved posts and
// discussions, reposts, my hubs, people and hub search, a post in many hubs), the same request with
// a small and a large collection behind it: two worlds (test/bench/scale-data.ts), each in its own
// database behind its own API process (`node main.ts --only=api` of the measured tree), measured from
// a separate client process (feeds-load.ts), one request at a time, alternating the worlds, in rounds.
// It prints p50/p95 per request and world (median over rounds, min, max) and, per request, the goal
// line `goal scale_<dimension>_<request>: <ratio> (min, max; target <= 1.5) ok|short`: the ratio of
// the large world's p95 to the small world's, per round, median over rounds.
// Settings:
//   BENCH_SCALE (1: worlds of 1,000 and 100,000 rows, 1,000,000 users and votes; 0.1 for a quick run)
//   BENCH_SCALE_ROUNDS (5), BENCH_SCALE_REQUESTS (20 per request, world and round)
//   BENCH_BEFORE=<git ref>: measure that commit's API and migrations (git archive into a scratch
//     folder, this checkout's node_modules), for the before side of a change
//   BENCH_SCALE_KEEP=1: keep the generated databases (named by tree, scale and world) and reuse them
//     on the next run (pending migrations are applied); with DATABASE_URL on that server, else in a
//     persistent embedded PostgreSQL under .data/bench-scale
//   BENCH_SCALE_ONLY=<regex>: measure only the requests whose goal name matches
//   BENCH_SCALE_SHAPES (spread,hot): the data shapes measured, each with its own two worlds, one
//     after the other (scale-data.ts): spread, each subject beside a population of 1,000,000 users;
//     hot, one key holding every row of its column (one author of every comment, the star with
//     every follow, one word in every name). Hot goal lines are `goal scale_hot_<dimension>_...`.
// Uses DATABASE_URL's server when set, else an embedded PostgreSQL.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import jwt from 'jsonwebtoken';
import { benchId, generate, type ScaleSize, sizes, space, subjectSessions } from './scale-data.ts';
import { allKinds, hotKinds, type Kind, type Request } from './scale-kinds.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const scale = Number(process.env.BENCH_SCALE ?? 1);
const rounds = Number(process.env.BENCH_SCALE_ROUNDS ?? 5);
const perKind = Number(process.env.BENCH_SCALE_REQUESTS ?? 20);
const keep = process.env.BENCH_SCALE_KEEP === '1';
const before = process.env.BENCH_BEFORE;
const only = process.env.BENCH_SCALE_ONLY ? new RegExp(process.env.BENCH_SCALE_ONLY) : undefined;
const shapes = (process.env.BENCH_SCALE_SHAPES ?? 'spread,hot').split(',').map((shape) => shape.trim()) as ('spread' | 'hot')[];
const jwtSecret = randomBytes(24).toString('hex');
const log = (line: string) => process.stdout.write(`${line}\n`);

let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-bench-scale-'));
await chmod(scratch, 0o755);
let adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  const dataDir = keep ? path.join(root, '.data', 'bench-scale') : path.join(scratch, 'pg');
  await mkdir(dataDir, { recursive: true });
  embedded = await startEmbeddedPostgres(dataDir, { persistent: keep, durable: false });
  adminUrl = embedded.url;
}
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const version = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;

// The measured tree: this checkout, or the commit BENCH_BEFORE names.
let tree = root;
let treeName = 'current';
if (before) {
  tree = path.join(scratch, 'tree');
  await mkdir(tree);
  execFileSync('sh', ['-c', `git -C "${root}" archive "${before}" | tar -x -C "${tree}"`]);
  execFileSync('ln', ['-s', path.join(root, 'node_modules'), path.join(tree, 'node_modules')]);
  treeName = execFileSync('git', ['-C', root, 'rev-parse', '--short', before]).toString().trim();
}
// Access tokens as the API issues them (server/auth/tokens.ts), valid for a day: a run outlasts the
// API's 15 minutes.
const issueToken = (userId: string, sessionId: string) =>
  jwt.sign({ sid: sessionId, typ: 'access' }, jwtSecret, { algorithm: 'HS256', subject: userId, expiresIn: 86_400 });

interface World {
  size: ScaleSize;
  base: string;
  token: (userNumber: number) => string;
  close(): Promise<void>;
}

async function waitReady(base: string, child: ChildProcess, output: () => string): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`the API exited (${child.exitCode}): ${output()}`);
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the API did not become ready: ${output()}`);
}

/** One size: its database (generated, or kept from an earlier run) and an API process on it. */
async function buildWorld(size: ScaleSize): Promise<World> {
  const database = keep
    ? `opinion_bench_scale_${treeName}_${String(scale).replace('.', '_')}_${size.name.replace('-', '_')}`
    : `opinion_bench_scale_${randomBytes(4).toString('hex')}`;
  const kept =
    keep &&
    (await admin.query(`select from pg_database where datname = $1 and shobj_description(oid, 'pg_database') = 'generated'`, [database]))
      .rowCount === 1;
  if (!kept) {
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.query(`create database ${database}`);
  }
  const url = new URL(adminUrl as string);
  url.pathname = `/${database}`;
  const ownerUrl = url.toString();
  execFileSync(process.execPath, [path.join(tree, 'db', 'cli', 'migrate.ts')], {
    cwd: tree,
    env: { ...process.env, DATABASE_URL: ownerUrl, LOG_LEVEL: 'silent' },
  });
  log(
    `${size.name}: ${size.n} rows per dimension, ${size.users} users, ${size.votes} votes received${kept ? ' (kept from an earlier run)' : ''}`,
  );
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  if (!kept) {
    await generate(owner, size, log);
    if (keep) await admin.query(`comment on database ${database} is 'generated'`);
  }
  const sessionOf = await subjectSessions(owner);
  await owner.query('vacuum analyze app.sessions');
  await owner.end();

  const [port, s3Port] = [await freePort(), await freePort()];
  const dataDir = path.join(scratch, `api-${size.name}`);
  await mkdir(dataDir, { recursive: true });
  let output = '';
  const child = spawn(process.execPath, [path.join(tree, 'main.ts'), '--only=api'], {
    cwd: tree,
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: ownerUrl,
      PORT: String(port),
      S3_PORT: String(s3Port),
      DATA_DIR: dataDir,
      JWT_SECRET: jwtSecret,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const origin = `http://127.0.0.1:${port}`;
  await waitReady(origin, child, () => output);
  return {
    size,
    base: `${origin}/api/v1`,
    token: (userNumber) => {
      const userId = benchId(space.user, userNumber);
      return issueToken(userId, sessionOf.get(userId) as string);
    },
    async close() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      if (!keep) await admin.query(`drop database ${database} with (force)`);
    },
  };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};
const median = (values: number[]) => percentile(values, 50);
const spread = (values: number[], digits = 1) =>
  `${median(values).toFixed(digits)} (min ${Math.min(...values).toFixed(digits)}, max ${Math.max(...values).toFixed(digits)})`;

let client: ChildProcess | undefined;
const open: World[] = [];
try {
  const load = fork(new URL('./feeds-load.ts', import.meta.url), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  client = load;
  const run = (base: string, requests: Request[]) =>
    new Promise<{ label: string; ms: number }[]>((resolve, reject) => {
      load.once('message', (answer: { latencies?: { label: string; ms: number }[]; failure?: string }) =>
        answer.failure ? reject(new Error(answer.failure)) : resolve(answer.latencies ?? []),
      );
      load.send({ base, requests });
    });
  for (const shape of shapes) {
    const kinds = (shape === 'hot' ? hotKinds : allKinds).filter((kind) => !only || only.test(kind.goal));
    if (kinds.length === 0) continue;
    const worlds: World[] = [];
    for (const size of sizes(scale, shape)) {
      const world = await buildWorld(size);
      worlds.push(world);
      open.push(world);
    }
    await measure(shape, worlds, kinds, run);
    for (const world of worlds) {
      await world.close();
      open.splice(open.indexOf(world), 1);
    }
  }
} finally {
  client?.disconnect();
  for (const world of open) await world.close();
  await admin.end();
  await embedded?.stop();
  await rm(scratch, { recursive: true, force: true });
}

/** One shape's two worlds: rounds of every kind, then the lines. */
async function measure(
  shape: string,
  worlds: World[],
  kinds: Kind[],
  run: (base: string, requests: Request[]) => Promise<{ label: string; ms: number }[]>,
) {
  /** One round's requests in a world, the kinds interleaved. */
  const batch = (world: World): Request[] => Array.from({ length: perKind }, () => kinds.map((kind) => kind.request(world))).flat();

  const results = new Map<string, { p50: number[]; p95: number[] }>();
  for (const world of worlds) await run(world.base, batch(world)); // warm-up: connections, plans, caches
  for (let round = 0; round < rounds; round += 1) {
    for (const world of round % 2 === 0 ? worlds : [...worlds].reverse()) {
      const latencies = await run(world.base, batch(world));
      for (const label of new Set(latencies.map((l) => l.label))) {
        const values = latencies.filter((l) => l.label === label).map((l) => l.ms);
        const key = `${world.size.name} ${label}`;
        const entry = results.get(key) ?? { p50: [], p95: [] };
        entry.p50.push(percentile(values, 50));
        entry.p95.push(percentile(values, 95));
        results.set(key, entry);
      }
    }
  }

  const [small, large] = worlds as [World, World];
  const prefix = shape === 'hot' ? 'hot_' : '';
  log('');
  log(
    `shape ${shape}; machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), PostgreSQL ${version}; tree ${treeName}; ${rounds} rounds of ${perKind} requests per kind and world`,
  );
  log(
    `worlds: ${small.size.name} ${small.size.n} rows per dimension, ${small.size.users} users, ${small.size.votes} votes; ${large.size.name} ${large.size.n}, ${large.size.users}, ${large.size.votes}`,
  );
  log('latency in ms, median over rounds (min, max):');
  for (const kind of kinds) {
    const label = kind.request(small).label;
    for (const world of worlds) {
      const entry = results.get(`${world.size.name} ${label}`) as { p50: number[]; p95: number[] };
      log(`  ${`${world.size.name} ${label}`.padEnd(62)} p50 ${spread(entry.p50)}   p95 ${spread(entry.p95)}`);
    }
  }
  log('');
  for (const kind of kinds) {
    const label = kind.request(small).label;
    const [a, b] = [results.get(`${large.size.name} ${label}`)?.p95 ?? [], results.get(`${small.size.name} ${label}`)?.p95 ?? []];
    const ratios = a.map((value, i) => value / (b[i] as number));
    const ratio = median(ratios);
    log(
      `goal scale_${prefix}${kind.goal}: ${ratio.toFixed(2)} (min ${Math.min(...ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)}; target <= 1.5) ${ratio <= 1.5 ? 'ok' : 'short'}`,
    );
  }
}
