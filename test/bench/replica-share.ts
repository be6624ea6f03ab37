// Which server runs the transactions of a read-mostly load: `npm run bench -- replica-share`. Not
// part of `npm test`.
//
// A PostgreSQL 15 primary and one streaming replica (test/helpers/replica.ts, no lag), one API
// process of this tree (`node main.ts --only=api`) with DATABASE_REPLICA_URLS, and
// BENCH_SHARE_SESSIONS (16) signed-in sessions, each a client of its own sending one request after
// another: one write in twenty (PATCH /users/me/profile with a new bio, then GET /users/me/profile,
// which must show it: read-your-writes), the other requests reads of the home feed (GET /posts), a
// post (GET /posts/{postId}), a profile feed (GET /users/{userId}/feed), a profile
// (GET /users/by-username/{username}) or the session's own profile (which must show the bio last
// acknowledged: no going back in time). Two kinds of client take turns, BENCH_SHARE_ROUNDS (2)
// phases each of BENCH_SHARE_REQUESTS (3,000) requests: one that ignores the `Read-Floor` answer
// header (as a client built before it), one that sends the last one it got back
// (server/http/read-floor.ts). Transactions are counted on each server by pg_stat_database
// (xact_commit + xact_rollback of the app database), read 11 s after the phase (a backend reports
// its counts within 10 s of going idle); what the servers run when idle (the replica polls, the
// notification dispatcher's ticks), measured over 20 idle seconds first, is taken out of those 11 s,
// so a phase counts its own seconds. The requests' own transactions (the idle rate taken out of the
// phase's seconds too) are printed besides.
// Prints per phase and the goal lines
//   goal replica_transaction_share_<kind>: <replica's / both servers' transactions> (target >= 0.7) ok|short
//   goal primary_transactions_per_read_<kind>: <primary's transactions / read requests> (no target: the figure)
//   goal read_your_writes_violations_<kind>: <reads that missed the session's last write> (target = 0) ok|short
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { freePort } from '../../db/free-port.ts';
import { migrate } from '../../db/migrate.ts';
import { startStreamingPair, type StreamingPair } from '../helpers/replica.ts';
import { cleanUp, stopOnExit } from './cleanup.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (line: string) => process.stdout.write(`${line}\n`);
const sessions = Number(process.env.BENCH_SHARE_SESSIONS ?? 16);
const requests = Number(process.env.BENCH_SHARE_REQUESTS ?? 3000);
const rounds = Number(process.env.BENCH_SHARE_ROUNDS ?? 2);
const kinds = ['without_floor', 'with_floor'] as const;
type Kind = (typeof kinds)[number];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Session {
  token: string;
  id: string;
  username: string;
  bio: string;
  floor: string | undefined;
}

