// The cost of an Idempotency-Key: `npm run bench -- idempotency`. Not part of `npm test`.
//
// The API runs as production runs it (`node main.ts --only=api`, its own process) on a fresh
// database of DATABASE_URL's server or of a throwaway embedded PostgreSQL (durable: fsync and
// synchronous commit on). One client sends sequential requests over one keep-alive connection,
// each write alternately without and with a new key (so both kinds meet the same machine at the
// same moment), and measures each request's time from send to last byte:
//   comment  POST /posts/{postId}/comments (a handler statement, then its commit);
//   vote     POST /posts/{postId}/vote (one round trip without a key: db/request-transaction.ts), each on a
//            post of its own;
//   replay   the same comment request again with its key (the kept answer, nothing runs).
// Every repeat prints the median of each; the goals compare medians of the same repeats.
import { randomBytes, randomUUID } from 'node:crypto';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { startPhase } from './phase-start.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const requests = Number(process.env.BENCH_IDEMPOTENCY_REQUESTS ?? 400);
const log = (line: string) => process.stdout.write(`${line}\n`);
const phone = { phoneCountryCode: '+1', phoneNumber: '5550009999' };

const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-idempotency-bench-'));
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
const database = `opinion_bench_idempotency_${randomBytes(3).toString('hex')}`;
await admin.query(`create database ${database}`);
const ownerUrlObject = new URL(adminUrl);
ownerUrlObject.pathname = `/${database}`;
const ownerUrl = ownerUrlObject.toString();
let api: ChildProcess | undefined;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle)
    ? ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
    : (sorted[Math.floor(middle)] as number);
};
const fmt = (value: number) => value.toFixed(2);
function goal(name: string, values: number[], target: string, ok: (value: number) => boolean): void {
  const value = median(values);
  log(
    `goal ${name}: ${fmt(value)} (min ${fmt(Math.min(...values))}, max ${fmt(Math.max(...values))}; target ${target}) ${ok(value) ? 'ok' : 'short'}`,
  );
}

