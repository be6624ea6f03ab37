// Read replicas under a read-mostly load: `npm run bench -- scale-out-replicas` (the replica half of
// `scale-out`, which calls replicaScaleOut()). Not part of `npm test`.
//
// A PostgreSQL 15 primary and one streaming replica (test/helpers/replica.ts, lag simulated with
// recovery_min_apply_delay), one API process of this tree (`node main.ts --only=api`) with
// DATABASE_REPLICA_URLS, and the load in this process: BENCH_REPLICA_CLIENTS (32) concurrent
// clients over BENCH_REPLICA_SESSIONS (4,000) signed-in users. Each step picks a user at random and
// either writes then reads (PATCH /users/me/profile with a new bio, then GET /users/me/profile,
// which must show it: read-your-writes) or only reads (GET /users/me/profile, which must show the
// bio last acknowledged: no going back in time), BENCH_REPLICA_READS (4) plain reads per pair (so at most 0.8 of the reads can go to a replica when every read right after a write must go to the primary).
// For each lag (0, 250 ms, 2 s), BENCH_REPLICA_PAIRS (100,000) pairs. REPLICA_MAX_LAG_MS is 5,000
// so a replica held 2 s behind stays in rotation (the default 2,000 would put it at the edge).
// Prints per lag: requests, throughput, p50/p95 of reads and writes, and the goal lines
//   goal replica_read_share_lag_<ms>: <replica-served reads / reads> (target >= 0.7) ok|short
//   goal read_your_writes_violations_lag_<ms>: <reads that missed the session's last write> (target = 0) ok|short
// The share comes from the API's metrics (db_replica_reads_total).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { freePort } from '../../db/free-port.ts';
import { migrate } from '../../db/migrate.ts';
import { startStreamingPair, type StreamingPair } from '../helpers/replica.ts';
import { stopOnExit } from './cleanup.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (line: string) => process.stdout.write(`${line}\n`);

export interface ReplicaScaleOutOptions {
  pairs?: number;
  readsPerPair?: number;
  clients?: number;
  sessions?: number;
  lagsMillis?: number[];
}

interface User {
  token: string;
  /** The bio of the last acknowledged write. */
  bio: string;
  busy: boolean;
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};

