// Push and badges benchmark: `npm run bench -- push`. Not part of `npm test`.
//
// The service runs as production runs it: the API (`node main.ts --only=api`) and the worker
// (`node main.ts --only=worker`) in processes of their own, on a fresh database of DATABASE_URL's
// server or of a throwaway embedded PostgreSQL (durable: fsync and synchronous commit on), against
// the stand-in FCM and token endpoint (test/helpers/fcm.ts) in a process of its own. Load comes from
// another process (push-load.ts). Every repeat runs each phase once, alternating; goals compare
// phases of the same repeat (the machine is shared, only side-by-side ratios mean anything).
//   badges    GET /notifications/unread-count and GET /notifications?limit=20 for users with 1,000,
//             100,000 and (list) 1,000,000 rows (100,000 unread for the large ones), p95 of
//             BENCH_PUSH_REQUESTS sequential requests each, alternating the users;
//   inserts   BENCH_PUSH_INSERTS single-row notification inserts, 8 at a time, for 1,000 recipients
//             with a device each, with the worker pushing (a service account) and without (push
//             off); with push on, the lag from each insert's commit to the stand-in's answer;
//   fan-out   a hub_member_joined fan-out to a hub of 10,000 Hub-ready members with a device each,
//             pushed completely and once, its throughput against the stand-in's floor: the messages
//             per second it accepts from a bare loop of the same client with the same concurrency.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Agent } from 'undici';
import { loadConfig, type FcmConfig } from '../../config.ts';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { createTokens } from '../../server/auth/tokens.ts';
import { AccessTokens } from '../../worker/tasks/push/access-token.ts';
import { FcmClient } from '../../worker/tasks/push/fcm.ts';
import { cpuDelta, cpuSeconds } from './backend-cpu.ts';
import { startPhase } from './phase-start.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const requests = Number(process.env.BENCH_PUSH_REQUESTS ?? 100);
const inserts = Number(process.env.BENCH_PUSH_INSERTS ?? 3000);
const members = Number(process.env.BENCH_PUSH_MEMBERS ?? 10_000);
const listRows = Number(process.env.BENCH_PUSH_LIST_ROWS ?? 1_000_000);
const concurrency = 64;
const log = (line: string) => process.stdout.write(`${line}\n`);

const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-push-bench-'));
await chmod(scratch, 0o755);
let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
let adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  embedded = await startEmbeddedPostgres(scratch, { persistent: false, durable: true });
  adminUrl = embedded.url;
}
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const version = (await admin.query<{ version: string }>('select version()')).rows[0]?.version;
const database = `opinion_bench_push_${randomBytes(3).toString('hex')}`;
await admin.query(`create database ${database}`);
const ownerUrlObject = new URL(adminUrl);
ownerUrlObject.pathname = `/${database}`;
const ownerUrl = ownerUrlObject.toString();
const jwtSecret = randomBytes(24).toString('hex');
const tokens = createTokens(jwtSecret);
const children: ChildProcess[] = [];

function spawnService(args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, [path.join(root, 'main.ts'), ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: ownerUrl,
      JWT_SECRET: jwtSecret,
      LOG_LEVEL: 'info',
      DATA_DIR: path.join(scratch, 'data'),
      S3_ENDPOINT: 'http://127.0.0.1:9',
      ...env,
    },
  });
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  children.push(child);
  return { child, output: () => output };
}
async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
};
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle)
    ? ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
    : (sorted[Math.floor(middle)] as number);
};
const fmt = (value: number, digits = 2) => value.toFixed(digits);
function goal(name: string, values: number[], target: string, ok: (value: number) => boolean): void {
  const value = median(values);
  log(
    `goal ${name}: ${fmt(value)} (min ${fmt(Math.min(...values))}, max ${fmt(Math.max(...values))}; target ${target}) ${ok(value) ? 'ok' : 'short'}`,
  );
}