try {
  const port = await freePort();
  let output = '';
  api = spawn(process.execPath, [path.join(root, 'main.ts'), '--only=api'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: ownerUrl,
      PORT: String(port),
      JWT_SECRET: randomBytes(24).toString('hex'),
      LOG_LEVEL: 'warn',
      DATA_DIR: path.join(scratch, 'data'),
      S3_ENDPOINT: 'http://127.0.0.1:9',
      OTP_TEST_CODES: '+15550009999=1234',
      WRITE_LIMITS: 'posts=1000000/3600,comments=1000000/3600,hub_fanout=1000000/3600',
    },
  });
  api.stdout?.on('data', (chunk) => (output += chunk));
  api.stderr?.on('data', (chunk) => (output += chunk));
  const base = `http://127.0.0.1:${port}/api/v1`;
  const deadline = Date.now() + 120_000;
  while ((await fetch(`${base}/auth/login-config`).catch(() => undefined))?.ok !== true) {
    if (Date.now() > deadline || api.exitCode !== null) throw new Error(`the API did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  const call = async (method: string, route: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${route}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, data: JSON.parse(text).data, text };
  };
  const user = async (name: string) => {
    const session = await call('POST', '/auth/anonymous/session', { deviceId: `bench-${name}-${randomUUID()}` });
    const token = session.data.accessToken as string;
    const basics = await call(
      'PUT',
      '/users/me/onboarding/profile-basics',
      { fullName: 'Bench Person', username: `${name}_${randomBytes(3).toString('hex')}`, acceptTerms: true },
      { authorization: `Bearer ${token}` },
    );
    if (basics.status !== 200) throw new Error(basics.text);
    return { authorization: `Bearer ${token}` };
  };
  // Slider posts need a confirmed phone (level 3).
  const author = await user('author');
  await call('PUT', '/users/me/onboarding/media', {}, author);
  await call('POST', '/auth/otp/request', phone);
  const verified = await call('POST', '/auth/otp/verify', { ...phone, code: '1234' }, author);
  if (verified.status !== 200) throw new Error(verified.text);
  author.authorization = `Bearer ${verified.data.accessToken as string}`;
  const voter = await user('voter');
  const post = async (slider: boolean) => {
    const body = {
      thoughtText: 'Bench',
      visibility: 'public',
      ...(slider ? { sliderText: 'Bench?', slider: { leftLabel: 'No', rightLabel: 'Yes' } } : {}),
    };
    const created = await call('POST', '/posts', body, author);
    if (created.status !== 201) throw new Error(created.text);
    return created.data.id as string;
  };
  const target = await post(false);
  const ballots: string[] = [];
  for (let i = 0; i < repeats * requests * 2 + 50; i += 1) ballots.push(await post(true));
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 2 });

  const timed = async (send: () => Promise<{ status: number; text: string }>, expected: number) => {
    const started = process.hrtime.bigint();
    const answer = await send();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (answer.status !== expected) throw new Error(`${answer.status} ${answer.text}`);
    return ms;
  };
  // Warm the API's pool and its prepared statements.
  for (let i = 0; i < 50; i += 1) {
    await call('POST', `/posts/${target}/comments`, { text: 'warm' }, { ...voter, 'Idempotency-Key': randomUUID() });
    await call('POST', `/posts/${ballots.pop() as string}/vote`, { position: 'left' }, voter);
  }

  const results = {
    comment: [] as number[],
    commentKey: [] as number[],
    vote: [] as number[],
    voteKey: [] as number[],
    replay: [] as number[],
  };
  for (let repeat = 1; repeat <= repeats; repeat += 1) {
    await startPhase(owner);
    const phase = {
      comment: [] as number[],
      commentKey: [] as number[],
      vote: [] as number[],
      voteKey: [] as number[],
      replay: [] as number[],
    };
    for (let i = 0; i < requests; i += 1) {
      const comment = (headers: Record<string, string>) => () =>
        call('POST', `/posts/${target}/comments`, { text: `bench ${i}` }, { ...voter, ...headers });
      const key = { 'Idempotency-Key': randomUUID() };
      phase.comment.push(await timed(comment({}), 201));
      phase.commentKey.push(await timed(comment(key), 201));
      phase.replay.push(await timed(comment(key), 201));
      phase.vote.push(await timed(() => call('POST', `/posts/${ballots.pop() as string}/vote`, { position: 'right' }, voter), 201));
      phase.voteKey.push(
        await timed(
          () =>
            call('POST', `/posts/${ballots.pop() as string}/vote`, { position: 'right' }, { ...voter, 'Idempotency-Key': randomUUID() }),
          201,
        ),
      );
    }
    const medians = Object.fromEntries(Object.entries(phase).map(([name, values]) => [name, median(values)])) as Record<
      keyof typeof phase,
      number
    >;
    log(
      `repeat ${repeat}: comment ${fmt(medians.comment)} ms, with key ${fmt(medians.commentKey)} ms, replay ${fmt(medians.replay)} ms; ` +
        `vote ${fmt(medians.vote)} ms, with key ${fmt(medians.voteKey)} ms (medians of ${requests})`,
    );
    for (const name of Object.keys(phase) as (keyof typeof phase)[]) results[name].push(medians[name]);
  }
  await owner.end();

  log(
    `PostgreSQL: ${version}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}); ${repeats} repeats of ${requests} requests each`,
  );
  for (const [name, values] of Object.entries(results))
    log(`${name}: median ${fmt(median(values))} ms (min ${fmt(Math.min(...values))}, max ${fmt(Math.max(...values))})`);
  const ratio = (withKey: number[], without: number[]) => withKey.map((value, i) => value / (without[i] as number));
  // The claim travels with the first statement; a key costs a row written with the commit and, for
  // the one-round-trip vote, one round trip more (the kept answer, sealed in the API, with the commit).
  goal('idempotency comment with key / without', ratio(results.commentKey, results.comment), '<= 1.5', (value) => value <= 1.5);
  goal('idempotency vote with key / without', ratio(results.voteKey, results.vote), '<= 1.3', (value) => value <= 1.3);
  goal('idempotency replay / comment without key', ratio(results.replay, results.comment), '<= 1', (value) => value <= 1);
} finally {
  if (api && api.exitCode === null) {
    const exited = new Promise((resolve) => api?.once('exit', resolve));
    api.kill('SIGTERM');
    await exited;
  }
  await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
  await admin.end();
  await embedded?.stop();
  await rm(scratch, { recursive: true, force: true });
}