export async function replicaScaleOut({
  pairs = Number(process.env.BENCH_REPLICA_PAIRS ?? 100_000),
  readsPerPair = Number(process.env.BENCH_REPLICA_READS ?? 4),
  clients = Number(process.env.BENCH_REPLICA_CLIENTS ?? 32),
  sessions = Number(process.env.BENCH_REPLICA_SESSIONS ?? 4000),
  lagsMillis = (process.env.BENCH_REPLICA_LAGS ?? '0,250,2000').split(',').map(Number),
}: ReplicaScaleOutOptions = {}): Promise<boolean> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-bench-replicas-'));
  let pair: StreamingPair | undefined;
  let api: ChildProcess | undefined;
  const agent = new Agent({ connections: clients * 2, pipelining: 1 });
  let allOk = true;
  // A run that fails or is interrupted stops what it started too (test/bench/cleanup.ts).
  stopOnExit(async () => {
    if (api && api.exitCode === null) api.kill('SIGKILL');
    await pair?.stop();
    await rm(scratch, { recursive: true, force: true });
  });
  try {
    pair = await startStreamingPair();
    await migrate(pair.primaryUrl);
    const version = (await pair.query<{ server_version: string }>('primary', 'show server_version')).rows[0]!.server_version;
    const [port, s3Port, metricsPort] = [await freePort(), await freePort(), await freePort()];
    let output = '';
    api = spawn(process.execPath, [path.join(root, 'main.ts'), '--only=api'], {
      cwd: root,
      env: {
        ...process.env,
        NODE_ENV: 'development',
        DATABASE_URL: pair.primaryUrl,
        DATABASE_REPLICA_URLS: pair.replicaUrl,
        REPLICA_MAX_LAG_MS: '5000',
        MIGRATE_ON_START: 'false',
        PORT: String(port),
        S3_PORT: String(s3Port),
        METRICS_PORT: String(metricsPort),
        DATA_DIR: path.join(scratch, 'api'),
        JWT_SECRET: 'bench-replicas-secret',
        TRUST_PROXY: 'loopback',
        WRITE_LIMITS: 'other_writes=100000000/60',
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
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    let address = 0;
    const call = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH', route: string, token?: string, body?: unknown) => {
      address += 1;
      const headers: Record<string, string> = {
        'x-forwarded-for': `2001:db8:${(address >>> 16).toString(16)}:${(address & 0xffff).toString(16)}::1`,
      };
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const response = await request(`${base}${route}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: agent,
      });
      const text = await response.body.text();
      return { status: response.statusCode, body: text ? (JSON.parse(text) as { data?: Record<string, unknown> }) : {} };
    };
    const metric = async (name: string) => {
      const response = await request(`http://127.0.0.1:${metricsPort}/metrics`, { dispatcher: agent });
      const text = await response.body.text();
      const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
      return line ? Number(line.split(' ').at(-1)) : 0;
    };

    // Users at level 2 (profile basics), through the API.
    const users: User[] = [];
    const makeUser = async (n: number) => {
      const session = await call('POST', '/auth/anonymous/session', undefined, { deviceId: `bench-replica-device-${n}` });
      const token = (session.body.data as { accessToken: string }).accessToken;
      const basics = await call('PUT', '/users/me/onboarding/profile-basics', token, {
        fullName: 'Bench Reader',
        username: `bench_r_${n}`,
        acceptTerms: true,
      });
      if (basics.status !== 200) throw new Error(`profile basics: ${basics.status} ${JSON.stringify(basics.body)}`);
      users.push({ token, bio: '', busy: false });
    };
    for (let n = 0; n < sessions; n += clients)
      await Promise.all(Array.from({ length: Math.min(clients, sessions - n) }, (_, i) => makeUser(n + i)));
    log(
      `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, PostgreSQL ${version} primary + one streaming replica on the same host`,
    );
    log(
      `${sessions} users, ${clients} concurrent clients, ${pairs} write-then-read pairs and ${readsPerPair} plain reads per pair per lag`,
    );

    let counter = 0;
    for (const lag of lagsMillis) {
      await pair.setApplyDelay(lag);
      await pair.caughtUp();
      const servedBefore = await metric('db_replica_reads_total');
      const fallbackBefore = await metric('db_replica_fallback_reads_total');
      // What the API thinks of the replica during the phase: usable, and its lag.
      const usableSamples: number[] = [];
      const lagSamples: number[] = [];
      const watching = setInterval(() => {
        void Promise.all([metric('db_replica_usable'), metric('db_replica_lag_seconds')]).then(([usable, lagSeconds]) => {
          usableSamples.push(usable);
          lagSamples.push(lagSeconds * 1000);
        });
      }, 250);
      const readLatencies: number[] = [];
      const writeLatencies: number[] = [];
      let reads = 0;
      let violations = 0;
      let failures = 0;
      let pairsDone = 0;
      let pairsStarted = 0;
      const started = Date.now();
      const readOnce = async (user: User) => {
        const expected = user.bio;
        const t0 = performance.now();
        const response = await call('GET', '/users/me/profile', user.token);
        readLatencies.push(performance.now() - t0);
        reads += 1;
        if (response.status !== 200) failures += 1;
        else if ((response.body.data as { bio: string | null }).bio !== (expected || null)) violations += 1;
      };
      const worker = async () => {
        while (pairsStarted < pairs) {
          const user = users[Math.floor(Math.random() * users.length)]!;
          if (user.busy) continue;
          user.busy = true;
          try {
            if (Math.random() < 1 / (readsPerPair + 1)) {
              pairsStarted += 1;
              counter += 1;
              const bio = `bio ${counter}`;
              const t0 = performance.now();
              const written = await call('PATCH', '/users/me/profile', user.token, { bio });
              writeLatencies.push(performance.now() - t0);
              if (written.status !== 200) {
                failures += 1;
                continue;
              }
              user.bio = bio;
              await readOnce(user);
              pairsDone += 1;
            } else {
              await readOnce(user);
            }
          } finally {
            user.busy = false;
          }
        }
      };
      await Promise.all(Array.from({ length: clients }, worker));
      clearInterval(watching);
      const seconds = (Date.now() - started) / 1000;
      const fallbacks = (await metric('db_replica_fallback_reads_total')) - fallbackBefore;
      const served = (await metric('db_replica_reads_total')) - servedBefore;
      const share = served / reads;
      log(
        `lag ${lag} ms: ${pairsDone} pairs, ${reads} reads in ${seconds.toFixed(1)} s (${((reads + pairsDone) / seconds).toFixed(0)} requests/s); ` +
          `read p50 ${percentile(readLatencies, 50).toFixed(2)} ms, p95 ${percentile(readLatencies, 95).toFixed(2)} ms; ` +
          `write p50 ${percentile(writeLatencies, 50).toFixed(2)} ms, p95 ${percentile(writeLatencies, 95).toFixed(2)} ms; ${failures} failed requests`,
      );
      log(
        `  replica usable ${((100 * usableSamples.filter((u) => u === 1).length) / Math.max(1, usableSamples.length)).toFixed(0)}% of the phase, ` +
          `its lag p50 ${percentile(lagSamples, 50).toFixed(0)} ms, max ${Math.max(0, ...lagSamples.filter(Number.isFinite)).toFixed(0)} ms; ${fallbacks} reads went to the primary`,
      );
      const shareOk = share >= 0.7;
      const violationsOk = violations === 0 && failures === 0;
      allOk &&= shareOk && violationsOk;
      log(
        `goal replica_read_share_lag_${lag}: ${share.toFixed(3)} (${served} of ${reads} reads; target >= 0.7) ${shareOk ? 'ok' : 'short'}`,
      );
      log(
        `goal read_your_writes_violations_lag_${lag}: ${violations} (over ${pairsDone} pairs and ${reads} reads; target = 0) ${violationsOk ? 'ok' : 'short'}`,
      );
    }
  } finally {
    if (api && api.exitCode === null) {
      api.kill('SIGTERM');
      await new Promise((resolve) => api!.once('exit', resolve));
    }
    await agent.close();
    await pair?.stop();
    await rm(scratch, { recursive: true, force: true });
  }
  return allOk;
}

if (process.argv[1] === fileURLToPath(import.meta.url) || process.argv[2] === 'scale-out-replicas') {
  await replicaScaleOut();
}
