// Feeds benchmark: `npm run bench -- feeds`. Not part of `npm test`.
// Builds two data sets in bulk SQL (test/bench/feeds-data.ts), 1x and 10x, each in its own fresh
// database behind its own instance of the real Express app, and measures from a separate process
// (feeds-load.ts), one request at a time, alternating request kinds and the two sizes, in rounds:
//   home page 1 and page 50 (a guest, a light follower, a heavy follower of 5,000 users, a member
//   of a big hub), a profile feed (guest, follower, member), a hub feed (member), and
//   GET /posts/{postId} for posts on those viewers' first pages, on the same server.
// It prints p50/p95 per kind and size (min/median/max over rounds), the EXPLAIN of the main query,
// and one goal line per ratio (median over rounds of the per-round ratio of p95s).
// Settings: BENCH_FEEDS_SCALE (default 1: 1x = 10,000 users, 100,000 posts, 500,000 events, and
// 10x; 0.1 makes a quick development run), BENCH_FEEDS_ROUNDS (5), BENCH_FEEDS_REQUESTS (40 per
// kind, size and round). Uses DATABASE_URL's server when set, else a throwaway embedded PostgreSQL.
// BENCH_FEEDS_KEEP=1 (with DATABASE_URL) keeps the generated databases, named by scale and size, and
// reuses them on the next run (pending migrations are applied): the full size takes many minutes
// to generate.
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
import { createTokens } from '../../server/auth/tokens.ts';
import { createServices } from '../../server/services.ts';
import { openStorage } from '../../server/uploads/open-storage.ts';
import { benchId, generate, sizeOf } from './feeds-data.ts';

const scale = Number(process.env.BENCH_FEEDS_SCALE ?? 1);
const rounds = Number(process.env.BENCH_FEEDS_ROUNDS ?? 5);
const perKind = Number(process.env.BENCH_FEEDS_REQUESTS ?? 40);
const keep = process.env.BENCH_FEEDS_KEEP === '1';
const log = (line: string) => process.stdout.write(`${line}\n`);
const lastUuid = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
let dataDir: string | undefined;
let adminUrl = process.env.DATABASE_URL;
if (keep && !adminUrl) throw new Error('BENCH_FEEDS_KEEP needs DATABASE_URL (the embedded database is thrown away)');
if (!adminUrl) {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-bench-feeds-'));
  await chmod(dataDir, 0o755);
  embedded = await startEmbeddedPostgres(dataDir, { persistent: false, durable: false });
  adminUrl = embedded.url;
}
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const version = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;
const config = loadConfig({ JWT_SECRET: randomBytes(16).toString('hex'), LOG_LEVEL: 'silent', DATA_DIR: dataDir ?? os.tmpdir() });
const objects = await openStorage({ ...config, s3: { ...config.s3, endpoint: undefined } });
const tokens = createTokens(config.jwtSecret);

interface Viewer {
  name: string;
  token?: string;
  id?: string;
}

interface Request {
  label: string;
  path: string;
  token?: string;
}

