// Internal GraphQL under the attack of issue 9 (not part of `npm test`): a level-1 anonymous user
// token sends 200 aliased allUsers connections, eight at once, from a separate process, while this
// process times REST requests. Phases alternate (quiet, attack) and repeat; it prints REST latency
// in each, the attack's answers and the server's peak RSS, and one line per goal:
//   rest-during-graphql-attack: median REST latency under attack / median REST latency in quiet
//     phases (target <= 2);
//   abusive-query-refused: median time to answer the eight abusive queries / median time to
//     answer eight `{ __typename }` sent the same way (target <= 3: refused in validation, no SQL).
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
import { migrate } from '../../db/migrate.ts';
import { createPools } from '../../db/pools.ts';
import { createApp } from '../../server/app.ts';
import { createServices } from '../../server/services.ts';
import { openStorage } from '../../server/uploads/open-storage.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const publicUsers = Number(process.env.BENCH_USERS ?? 2000);
const attackers = 8;
const log = (line: string) => process.stdout.write(`${line}\n`);

if (process.argv[2] === 'attacker') {
  // The attacking process: `attackers` requests of one query at once, then report their times.
  const [base, token, query] = process.argv.slice(3) as [string, string, string];
  const times = await Promise.all(
    Array.from({ length: attackers }, async () => {
      const started = performance.now();
      const response = await fetch(`${base}/internal/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query }),
      });
      const text = await response.text();
      return { ms: performance.now() - started, status: response.status, bytes: text.length };
    }),
  );
  process.send?.(times);
  process.exit(0);
}

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
const { rows: version } = await owner.query<{ v: string }>("select current_setting('server_version') as v");
const config = loadConfig({ NODE_ENV: 'production', JWT_SECRET: randomBytes(16).toString('hex'), OTP_SENDER_MODULE: '', LOG_LEVEL: 'silent', DATA_DIR: dataDir ?? os.tmpdir() });
const pools = createPools(ownerUrl);
const objects = await openStorage({ ...config, s3: { ...config.s3, endpoint: undefined } });
const services = await createServices({ ...config, otpSenderModule: undefined }, createLogger('silent'), pools, objects.storage, {
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
  const response = await request();
  await response.text();
  if (response.status >= 500) throw new Error(`answered ${response.status}`);
  return performance.now() - started;
}
const rest = () => timed(() => fetch(`${base}/api/v1/users/me/onboarding/status`, { headers: { authorization: `Bearer ${token}` } }));

/** Runs `attackers` requests of `query` at once from a separate process, timing REST meanwhile. */
async function fromAnotherProcess(query: string): Promise<{ answers: { ms: number; status: number; bytes: number }[]; rest: number[] }> {
  const child = fork(new URL(import.meta.url).pathname, ['attacker', base, token, query], { stdio: 'ignore' });
  const answered = new Promise<{ ms: number; status: number; bytes: number }[]>((resolve) => child.once('message', (m) => resolve(m as never)));
  let done = false;
  void answered.then(() => (done = true));
  const during: number[] = [];
  while (!done) during.push(await rest());
  return { answers: await answered, rest: during };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const summary = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `min ${sorted[0]?.toFixed(1)} / median ${median(xs).toFixed(1)} / max ${sorted.at(-1)?.toFixed(1)} ms (n=${xs.length})`;
};
function goal(name: string, ratios: number[], target: number): void {
  const value = median(ratios);
  log(`goal ${name}: ${value.toFixed(2)} (min ${Math.min(...ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)}; target <= ${target}) ${value <= target ? 'ok' : 'short'}`);
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
  log(`  attack: ${attackers} at once, statuses ${[...new Set(attack.map((a) => a.status))].join(',')}, ${(attack[0]?.bytes ?? 0).toLocaleString()} bytes each, ${summary(attack.map((a) => a.ms))}; { __typename }: ${summary(small)}`);
  restRatios.push(median(during) / median(quiet));
  refusalRatios.push(median(attack.map((a) => a.ms)) / median(small));
}
clearInterval(sampler);
log(`machine: ${os.cpus().length} cores, load average ${os.loadavg()[0]?.toFixed(1)}; PostgreSQL ${version[0]?.v}; ${publicUsers} public users; server peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
goal('rest-during-graphql-attack', restRatios, 2);
goal('abusive-query-refused', refusalRatios, 3);

server.closeAllConnections();
server.close();
await services.graphql.release();
await Promise.all([pools.end(), owner.end(), objects.stop()]);
await admin.query(`drop database ${database} with (force)`);
await admin.end();
await embedded?.stop();
if (dataDir) await rm(dataDir, { recursive: true, force: true });
