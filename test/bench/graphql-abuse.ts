// Internal GraphQL under attack (not part of `npm test`), from a separate process started once and
// warmed up before anything is timed (test/bench/graphql-load.ts), while this process times REST
// requests; phases alternate (quiet, attack) and repeat.
//
// 1. A level-1 anonymous user token sends 200 aliased allUsers connections, eight at once. It
//    prints REST latency in each phase, the attack's answers and the server's peak RSS, and:
//      rest-during-graphql-attack: median REST latency under attack / median in quiet phases
//        (target <= 2);
//      abusive-query-refused: median time to answer the eight abusive queries / median time to
//        answer eight `{ __typename }` sent the same way (target <= 3: refused in validation).
// 2. The heaviest operation the bounds let a user token send, eight at a time for a few seconds:
//    10 aliases × 100 users sorted by an aggregate, each with a nested page of 100 follows, when
//    allowed; otherwise the heaviest of the operations that fit the cost bound (graphqlBounds).
//      rest-p50-during-heaviest-graphql, rest-p95-during-heaviest-graphql: REST p50 and p95 while
//        eight of it run at once / REST p50 and p95 in quiet phases (target <= 2; how long they
//        run is printed beside it);
//      rest-p95-under-heaviest-graphql-lanes: REST p95 under eight lanes sending it back to back
//        for a few seconds / REST p95 under the same lanes of `{ __typename }` (target <= 1.5).
//    Every user follows BENCH_FOLLOWS others, so that sorting by a follow count and nested
//    follow pages do real work. BENCH_HEAVIEST=rows or counts chooses only among the operations
//    that read rows (most of their work is PostGraphile's) or that count whole collections (the
//    database's).
// Uses DATABASE_URL's server when set, else a throwaway embedded PostgreSQL; always a fresh database.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../config.ts';
import { createLogger } from '../../logger.ts';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { migrate } from '../../db/migrate.ts';
import { createPools } from '../../db/pools.ts';
import { createApp } from '../../server/app.ts';
import { createServices } from '../../server/services.ts';
import { openStorage } from '../../server/uploads/open-storage.ts';
import type { Answer } from './graphql-load.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const publicUsers = Number(process.env.BENCH_USERS ?? 2000);
const followsPerUser = Number(process.env.BENCH_FOLLOWS ?? 100);
const heavyMillis = Number(process.env.BENCH_HEAVY_MS ?? 3000);
const attackers = 8;
/** Which operations "the heaviest" is chosen from: all (default), only row reads (`rows`: PostGraphile's work) or only whole-collection counts (`counts`: the database's). */
const heaviestFrom = process.env.BENCH_HEAVIEST ?? 'all';
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

const owner = new pg.Pool({ connectionString: ownerUrl, max: 2 });
owner.on('error', () => {});
await owner.query(
  "insert into app.users (username, full_name, bio) select 'bench_' || g, 'Bench User ' || g, repeat('bio text ', 12) from generate_series(1, $1) g",
  [publicUsers],
);
// Follows without their triggers (the counters play no part here).
await owner.query(`
  set session_replication_role = replica;
  insert into app.follows (follower_id, followee_id)
    select a.id, b.id from (select id, row_number() over (order by id) n from app.users) a
    join (select id, row_number() over (order by id) n from app.users) b
      on b.n <> a.n and (b.n - a.n + ${publicUsers}) % ${publicUsers} <= ${followsPerUser};
  set session_replication_role = origin;
  analyze;
`);
const { rows: version } = await owner.query<{ v: string }>("select current_setting('server_version') as v");
const config = loadConfig({ JWT_SECRET: randomBytes(16).toString('hex'), LOG_LEVEL: 'silent', DATA_DIR: dataDir ?? os.tmpdir() });
const pools = createPools(ownerUrl);
const objects = await openStorage({ ...config, s3: { ...config.s3, endpoint: undefined, port: await freePort() } });
const services = await createServices(config, createLogger('silent'), pools, objects.storage, {
  otpSender: { send: async () => {} },
});
const server = createApp(services).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const session = await fetch(`${base}/api/v1/auth/anonymous/session`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ deviceId: `bench-${randomBytes(4).toString('hex')}` }),
});
const token = ((await session.json()) as { data: { accessToken: string } }).data.accessToken;
const abusive = `{ ${Array.from({ length: 200 }, (_, i) => `u${i}: allUsers { nodes { rowId username fullName bio } }`).join(' ')} }`;

async function timed(request: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  // A kept-alive socket the server closed just as it was reused resets: the client's race, not an answer.
  const response = await request().catch((error: { cause?: { code?: string } }) => {
    if (error.cause?.code !== 'ECONNRESET') throw error;
    return request();
  });
  await response.text();
  if (response.status >= 500) throw new Error(`answered ${response.status}`);
  return performance.now() - started;
}
const rest = () => timed(() => fetch(`${base}/api/v1/users/me/onboarding/status`, { headers: { authorization: `Bearer ${token}` } }));