/** One size: a database with its data, the app on it, the viewers and the requests to time. */
async function buildWorld(factor: number) {
  const name = `${factor}x`;
  const size = sizeOf(factor, scale);
  const database = keep
    ? `opinion_bench_feeds_${String(scale).replace('.', '_')}_${name}`
    : `opinion_bench_feeds_${randomBytes(4).toString('hex')}`;
  // A kept database is complete once its comment says so (generation is the last step).
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
  await migrate(ownerUrl);
  log(
    `${name}: ${size.users} users, ${size.posts} posts, ${size.events} interaction events, ${size.hubs} hubs${kept ? ' (kept from an earlier run)' : ''}`,
  );
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  if (!kept) {
    await generate(owner, size, log);
    if (keep) await admin.query(`comment on database ${database} is 'generated'`);
  }

  // Signed-in viewers: a light follower (level 2), the heavy follower (user 100, 5,000 follows at
  // full scale, level 2), a member of hub 1 (5,000 members at full scale) and of no other big hub
  // (level 4: a phone identity). One session each; the same kinds at both sizes.
  const light = benchId(1, Math.floor(size.users / 2) + 1);
  const heavy = benchId(1, 100);
  const memberRow = await owner.query<{ user_id: string }>(
    `select m.user_id from app.hub_memberships m where m.hub_id = $1 and m.user_id <> all ($2)
       and not exists (select from app.hub_memberships o where o.user_id = m.user_id and o.hub_id = any ($3))
     order by m.user_id offset 7 limit 1`,
    [benchId(3, 1), [light, heavy], [benchId(3, 2), benchId(3, 3)]],
  );
  const ids = { light, heavy, member: memberRow.rows[0]?.user_id as string };
  await owner.query(`insert into app.phone_identities (user_id, phone_e164) values ($1, '+15550009999') on conflict do nothing`, [
    ids.member,
  ]);
  const signedIn: Viewer[] = [];
  for (const [viewerName, id] of Object.entries(ids)) {
    const session = await owner.query<{ id: string }>(
      `insert into app.sessions (user_id, expires_at) values ($1, now() + interval '1 day') returning id`,
      [id],
    );
    signedIn.push({ name: viewerName, id, token: tokens.issueAccess({ userId: id, sessionId: session.rows[0]?.id as string }) });
  }
  const [lightViewer, heavyViewer, member] = signedIn as [Viewer, Viewer, Viewer];
  const guest: Viewer = { name: 'guest' };

  const pools = createPools(ownerUrl, { apiMax: 4 });
  const services = await createServices(config, createLogger('silent'), pools, objects.storage, {
    otpSender: { send: async () => {} },
  });
  const server = createApp(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;

  /** GET through fetch (setup only, not timed). */
  const get = async (pathname: string, viewer: Viewer) => {
    const response = await fetch(`${base}${pathname}`, { headers: viewer.token ? { authorization: `Bearer ${viewer.token}` } : {} });
    const body = (await response.json()) as { data: { items: { id: string }[]; nextCursor: string | null } };
    if (response.status !== 200) throw new Error(`${pathname} answered ${response.status}: ${JSON.stringify(body)}`);
    return body.data;
  };

  // The cursor of each home viewer's page 50 (walked page by page), and posts of their page 1.
  const homeViewers = [guest, lightViewer, heavyViewer, member];
  const deep: { viewer: Viewer; cursor: string }[] = [];
  const detailPosts: { viewer: Viewer; postId: string }[] = [];
  for (const viewer of homeViewers) {
    let page = await get('/posts', viewer);
    if (viewer.token) detailPosts.push(...page.items.slice(0, 5).map((item) => ({ viewer, postId: item.id })));
    let n = 1;
    while (n < 49 && page.nextCursor) {
      page = await get(`/posts?cursor=${page.nextCursor}`, viewer);
      n += 1;
    }
    if (page.nextCursor) deep.push({ viewer, cursor: page.nextCursor });
    else log(`  ${viewer.name}'s home feed ends before page 50 (${n} pages): left out of page 50`);
  }
  const profileViewers = [guest, lightViewer, member];
  const kinds: Record<string, (i: number) => Request> = {
    'home page 1': (i) => {
      const viewer = homeViewers[i % homeViewers.length] as Viewer;
      return { label: 'home page 1', path: '/posts', token: viewer.token };
    },
    'home page 50': (i) => {
      const { viewer, cursor } = deep[i % deep.length] as (typeof deep)[number];
      return { label: 'home page 50', path: `/posts?cursor=${cursor}`, token: viewer.token };
    },
    'profile feed': (i) => {
      const viewer = profileViewers[i % profileViewers.length] as Viewer;
      return { label: 'profile feed', path: `/users/${benchId(1, 1 + (i % 3))}/feed`, token: viewer.token };
    },
    'hub feed': () => ({ label: 'hub feed', path: `/hubs/${benchId(3, 1)}/feed`, token: member.token }),
    'GET /posts/{postId}': (i) => {
      const { viewer, postId } = detailPosts[i % detailPosts.length] as (typeof detailPosts)[number];
      return { label: 'GET /posts/{postId}', path: `/posts/${postId}`, token: viewer.token };
    },
  };
  /** One round's requests, the kinds interleaved. */
  const batch = (): Request[] => Array.from({ length: perKind }, (_, i) => Object.values(kinds).map((kind) => kind(i))).flat();

  async function explain(viewer: Viewer): Promise<string> {
    await owner.query('begin');
    await owner.query(`select set_config('app.user_id', $1, true)`, [viewer.id]);
    // as app_private.feed_page runs it: no bitmaps, the generic plan, the viewer's context as
    // parameters, a first window of two pages
    await owner.query('set local enable_bitmapscan = off');
    await owner.query('set local plan_cache_mode = force_generic_plan');
    await owner.query(
      'prepare home_events (uuid, uuid[], uuid[], timestamptz, uuid, int) as select * from app_private.home_events($1, $2, $3, $4, $5, $6)',
    );
    const plan = await owner.query<{ 'QUERY PLAN': string }>(
      `explain (analyze, buffers, costs off, summary on)
       execute home_events(app.viewer_id(), app.viewer_block_list(), app.viewer_active_hub_ids(), now(), '${lastUuid}', 42)`,
    );
    await owner.query('deallocate home_events');
    await owner.query('rollback');
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  }

  return {
    name,
    base,
    batch,
    /** One viewer after the other: they share the owner's connection (and its transaction). */
    async explain() {
      const plans: string[] = [];
      for (const viewer of [heavyViewer, member]) plans.push(`-- ${viewer.name} viewer (${name})\n${await explain(viewer)}`);
      return plans;
    },
    async close() {
      await owner.end();
      server.closeAllConnections();
      server.close();
      await services.graphql.release();
      await pools.end();
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

const worlds: Awaited<ReturnType<typeof buildWorld>>[] = [];
try {
  worlds.push(await buildWorld(1), await buildWorld(10));
  const client = fork(new URL('./feeds-load.ts', import.meta.url), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const run = (base: string, requests: Request[]) =>
    new Promise<{ label: string; ms: number }[]>((resolve, reject) => {
      client.once('message', (answer: { latencies?: { label: string; ms: number }[]; failure?: string }) =>
        answer.failure ? reject(new Error(answer.failure)) : resolve(answer.latencies ?? []),
      );
      client.send({ base, requests });
    });

  // p50 and p95 per round, size and kind.
  const results = new Map<string, { p50: number[]; p95: number[] }>();
  for (const world of worlds) await run(world.base, world.batch()); // warm-up: connections, plans, caches
  for (let round = 0; round < rounds; round += 1) {
    for (const world of round % 2 === 0 ? worlds : [...worlds].reverse()) {
      const latencies = await run(world.base, world.batch());
      for (const label of new Set(latencies.map((l) => l.label))) {
        const values = latencies.filter((l) => l.label === label).map((l) => l.ms);
        const key = `${world.name} ${label}`;
        const entry = results.get(key) ?? { p50: [], p95: [] };
        entry.p50.push(percentile(values, 50));
        entry.p95.push(percentile(values, 95));
        results.set(key, entry);
      }
    }
  }
  client.disconnect();

  log('');
  log(
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), PostgreSQL ${version}; ${rounds} rounds of ${perKind} requests per kind and size`,
  );
  log('latency in ms, median over rounds (min, max):');
  for (const [key, { p50, p95 }] of results) log(`  ${key.padEnd(28)} p50 ${spread(p50)}   p95 ${spread(p95)}`);

  log('');
  log('EXPLAIN ANALYZE of the main Home query (the sources of one page):');
  for (const plan of await (worlds[1] as (typeof worlds)[number]).explain()) log(plan);

  const p95 = (key: string) => (results.get(key) as { p95: number[] }).p95;
  const ratios = (a: number[], b: number[]) => a.map((value, i) => value / (b[i] as number));
  const goals: [string, number[], '<=', number][] = [
    ['home_page1_10x_vs_1x', ratios(p95('10x home page 1'), p95('1x home page 1')), '<=', 1.5],
    ['home_page50_vs_page1', ratios(p95('10x home page 50'), p95('10x home page 1')), '<=', 1.3],
    ['home_page1_vs_post_detail', ratios(p95('10x home page 1'), p95('10x GET /posts/{postId}')), '<=', 4],
  ];
  log('');
  for (const [name, values, op, target] of goals) {
    log(
      `goal ${name}: ${median(values).toFixed(2)} (min ${Math.min(...values).toFixed(2)}, max ${Math.max(...values).toFixed(2)}; target ${op} ${target}) ${median(values) <= target ? 'ok' : 'short'}`,
    );
  }
} finally {
  for (const world of worlds) await world.close();
  await admin.end();
  await objects.stop();
  await embedded?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}
