// Vote throughput (issue: anonymous slider votes). Not part of `npm test`.
// Drives the real HTTP vote endpoint with many distinct users and prints, in one run:
//   1. votes/s all on one hot post,
//   2. votes/s spread over 1,000 posts,
//   3. the endpoint's own SQL called directly (the request transaction with its session check,
//      cast_vote, commit) with the same concurrency: the ceiling.
// Targets: hot ≥ 0.8 × spread; endpoint ≥ 0.5 × its own SQL ceiling.
// Uses DATABASE_URL's server when set, else a throwaway embedded PostgreSQL; always a fresh database.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { loadConfig } from '../../config.ts';
import { createLogger } from '../../logger.ts';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { migrate } from '../../db/migrate.ts';
import { createPools } from '../../db/pools.ts';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer, userViewer } from '../../db/viewer.ts';
import { createApp } from '../../server/app.ts';
import { createTokens } from '../../server/auth/tokens.ts';
import { createServices } from '../../server/services.ts';
import { openStorage } from '../../server/uploads/open-storage.ts';

// `npm run bench -- live`: the live-notification benchmark (test/bench/live.ts).
if (process.argv[2] === 'live') {
  await import('./live.ts');
  process.exit(0);
}

const votesPerRun = Number(process.env.BENCH_VOTES ?? 3000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
const spreadPosts = 1000;
const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];

/** The SQL ceiling: `total` transactions, `concurrency` at a time, in this thread. */
async function runBounded(total: number, work: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await work(next++);
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

const log = (line: string) => process.stdout.write(`${line}\n`);

let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
let dataDir: string | undefined;
let adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-bench-'));
  await chmod(dataDir, 0o755);
  embedded = await startEmbeddedPostgres(dataDir, { persistent: false, durable: true });
  adminUrl = embedded.url;
}
const database = `opinion_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`create database ${database}`);
const url = new URL(adminUrl);
url.pathname = `/${database}`;
const ownerUrl = url.toString();
await migrate(ownerUrl);

const config = loadConfig({ NODE_ENV: 'production', JWT_SECRET: randomBytes(16).toString('hex'), OTP_SENDER_MODULE: '', LOG_LEVEL: 'silent', DATA_DIR: dataDir ?? os.tmpdir() });
const owner = new pg.Pool({ connectionString: ownerUrl, max: 4 });
owner.on('error', () => {});
const pools = createPools(ownerUrl, { apiMax: concurrency });
const objects = await openStorage({ ...config, s3: { ...config.s3, endpoint: undefined } });
const services = await createServices({ ...config, otpSenderModule: undefined }, createLogger('silent'), pools, objects.storage, {
  otpSender: { send: async () => {} },
});
const server = createApp(services).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;

// Voters (level 2, one live session each) and posts, made in bulk as the owner.
const voterCount = votesPerRun * 3;
const voters = await owner.query<{ id: string; session_id: string }>(
  `with made as (
     insert into app.users (username, full_name, terms_accepted_at, terms_version)
     select 'bench_' || g, 'Bench Voter', now(), 'bench' from generate_series(1, $1) g returning id)
   insert into app.sessions (user_id, expires_at) select id, now() + interval '1 day' from made returning user_id as id, id as session_id`,
  [voterCount],
);
const authorId = voters.rows[0]?.id as string;
const posts = await owner.query<{ id: string }>(
  `insert into app.posts (author_id, slider_text, slider_left_label, slider_right_label, visibility)
   select $1, 'Bench prompt ' || g, 'No', 'Yes', 'public' from generate_series(1, $2) g returning id`,
  [authorId, spreadPosts + 2],
);
const tokens = createTokens(config.jwtSecret);
const users = voters.rows.map((v) => ({ id: v.id, sessionId: v.session_id, token: tokens.issueAccess({ userId: v.id, sessionId: v.session_id }) }));
const [hotPost, ceilingPost, ...spread] = posts.rows.map((r) => r.id) as [string, string, ...string[]];

/** Votes over HTTP from a worker thread: voter `first + i` votes on `postFor(i)`. */
async function httpVotes(count: number, first: number, postFor: (i: number) => string): Promise<number> {
  const votes = Array.from({ length: count }, (_, i) => ({
    token: (users[first + i] as (typeof users)[number]).token,
    postId: postFor(i),
    position: positions[i % 5] as string,
  }));
  const worker = new Worker(new URL('./load.ts', import.meta.url), { workerData: { base, votes, concurrency } });
  const result = await new Promise<{ rate: number; failure?: string }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  if (result.failure) throw new Error(result.failure);
  return result.rate;
}

// Warm up connections and plans.
await httpVotes(200, voterCount - 200, (i) => spread[i] as string);

const hot = await httpVotes(votesPerRun, 0, () => hotPost);
const spreadRate = await httpVotes(votesPerRun, votesPerRun, (i) => spread[i % spreadPosts] as string);
// The endpoint's own SQL, without HTTP: the request transaction with its session check, the
// vote call, the commit.
const ceiling = await runBounded(votesPerRun, async (i) => {
  const user = users[2 * votesPerRun + i] as (typeof users)[number];
  const tx = new RequestTransaction(pools.api, anonymousViewer);
  await tx.openWithSession(userViewer(user.id, user.sessionId));
  await tx.query('select voted_at, hub_ids, global_tally from app.cast_vote($1, $2)', [ceilingPost, positions[i % 5]]);
  await tx.finish(true);
});

const counted = await owner.query<{ post_id: string; n: string }>(
  'select post_id, sum(count) as n from app.vote_counters where post_id = any($1) and hub_id is null group by post_id',
  [[hotPost, ceilingPost]],
);
log(`votes per run: ${votesPerRun}, concurrency: ${concurrency}, machine: ${os.cpus().length} cores`);
log(`hot post over HTTP:        ${hot.toFixed(0)} votes/s`);
log(`1,000 posts over HTTP:     ${spreadRate.toFixed(0)} votes/s`);
log(`SQL ceiling (same tx):     ${ceiling.toFixed(0)} votes/s`);
log(`hot / spread:              ${(hot / spreadRate).toFixed(2)} (target >= 0.80)`);
log(`endpoint / SQL ceiling:    ${(Math.min(hot, spreadRate) / ceiling).toFixed(2)} (target >= 0.50)`);
log(`counted: ${counted.rows.map((r) => r.n).join(', ')} (each ${votesPerRun})`);

server.closeAllConnections();
server.close();
await Promise.all([pools.end(), owner.end(), objects.stop()]);
await admin.query(`drop database ${database} with (force)`);
await admin.end();
await embedded?.stop();
if (dataDir) await rm(dataDir, { recursive: true, force: true });