const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-bench-replica-share-'));
let pair: StreamingPair | undefined;
let api: ChildProcess | undefined;
const agent = new Agent({ connections: sessions * 2, pipelining: 1 });
stopOnExit(async () => {
  if (api && api.exitCode === null) api.kill('SIGKILL');
  await agent.close();
  await pair?.stop();
  await rm(scratch, { recursive: true, force: true });
});
try {
  pair = await startStreamingPair();
  await migrate(pair.primaryUrl);
  const version = (await pair.query<{ server_version: string }>('primary', 'show server_version')).rows[0]!.server_version;
  const database = (await pair.query<{ name: string }>('primary', 'select current_database() as name')).rows[0]!.name;
  const [port, s3Port, metricsPort] = [await freePort(), await freePort(), await freePort()];
  let output = '';
  api = spawn(process.execPath, [path.join(root, 'main.ts'), '--only=api'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: pair.primaryUrl,
      DATABASE_REPLICA_URLS: pair.replicaUrl,
      MIGRATE_ON_START: 'false',
      PORT: String(port),
      S3_PORT: String(s3Port),
      METRICS_PORT: String(metricsPort),
      DATA_DIR: path.join(scratch, 'api'),
      JWT_SECRET: 'bench-replica-share-secret',
      TRUST_PROXY: 'loopback',
      OTP_TEST_CODES: Array.from({ length: sessions }, (_, i) => `+1555010${String(i).padStart(4, '0')}=1234`).join(','),
      WRITE_LIMITS: 'posts=1000000/3600,other_writes=100000000/60',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  api.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  api.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const base = `http://127.0.0.1:${port}/api/v1`;
  for (let tries = 0; ; tries += 1) {
    const ready = await request(`http://127.0.0.1:${port}/readyz`, { dispatcher: agent }).then(
      (r) => (r.body.dump(), r.statusCode),
      () => 0,
    );
    if (ready === 200) break;
    if (tries > 600 || api.exitCode !== null) throw new Error(`the API did not start:\n${output}`);
    await sleep(100);
  }

  const call = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH', route: string, session?: Session, body?: unknown, sendFloor = false) => {
    const headers: Record<string, string> = {};
    if (session) headers.authorization = `Bearer ${session.token}`;
    if (session && sendFloor && session.floor) headers['read-floor'] = session.floor;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await request(`${base}${route}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: agent,
    });
    const text = await response.body.text();
    const floor = response.headers['read-floor'];
    if (session && typeof floor === 'string') session.floor = floor;
    const parsed = (text ? JSON.parse(text) : {}) as { data?: Record<string, unknown>; error?: Record<string, unknown> };
    return { status: response.statusCode, data: parsed.data ?? parsed.error };
  };
  const metric = async (name: string) => {
    const response = await request(`http://127.0.0.1:${metricsPort}/metrics`, { dispatcher: agent });
    const line = (await response.body.text()).split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };
  const transactions = async (where: 'primary' | 'replica') =>
    Number(
      (
        await pair!.query<{ n: string }>(
          where,
          'select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = $1',
          [database],
        )
      ).rows[0]!.n,
    );

  /** A setup call, again after a 503 (a machine shared with other work may time a statement out). */
  const setup: typeof call = async (...args) => {
    for (let attempt = 1; ; attempt += 1) {
      const answer = await call(...args);
      if (answer.status !== 503 || attempt >= 5) return answer;
      await sleep(1000);
    }
  };
  // Sessions at level 3 (a confirmed phone, so they may post), each with two public posts.
  const all: Session[] = [];
  const posts: string[] = [];
  await Promise.all(
    Array.from({ length: sessions }, async (_, n) => {
      const anonymous = await setup('POST', '/auth/anonymous/session', undefined, { deviceId: `bench-share-${n}` });
      if (anonymous.status !== 200) throw new Error(`anonymous session: ${anonymous.status} ${JSON.stringify(anonymous.data)}`);
      const session: Session = {
        token: anonymous.data!.accessToken as string,
        id: (anonymous.data!.user as { id: string }).id,
        username: `bench_share_${n}`,
        bio: '',
        floor: undefined,
      };
      const basics = await setup('PUT', '/users/me/onboarding/profile-basics', session, {
        fullName: 'Bench Reader',
        username: session.username,
        acceptTerms: true,
      });
      if (basics.status !== 200) throw new Error(`profile basics: ${basics.status}`);
      await setup('PUT', '/users/me/onboarding/media', session, {});
      const phone = { phoneCountryCode: '+1', phoneNumber: `555010${String(n).padStart(4, '0')}` };
      await setup('POST', '/auth/otp/request', undefined, phone);
      const verified = await setup('POST', '/auth/otp/verify', session, { ...phone, code: '1234' });
      if (verified.status !== 200) throw new Error(`otp verify: ${verified.status}`);
      session.token = verified.data!.accessToken as string;
      for (let i = 0; i < 2; i += 1) {
        const created = await setup('POST', '/posts', session, { thoughtText: `Bench post ${n}.${i}`, visibility: 'public' });
        if (created.status !== 201) throw new Error(`post: ${created.status}`);
        posts.push(created.data!.id as string);
      }
      all.push(session);
    }),
  );
  log(
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, PostgreSQL ${version} primary + one streaming replica on the same host`,
  );
  log(`${sessions} sessions, one client each; ${rounds} rounds of ${requests} requests per kind of client, one write in twenty`);

  // What the servers run with no request at all (the replica polls, the notification dispatcher's
  // ticks: a fixed cost per second, not per request), over an idle window.
  await pair.caughtUp();
  await sleep(11_000);
  const idleStarted = Date.now();
  const [idlePrimary, idleReplica] = [await transactions('primary'), await transactions('replica')];
  await sleep(20_000);
  const idleSeconds = (Date.now() - idleStarted) / 1000;
  const background = {
    primary: ((await transactions('primary')) - idlePrimary) / idleSeconds,
    replica: ((await transactions('replica')) - idleReplica) / idleSeconds,
  };
  log(
    `idle: primary ${background.primary.toFixed(1)} transactions/s, replica ${background.replica.toFixed(1)}/s (polls, the notification dispatcher)`,
  );

  const pick = <T>(list: readonly T[]) => list[Math.floor(Math.random() * list.length)] as T;
  const results: Record<Kind, { share: number[]; perRead: number[]; violations: number; failures: number }> = {
    without_floor: { share: [], perRead: [], violations: 0, failures: 0 },
    with_floor: { share: [], perRead: [], violations: 0, failures: 0 },
  };
  for (let round = 1; round <= rounds; round += 1) {
    for (const kind of kinds) {
      const sendFloor = kind === 'with_floor';
      await pair.caughtUp();
      await sleep(11_000);
      const [primaryBefore, replicaBefore] = [await transactions('primary'), await transactions('replica')];
      const [pollsBefore, fallbacksBefore] = [await metric('db_replica_polls_total'), await metric('db_replica_fallback_reads_total')];
      let sent = 0;
      let reads = 0;
      let writes = 0;
      let violations = 0;
      let failures = 0;
      const started = Date.now();
      const ownProfile = async (session: Session) => {
        const expected = session.bio;
        const response = await call('GET', '/users/me/profile', session, undefined, sendFloor);
        reads += 1;
        if (response.status !== 200) failures += 1;
        else if ((response.data as { bio: string | null }).bio !== (expected || null)) violations += 1;
      };
      await Promise.all(
        all.map(async (session) => {
          while (sent < requests) {
            sent += 1;
            const dice = Math.random() * 20;
            if (dice < 1) {
              const bio = `bio ${round} ${kind} ${sent}`;
              const written = await call('PATCH', '/users/me/profile', session, { bio }, sendFloor);
              writes += 1;
              if (written.status !== 200) {
                failures += 1;
                continue;
              }
              session.bio = bio;
              sent += 1;
              await ownProfile(session);
              continue;
            }
            const other = pick(all);
            const route = pick([
              '/posts?limit=20',
              `/posts/${pick(posts)}`,
              `/users/${other.id}/feed?limit=20`,
              `/users/by-username/${other.username}`,
              'own',
            ]);
            if (route === 'own') {
              await ownProfile(session);
              continue;
            }
            const response = await call('GET', route, session, undefined, sendFloor);
            reads += 1;
            if (response.status !== 200) failures += 1;
          }
        }),
      );
      const seconds = (Date.now() - started) / 1000;
      await sleep(11_000);
      // The 11 s of waiting for the counts are idle: their background is taken out.
      const primary = (await transactions('primary')) - primaryBefore - Math.round(11 * background.primary);
      const replica = (await transactions('replica')) - replicaBefore - Math.round(11 * background.replica);
      const requestsOnly = {
        primary: primary - Math.round(seconds * background.primary),
        replica: replica - Math.round(seconds * background.replica),
      };
      // Each poll round is a statement on each server, whatever the load (0 when the API does not count them).
      const polls = (await metric('db_replica_polls_total')) - pollsBefore;
      const fallbacks = (await metric('db_replica_fallback_reads_total')) - fallbacksBefore;
      const share = replica / (primary + replica);
      const perRead = primary / reads;
      results[kind].share.push(share);
      results[kind].perRead.push(perRead);
      results[kind].violations += violations;
      results[kind].failures += failures;
      log(
        `round ${round}, clients ${kind.replace('_', ' ')}: ${reads} reads and ${writes} writes in ${seconds.toFixed(1)} s; ` +
          `transactions: primary ${primary}, replica ${replica} (replica share ${share.toFixed(3)}; primary ${perRead.toFixed(3)} per read); ` +
          `${violations} read-your-writes violations, ${failures} failed requests`,
      );
      log(
        `  ${fallbacks} reads went to the primary; ${polls} replica poll rounds; the requests' own transactions (idle rate taken out): ` +
          `primary ${requestsOnly.primary}, replica ${requestsOnly.replica} (replica share ${(requestsOnly.replica / (requestsOnly.primary + requestsOnly.replica)).toFixed(3)}, ` +
          `primary ${(requestsOnly.primary / reads).toFixed(3)} per read)`,
      );
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] as number;
  for (const kind of kinds) {
    const { share, perRead, violations, failures } = results[kind];
    log(
      `goal replica_transaction_share_${kind}: ${median(share).toFixed(3)} (min ${Math.min(...share).toFixed(3)}, max ${Math.max(...share).toFixed(3)}; target >= 0.7) ${median(share) >= 0.7 ? 'ok' : 'short'}`,
    );
    log(
      `goal primary_transactions_per_read_${kind}: ${median(perRead).toFixed(3)} (min ${Math.min(...perRead).toFixed(3)}, max ${Math.max(...perRead).toFixed(3)}; the figure)`,
    );
    log(
      `goal read_your_writes_violations_${kind}: ${violations} (${failures} failed requests; target = 0) ${violations === 0 && failures === 0 ? 'ok' : 'short'}`,
    );
  }
} finally {
  if (api && api.exitCode === null) {
    api.kill('SIGTERM');
    await new Promise((resolve) => api!.once('exit', resolve));
  }
  await cleanUp();
}