try {
  const apiPort = await freePort();
  const api = spawnService(['--only=api'], { PORT: String(apiPort) });
  const base = `http://127.0.0.1:${apiPort}/api/v1`;
  await waitFor(async () => (await fetch(`${base}/auth/login-config`).catch(() => undefined))?.ok === true, 'the API');
  const standInProcess = spawn(process.execPath, [path.join(root, 'test', 'bench', 'fcm-stand-in.ts'), scratch], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(standInProcess);
  const standIn = await new Promise<{ url: string; env: Record<string, string> }>((resolve) => {
    let out = '';
    standInProcess.stdout?.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0] as string));
    });
  });
  const take = async () =>
    (
      (await (await fetch(`${standIn.url}/_stand-in/take`, { method: 'POST' })).json()) as {
        accepted: { notificationId: string | null; token: string; at: number }[];
      }
    ).accepted;
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 4 });

  log(
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  log(`PostgreSQL: ${version}${embedded ? ' (embedded, durable)' : ''}`);
  log(`repeats: ${repeats}; badges: ${requests} requests per user and repeat; inserts: ${inserts} per phase; fan-out: ${members} members`);

  // ---- Data. Users made in SQL: the benchmark measures reads and pushes, not sign-ups.
  const hubReady = (prefix: string, n: number) => `
    with u as (
      insert into app.users (username, full_name, terms_accepted_at, media_completed_at, contacts_synced_at)
      select '${prefix}' || i, 'Bench Person', now(), now(), now() from generate_series(1, ${n}) i returning id),
    p as (insert into app.phone_identities (user_id, phone_e164) select id, '+1' || (2000000000 + row_number() over ())::text || '${prefix.length}' from u returning user_id),
    s as (insert into app.sessions (user_id, expires_at) select user_id, now() + interval '30 days' from p returning id, user_id)
    select id as session_id, user_id from s`;
  async function usersWithDevices(prefix: string, n: number): Promise<{ userId: string; sessionId: string }[]> {
    const { rows } = await owner.query<{ session_id: string; user_id: string }>(hubReady(prefix, n));
    await owner.query(
      `insert into app.push_devices (user_id, session_id, provider, platform, token, token_hash)
       select u, s, 'fcm', 'android', '${prefix}-' || u, sha256(convert_to('${prefix}-' || u, 'UTF8')) from unnest($1::uuid[], $2::uuid[]) t(u, s)`,
      [rows.map((row) => row.user_id), rows.map((row) => row.session_id)],
    );
    return rows.map((row) => ({ userId: row.user_id, sessionId: row.session_id }));
  }
  const [small, large, huge] = await usersWithDevices('badge', 3);
  const seedRows = async (userId: string, total: number, unread: number) => {
    for (let done = 0; done < total; done += 100_000) {
      const n = Math.min(100_000, total - done);
      await owner.query(
        `insert into app.notifications (recipient_id, type, created_at, read_at)
         select $1, 'post_voted', now() - interval '30 days' + (i + $2) * interval '1 ms', case when i + $2 >= $3 then now() end from generate_series(1, $4) i`,
        [userId, done, unread, n],
      );
    }
  };
  await seedRows(small!.userId, 1000, 1000);
  await seedRows(large!.userId, 100_000, 100_000);
  await seedRows(huge!.userId, listRows, 100_000);
  const recipients = await usersWithDevices('rcpt', 1000);
  const fans = await usersWithDevices('fan', members);
  const hubOwner = fans[0] as { userId: string };
  const asset = (
    await owner.query<{ id: string }>(
      `with i as (insert into app.upload_intents (owner_id, purpose, content_type, content_length, object_key, expires_at, completed_at)
                  values ($1, 'hub_photo', 'image/png', 1, 'bench/hub.png', now(), now()) returning id, owner_id)
       insert into app.assets (upload_id, owner_id, purpose, content_type, size, checksum, object_key)
       select id, owner_id, 'hub_photo', 'image/png', 1, repeat('0', 64), 'bench/hub.png' from i returning id`,
      [hubOwner.userId],
    )
  ).rows[0];
  const hubId = (
    await owner.query<{ id: string }>(
      `insert into app.hubs (name, profile_asset_id, created_by) values ('Bench hub', $1, $2) returning id`,
      [asset?.id, hubOwner.userId],
    )
  ).rows[0]?.id as string;
  await owner.query(`insert into app.hub_memberships (hub_id, user_id) select $1, u from unnest($2::uuid[]) u`, [
    hubId,
    fans.map((fan) => fan.userId),
  ]);
  await owner.query('vacuum analyze');
  log('data: ready');

  // ---- Badges.
  const badgeRatios = { count100k: [] as number[], list100k: [] as number[], list1m: [] as number[] };
  for (let repeat = 0; repeat < repeats; repeat++) {
    await startPhase(owner);
    const p95: Record<string, number> = {};
    const order = repeat % 2 === 0 ? [small, large, huge] : [huge, large, small];
    for (const path of ['/notifications/unread-count', '/notifications?limit=20']) {
      for (const user of order) {
        const token = tokens.issueAccess(user as { userId: string; sessionId: string });
        const times: number[] = [];
        for (let i = 0; i < requests; i++) {
          const started = performance.now();
          const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
          await response.arrayBuffer();
          if (!response.ok) throw new Error(`${path}: ${response.status}`);
          times.push(performance.now() - started);
        }
        p95[`${path} ${user === small ? 'small' : user === large ? 'large' : 'huge'}`] = percentile(times, 0.95);
      }
    }
    const get = (key: string) => p95[key] as number;
    badgeRatios.count100k.push(get('/notifications/unread-count large') / get('/notifications/unread-count small'));
    badgeRatios.list100k.push(get('/notifications?limit=20 large') / get('/notifications?limit=20 small'));
    badgeRatios.list1m.push(get('/notifications?limit=20 huge') / get('/notifications?limit=20 small'));
    log(
      `repeat ${repeat + 1} badges p95 ms: ${Object.entries(p95)
        .map(([key, value]) => `${key} ${fmt(value)}`)
        .join(', ')}`,
    );
  }

  // ---- Inserts with push on and off; lag.
  const insertRatios: number[] = [];
  const lags: number[] = [];
  const pgPids = async () => (await owner.query<{ pid: number }>('select pid from pg_stat_activity')).rows.map((row) => row.pid);
  /** CPU ms per insert of each part, and how busy the machine's cores were (CPU seconds per second) while the load ran. */
  const phaseCpu: {
    push: boolean;
    pg: number;
    worker: number;
    standIn: number;
    load: number;
    busy: number;
    drain: number;
    commits: number;
    wal: { bytes: number; fpi: number };
  }[] = [];
  async function insertPhase(push: boolean): Promise<number> {
    const worker = spawnService(['--only=worker'], push ? { ...standIn.env, MIGRATE_ON_START: 'false' } : { MIGRATE_ON_START: 'false' });
    await waitFor(() => worker.output().includes('worker running'), 'the worker');
    await owner.query('update app_private.push_cursor set pushed_to = pg_snapshot_xmin(pg_current_snapshot())');
    await take();
    await startPhase(owner);
    const file = path.join(scratch, `load-${randomUUID()}.json`);
    await writeFile(
      file,
      JSON.stringify({ databaseUrl: ownerUrl, recipients: recipients.map((r) => r.userId), count: inserts, concurrency: 8 }),
    );
    const commits = async () =>
      (await owner.query<{ n: string }>('select xact_commit::text as n from pg_stat_database where datname = current_database()')).rows[0]
        ?.n;
    const commitsBefore = Number(await commits());
    // WAL written by the whole server (the bench's own, unless DATABASE_URL names a shared one).
    const wal = async () =>
      (await owner.query<{ bytes: string; fpi: string }>('select wal_bytes::text as bytes, wal_fpi::text as fpi from pg_stat_wal')).rows[0];
    const walBefore = await wal();
    const pidsBefore = await pgPids();
    const pgBefore = cpuSeconds(pidsBefore);
    const processes = [worker.child.pid as number, standInProcess.pid as number];
    const processesBefore = cpuSeconds(processes);
    const load = spawn(process.execPath, [path.join(root, 'test', 'bench', 'push-load.ts'), file], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    load.stdout?.on('data', (chunk) => (out += chunk));
    await new Promise((resolve) => load.once('exit', resolve));
    const result = JSON.parse(out.trim()) as {
      rate: number;
      seconds: number;
      commits: [string, number][];
      cpu: { load: number; backends: number; pids: number[] };
    };
    let drain = 0;
    if (push) {
      const committed = new Map(result.commits);
      const answered = new Map<string, number>();
      await waitFor(async () => {
        for (const accepted of await take())
          if (accepted.notificationId && committed.has(accepted.notificationId)) answered.set(accepted.notificationId, accepted.at);
        return answered.size === committed.size;
      }, 'every insert pushed');
      const phaseLags = [...answered].map(([id, at]) => (at - (committed.get(id) as number)) / 1000);
      lags.push(percentile(phaseLags, 0.95));
      drain = (Math.max(...answered.values()) - Math.max(...committed.values())) / 1000;
    }
    // The statistics are sent at the end of each transaction, a little later (PostgreSQL 15+: shared memory, at once on commit).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const commitsPerInsert = (Number(await commits()) - commitsBefore) / inserts;
    const walAfter = await wal();
    const walPerInsert = {
      bytes: (Number(walAfter?.bytes) - Number(walBefore?.bytes)) / inserts,
      fpi: (Number(walAfter?.fpi) - Number(walBefore?.fpi)) / inserts,
    };
    const pgAfter = cpuSeconds([...new Set([...pidsBefore, ...(await pgPids())])].filter((pid) => !result.cpu.pids.includes(pid)));
    const processesAfter = cpuSeconds(processes);
    const of = (pid: number) => (((processesAfter.get(pid) ?? 0) - (processesBefore.get(pid) ?? 0)) * 1000) / inserts;
    const cpu = {
      push,
      pg: (((cpuDelta(pgBefore, pgAfter) ?? 0) + result.cpu.backends) * 1000) / inserts,
      worker: of(worker.child.pid as number),
      standIn: of(standInProcess.pid as number),
      load: (result.cpu.load * 1000) / inserts,
      busy: 0,
      drain,
      commits: commitsPerInsert,
      wal: walPerInsert,
    };
    cpu.busy = ((cpu.pg + cpu.worker + cpu.standIn + cpu.load) * inserts) / 1000 / (result.seconds + drain);
    phaseCpu.push(cpu);
    await stop(worker.child);
    return result.rate;
  }
  for (let repeat = 0; repeat < repeats; repeat++) {
    const rates: Record<string, number> = {};
    for (const push of repeat % 2 === 0 ? [false, true] : [true, false]) rates[push ? 'on' : 'off'] = await insertPhase(push);
    insertRatios.push((rates.on as number) / (rates.off as number));
    log(
      `repeat ${repeat + 1} inserts/s: push off ${fmt(rates.off as number, 0)}, push on ${fmt(rates.on as number, 0)}; push lag p95 ${fmt(lags.at(-1) as number, 3)} s`,
    );
    for (const c of phaseCpu.splice(0)) {
      log(
        `    push ${c.push ? 'on ' : 'off'}: CPU ms per insert PostgreSQL ${fmt(c.pg, 3)}, worker ${fmt(c.worker, 3)}, stand-in ${fmt(c.standIn, 3)}, load ${fmt(c.load, 3)}; ` +
          `cores busy ${fmt(c.busy)} of ${os.cpus().length}; PostgreSQL commits per insert ${fmt(c.commits)}, WAL per insert ${fmt(c.wal.bytes, 0)} bytes (${fmt(c.wal.fpi)} full-page images)${c.push ? `; last push ${fmt(c.drain, 3)} s after the last commit` : ''}`,
      );
    }
  }

  // ---- Fan-out against the floor.
  const fanoutRatios: number[] = [];
  const complete: number[] = [];
  const fcm = loadConfig({ ...standIn.env, PUSH_CONCURRENCY: String(concurrency) }).fcm as FcmConfig;
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });
  const client = new FcmClient(fcm, new AccessTokens(fcm, agent), agent);
  async function floor(): Promise<number> {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < members; i = next++) {
          const outcome = await client.send({
            token: `floor-${i}`,
            data: { notificationId: randomUUID(), type: 'hub_member_joined', badge: '1' },
            notification: { title: 'New member', body: 'Someone joined your hub' },
          });
          if (outcome.kind !== 'sent') throw new Error(`floor: ${outcome.kind}`);
        }
      }),
    );
    const rate = members / ((performance.now() - started) / 1000);
    await take();
    return rate;
  }
  const worker = spawnService(['--only=worker'], { ...standIn.env, MIGRATE_ON_START: 'false', PUSH_CONCURRENCY: String(concurrency) });
  await waitFor(() => worker.output().includes('worker running'), 'the worker');
  for (let repeat = 0; repeat < repeats; repeat++) {
    let floorRate = 0;
    let fanoutRate = 0;
    for (const phase of repeat % 2 === 0 ? ['floor', 'fanout'] : ['fanout', 'floor']) {
      await startPhase(owner);
      if (phase === 'floor') {
        floorRate = await floor();
        continue;
      }
      await take();
      const started = Date.now();
      await owner.query('select app_private.fan_out_hub_notification($1)', [
        JSON.stringify({ hubId, type: 'hub_member_joined', audience: 'members', actorId: null, except: [], key: randomUUID() }),
      ]);
      const seen = new Map<string, number>();
      let total = 0;
      let last = started;
      await waitFor(
        async () => {
          for (const accepted of await take()) {
            if (!accepted.token.startsWith('fan-')) continue;
            total += 1;
            seen.set(accepted.notificationId as string, (seen.get(accepted.notificationId as string) ?? 0) + 1);
            last = Math.max(last, accepted.at);
          }
          return seen.size >= members;
        },
        'the fan-out pushed',
        300_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
      for (const accepted of await take()) if (accepted.token.startsWith('fan-')) total += 1;
      complete.push(seen.size === members && total === members ? 1 : 0);
      fanoutRate = members / ((last - started) / 1000);
    }
    fanoutRatios.push(fanoutRate / floorRate);
    log(
      `repeat ${repeat + 1} fan-out: ${members} members pushed at ${fmt(fanoutRate, 0)}/s (complete and once: ${complete.at(-1) === 1}); stand-in floor ${fmt(floorRate, 0)}/s`,
    );
  }
  await stop(worker.child);
  await agent.close();
  await owner.end();
  await stop(api.child);

  goal('push_unread_count_100k_vs_1k', badgeRatios.count100k, '<= 1.5', (v) => v <= 1.5);
  goal('push_list_page_100k_vs_1k', badgeRatios.list100k, '<= 1.5', (v) => v <= 1.5);
  goal(`push_list_page_${listRows >= 1_000_000 ? '1m' : listRows}_vs_1k`, badgeRatios.list1m, '<= 1.5', (v) => v <= 1.5);
  goal('push_inserts_on_vs_off', insertRatios, '>= 0.8', (v) => v >= 0.8);
  goal('push_lag_p95_seconds', lags, '< 1', (v) => v < 1);
  goal('push_fanout_complete_once', complete, '= 1', (v) => v === 1);
  goal('push_fanout_vs_floor', fanoutRatios, '>= 0.5', (v) => v >= 0.5);
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
  await admin.end();
  await embedded?.stop();
  await rm(scratch, { recursive: true, force: true });
}