// The attacking process, started once and warmed up (test/bench/graphql-load.ts).
const attacker = fork(new URL('./graphql-load.ts', import.meta.url).pathname, [base, token, String(attackers)], {
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
});
let onAttackerMessage: (message: unknown) => void = () => {};
attacker.on('message', (message) => onAttackerMessage(message));
const attackerEnded = new Promise<never>((_, reject) =>
  attacker.once('exit', (code, signal) => reject(new Error(`the attacking process ended (${signal ?? code})`))),
);
attackerEnded.catch(() => {}); // seen by the races below
await Promise.race([new Promise<void>((resolve) => (onAttackerMessage = (message) => message === 'ready' && resolve())), attackerEnded]);

let lastSendingSeconds = 0;
/** Runs `attackers` requests of `query` at once from the attacking process, timing REST meanwhile. */
async function fromAnotherProcess(query: string, durationMs = 0): Promise<{ answers: Answer[]; rest: number[] }> {
  // REST is timed from the moment the job is sent (the warm attacking process starts at once),
  // at least once, until the answers are back.
  const answered = Promise.race([
    new Promise<Answer[]>((resolve) => (onAttackerMessage = (message) => resolve(message as Answer[]))),
    attackerEnded,
  ]);
  let done = false;
  answered.then(
    () => (done = true),
    () => (done = true),
  );
  const sendingSince = performance.now();
  attacker.send({ query, durationMs });
  const during: number[] = [];
  do during.push(await rest());
  while (!done);
  lastSendingSeconds = (performance.now() - sendingSince) / 1000;
  return { answers: await answered, rest: during };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))] as number;
const summary = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `min ${sorted[0]?.toFixed(1)} / median ${median(xs).toFixed(1)} / max ${sorted.at(-1)?.toFixed(1)} ms (n=${xs.length})`;
};
/**
 * The heaviest operation a user token may send: the issue's attack (10 aliases × 100 users sorted
 * by a follow count, each with 100 follows) when the bounds allow it, else the slowest of the
 * operations that fit the cost bound: as many aggregate-sorted pages as fit, or as many rows.
 */
const aliasOf = (i: number, first: number, nested: number, sorted: boolean) =>
  `a${i}: allUsers(first: ${first}${sorted ? ', orderBy: FOLLOWS_BY_FOLLOWEE_ID_COUNT_DESC' : ''}) { nodes { rowId username${
    nested > 0 ? ` followsByFollowerId(first: ${nested}) { nodes { seq followeeId } }` : ''
  } } }`;
const operation = (aliases: number, first: number, nested: number, sorted: boolean) =>
  `{ ${Array.from({ length: aliases }, (_, i) => aliasOf(i, first, nested, sorted)).join(' ')} }`;
async function answer(query: string): Promise<{ ms: number; status: number; errors: boolean }> {
  const started = performance.now();
  const response = await fetch(`${base}/internal/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as { errors?: unknown[] };
  return { ms: performance.now() - started, status: response.status, errors: Boolean(body.errors?.length) };
}
async function heaviestAllowed(): Promise<{ query: string; shape: string; ms: number }> {
  const shapes: [number, number, number, boolean][] = [[10, 100, 100, true]];
  for (let aliases = 1; aliases <= 10; aliases += 1) {
    for (const nested of [0, 1, 2, 4, 9, 14, 19, 49, 99]) shapes.push([aliases, 100, nested, true], [aliases, 100, nested, false]);
    shapes.push([aliases, 1, 0, true], [aliases, 10, 0, true]); // many whole-collection sorts, few rows
  }
  const candidates: { query: string; shape: string }[] = (heaviestFrom === 'counts' ? [] : shapes).map(
    ([aliases, first, nested, sorted]) => ({
      query: operation(aliases, first, nested, sorted),
      shape: `${aliases} alias(es) × ${first} users${sorted ? ' sorted by follower count' : ''}${nested ? ` × ${nested} nested follows` : ''}`,
    }),
  );
  // Counting whole collections: all follows, with a page of them.
  for (const counts of heaviestFrom === 'rows' ? [] : [1, 2, 3]) {
    candidates.push({
      query: `{ ${Array.from({ length: counts }, (_, i) => `c${i}: allFollows { totalCount nodes { seq followerId followeeId } }`).join(' ')} }`,
      shape: `${counts} count(s) of all follows, each with 100 follows`,
    });
  }
  let best: { query: string; shape: string; ms: number } | undefined;
  for (const { query, shape } of candidates) {
    const first_ = await answer(query);
    if (first_.status !== 200 || first_.errors) continue;
    const ms = median([first_.ms, (await answer(query)).ms, (await answer(query)).ms]);
    if (!best || ms > best.ms) best = { query, shape, ms };
    if (query === candidates[0]?.query) break; // the attack itself is allowed: it is the heaviest
  }
  if (!best) throw new Error('no heavy operation is allowed');
  return best;
}

function goal(name: string, ratios: number[], target: number): void {
  const value = median(ratios);
  log(
    `goal ${name}: ${value.toFixed(2)} (min ${Math.min(...ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)}; target <= ${target}) ${value <= target ? 'ok' : 'short'}`,
  );
}

// Warm-up: schema build, plans, connections.
await fromAnotherProcess('{ __typename }');
for (let i = 0; i < 20; i++) await rest();

let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
const restRatios: number[] = [];
const refusalRatios: number[] = [];
for (let round = 1; round <= rounds; round++) {
  const quiet: number[] = [];
  for (let i = 0; i < 30; i++) quiet.push(await rest());
  const small = (await fromAnotherProcess('{ __typename }')).answers.map((a) => a.ms);
  const { answers: attack, rest: during } = await fromAnotherProcess(abusive);

  log(`round ${round}: REST quiet ${summary(quiet)}; REST under attack ${summary(during)}`);
  log(
    `  attack: ${attackers} at once, statuses ${[...new Set(attack.map((a) => a.status))].join(',')}, ${(attack[0]?.bytes ?? 0).toLocaleString()} bytes each, ${summary(attack.map((a) => a.ms))}; { __typename }: ${summary(small)}`,
  );
  restRatios.push(median(during) / median(quiet));
  refusalRatios.push(median(attack.map((a) => a.ms)) / median(small));
}

// The heaviest allowed operation, eight lanes for a few seconds, against REST p95; the floor is the
// same traffic of `{ __typename }` (what any eight busy GraphQL clients cost REST on this machine).
const heaviest = await heaviestAllowed();
log(`heaviest allowed operation: ${heaviest.shape} (alone: ${heaviest.ms.toFixed(1)} ms)`);
const p50Ratios: number[] = [];
const p95Ratios: number[] = [];
const laneRatios: number[] = [];
for (let round = 1; round <= rounds; round++) {
  const quiet: number[] = [];
  const quietUntil = performance.now() + heavyMillis;
  while (performance.now() < quietUntil) quiet.push(await rest());
  // Eight at once, once: how much and how long REST suffers.
  const batch = await fromAnotherProcess(heaviest.query);
  const batchSeconds = lastSendingSeconds;
  const floor = await fromAnotherProcess('{ __typename }', heavyMillis);
  const { answers, rest: during } = await fromAnotherProcess(heaviest.query, heavyMillis);
  log(
    `round ${round}: REST p50 / p95 quiet ${median(quiet).toFixed(1)} / ${p95(quiet).toFixed(1)} ms (n=${quiet.length}); during ${attackers} heaviest at once ${median(batch.rest).toFixed(1)} / ${p95(batch.rest).toFixed(1)} ms ` +
      `(n=${batch.rest.length}, for ${batchSeconds.toFixed(1)} s: ${summary(batch.answers.map((a) => a.ms))}, statuses ${[...new Set(batch.answers.map((a) => a.status))].join(',')}); ` +
      `under ${attackers} lanes for ${heavyMillis / 1000} s: of { __typename } ${p95(floor.rest).toFixed(1)} ms, of the heaviest ${p95(during).toFixed(1)} ms (${answers.length} answered)`,
  );
  p50Ratios.push(median(batch.rest) / median(quiet));
  p95Ratios.push(p95(batch.rest) / p95(quiet));
  laneRatios.push(p95(during) / p95(floor.rest));
}
clearInterval(sampler);
log(
  `machine: ${os.cpus().length} cores, load average ${os.loadavg()[0]?.toFixed(1)}; PostgreSQL ${version[0]?.v}; ${publicUsers} public users, ${followsPerUser} follows each; server peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`,
);
goal('rest-during-graphql-attack', restRatios, 2);
goal('abusive-query-refused', refusalRatios, 3);
goal('rest-p50-during-heaviest-graphql', p50Ratios, 2);
goal('rest-p95-during-heaviest-graphql', p95Ratios, 2);
goal('rest-p95-under-heaviest-graphql-lanes', laneRatios, 1.5);

attacker.removeAllListeners('exit');
attacker.disconnect();
server.closeAllConnections();
server.close();
await services.graphql.release();
await Promise.all([pools.end(), owner.end(), objects.stop()]);
await admin.query(`drop database ${database} with (force)`);
await admin.end();
await embedded?.stop();
if (dataDir) await rm(dataDir, { recursive: true, force: true });
