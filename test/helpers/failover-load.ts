// The service on a Patroni cluster (test/helpers/patroni.ts) under a load like phones, for the
// failover test (test/process/operations/failover.test.ts) and benchmark (test/bench/failover.ts).
//
// startServices: `npm run migrate`, then one API process and one worker process (`node main.ts
// --only=...`) with DATABASE_URL on HAProxy's leader port and DATABASE_REPLICA_URLS on its standby
// port, as docker-compose.patroni.yml runs them.
//
// FailoverLoad: an author with a post and a notification stream open on it (resumed with
// Last-Event-ID whenever it ends), and `clients` commenters, each looping over: a comment with an
// Idempotency-Key (after a 503, a 409 or no answer, the same request again with the same key, as
// the app does, until it is answered 201), a comment without a key (never sent again: its commit
// may have happened), and a read of the post's comments. Every answer is recorded. check() then
// reads the database: every acknowledged comment is there once, no comment is there twice, and
// every post_commented notification of the author reached the stream.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { freePort } from '../../db/free-port.ts';
import { testCodes, testOtpCode, testPhone } from './app.ts';
import { createClient, type Client } from './client.ts';
import { openStream, type TestStream } from './notifications.ts';
import { answers, startProcess, type RunningProcess } from './process.ts';
import { createBucket } from './worlds.ts';

export interface Services {
  apiUrl: string;
  api: RunningProcess;
  worker: RunningProcess;
  stop(): Promise<void>;
}

/** `cwd`: the checkout whose code runs (this one unless given: another release's tree, for a comparison). */
export async function startServices({
  primaryUrl,
  replicaUrl,
  s3Endpoint,
  cwd,
}: {
  primaryUrl: string;
  replicaUrl: string;
  s3Endpoint: string;
  cwd?: string;
}): Promise<Services> {
  const bucket = `failover-${randomBytes(4).toString('hex')}`;
  await createBucket(bucket, s3Endpoint);
  const env = {
    DATABASE_URL: primaryUrl,
    DATABASE_REPLICA_URLS: replicaUrl,
    JWT_SECRET: 'failover-test',
    OTP_TEST_CODES: testCodes,
    S3_ENDPOINT: s3Endpoint,
    S3_BUCKET: bucket,
    TRUST_PROXY: 'loopback',
    // The load writes more comments per user than a person does.
    WRITE_LIMITS: 'comments=1000000/3600',
    MIGRATE_ON_START: 'false',
  };
  const migrate = startProcess('npm', ['run', 'migrate'], env, { cwd });
  if ((await migrate.exited) !== 0) throw new Error(`npm run migrate failed:\n${migrate.output()}`);
  const apiPort = await freePort();
  const api = startProcess(process.execPath, ['main.ts', '--only=api'], { ...env, PORT: String(apiPort) }, { cwd });
  const worker = startProcess(process.execPath, ['main.ts', '--only=worker'], { ...env, PORT: String(await freePort()) }, { cwd });
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const stop = async () => {
    for (const child of [api, worker]) if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGTERM');
    await Promise.all([api.exited, worker.exited]);
  };
  try {
    await api.waitFor(() => answers(`${apiUrl}/readyz`), 'the API process', 60_000);
    await worker.waitFor(() => worker.output().includes('worker running'), 'the worker process', 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { apiUrl, api, worker, stop };
}

type Kind = 'keyed' | 'unkeyed' | 'read';

export interface Answer {
  kind: Kind;
  /** HTTP status, or 0 when no answer came. */
  status: number;
  retryAfter: string | null;
  code?: string;
  /** performance.now() when the request was sent and answered. */
  sent: number;
  answered: number;
}

interface User {
  id: string;
  token: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function signedInUser(app: Client, name: string): Promise<User> {
  const session = await app.post('/auth/anonymous/session', { deviceId: `failover-${name}-${randomUUID()}` });
  if (session.status !== 200) throw new Error(`anonymous session: ${session.status} ${session.text}`);
  const user = { id: session.body.data.user.id as string, token: session.body.data.accessToken as string };
  const basics = await app.put(
    '/users/me/onboarding/profile-basics',
    { fullName: 'Failover Person', username: `${name}_${randomBytes(3).toString('hex')}`, acceptTerms: true },
    { token: user.token },
  );
  if (basics.status !== 200) throw new Error(`profile basics: ${basics.status} ${basics.text}`);
  return user;
}

/** A user with a confirmed phone (posting needs one): a test phone and its fixed code (OTP_TEST_CODES). */
async function phoneUser(app: Client, name: string, phoneIndex: number): Promise<User> {
  const user = await signedInUser(app, name);
  const media = await app.put('/users/me/onboarding/media', {}, { token: user.token });
  if (media.status !== 200) throw new Error(`onboarding media: ${media.status} ${media.text}`);
  const phone = testPhone(phoneIndex);
  const request = await app.post(
    '/auth/otp/request',
    { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber },
    { token: user.token },
  );
  if (request.status !== 200) throw new Error(`OTP request: ${request.status} ${request.text}`);
  const verify = await app.post(
    '/auth/otp/verify',
    { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber, code: testOtpCode },
    { token: user.token },
  );
  if (verify.status !== 200) throw new Error(`OTP verify: ${verify.status} ${verify.text}`);
  return { id: verify.body.data.user.id as string, token: verify.body.data.accessToken as string };
}

/** A notification stream that resumes with Last-Event-ID whenever it ends, until closed. */
class ResumingStream {
  readonly ids = new Set<string>();
  readonly duplicates: string[] = [];
  reconnects = 0;
  #closed = false;
  #current: TestStream | undefined;
  #lastId: string | undefined;
  #running: Promise<void>;

  constructor(apiUrl: string, token: string) {
    this.#running = this.#run(apiUrl, token);
  }

  async #run(apiUrl: string, token: string): Promise<void> {
    while (!this.#closed) {
      const headers: Record<string, string> = { accept: 'text/event-stream', ...(this.#lastId ? { 'last-event-id': this.#lastId } : {}) };
      const stream = await openStream(apiUrl, token, headers).catch(() => undefined);
      if (stream && stream.status === 200) {
        this.#current = stream;
        let seen = 0;
        const take = () => {
          for (; seen < stream.events.length; seen += 1) {
            const event = stream.events[seen]!;
            if (event.event !== 'notification' || event.id === undefined) continue;
            if (this.ids.has(event.id)) this.duplicates.push(event.id);
            this.ids.add(event.id);
            this.#lastId = event.id;
          }
        };
        const timer = setInterval(take, 50);
        await stream.ended;
        clearInterval(timer);
        take();
      }
      if (this.#closed) break;
      this.reconnects += 1;
      await sleep(200);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#current?.close();
    await this.#running;
  }
}

export interface LoadReport {
  answers: Answer[];
  /** Keyed comments answered 201 (their text), unkeyed ones answered 201, unkeyed ones with another answer. */
  keyedAcknowledged: string[];
  unkeyedAcknowledged: string[];
  unkeyedUnanswered: string[];
}

export class FailoverLoad {
  readonly app: Client;
  readonly #apiUrl: string;
  #author!: User;
  #postId!: string;
  #commenters: User[] = [];
  #stream!: ResumingStream;
  #running = false;
  #loops: Promise<void>[] = [];
  #answers: Answer[] = [];
  #keyedAcknowledged: string[] = [];
  #unkeyedAcknowledged: string[] = [];
  #unkeyedUnanswered: string[] = [];
  #sequence = 0;
  readonly #run = randomBytes(3).toString('hex');

  private constructor(apiUrl: string) {
    this.#apiUrl = apiUrl;
    this.app = createClient(apiUrl);
  }

  /** An author with a post and its stream open, and `clients` commenters. */
  static async prepare(apiUrl: string, clients: number): Promise<FailoverLoad> {
    const load = new FailoverLoad(apiUrl);
    load.#author = await phoneUser(load.app, 'author', 1);
    const post = await load.app.post('/posts', { thoughtText: 'Failover?', visibility: 'public' }, { token: load.#author.token });
    if (post.status !== 201) throw new Error(`post: ${post.status} ${post.text}`);
    load.#postId = post.body.data.id;
    for (let n = 0; n < clients; n += 1) load.#commenters.push(await signedInUser(load.app, `commenter${n}`));
    load.#stream = new ResumingStream(load.#apiUrl, load.#author.token);
    return load;
  }

  /** The answers of the running load so far. */
  get answersSoFar(): readonly Answer[] {
    return this.#answers;
  }

  get authorToken(): string {
    return this.#author.token;
  }

  /** Starts every client's loop. */
  start(): void {
    this.#running = true;
    this.#answers = [];
    this.#keyedAcknowledged = [];
    this.#unkeyedAcknowledged = [];
    this.#unkeyedUnanswered = [];
    this.#loops = this.#commenters.map((user) => this.#loop(user));
  }

  /** Stops the loops (each finishes its request, a keyed one until answered) and answers what they saw. */
  async stop(): Promise<LoadReport> {
    this.#running = false;
    await Promise.all(this.#loops);
    return {
      answers: this.#answers,
      keyedAcknowledged: this.#keyedAcknowledged,
      unkeyedAcknowledged: this.#unkeyedAcknowledged,
      unkeyedUnanswered: this.#unkeyedUnanswered,
    };
  }

  async #request(
    kind: Kind,
    method: string,
    path: string,
    user: User,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    const sent = performance.now();
    let answer: Answer;
    try {
      const response = await this.app.request(method, path, { token: user.token, body, headers });
      answer = {
        kind,
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        code: response.body?.error?.code,
        sent,
        answered: performance.now(),
      };
    } catch {
      answer = { kind, status: 0, retryAfter: null, sent, answered: performance.now() };
    }
    this.#answers.push(answer);
    return answer;
  }

  async #loop(user: User): Promise<void> {
    const path = `/posts/${this.#postId}/comments`;
    while (this.#running) {
      const n = (this.#sequence += 1);
      const keyedText = `keyed ${this.#run} ${n}`;
      const key = randomUUID();
      // The app's retry: the same request with the same key until it is answered (a 201, or a
      // replay of it), pausing as told (at most a second).
      for (let attempt = 0; attempt < 200; attempt += 1) {
        const answer = await this.#request('keyed', 'POST', path, user, { text: keyedText }, { 'idempotency-key': key });
        if (answer.status === 201) {
          this.#keyedAcknowledged.push(keyedText);
          break;
        }
        await sleep(Math.min(1000, 1000 * Number(answer.retryAfter ?? 1)));
      }
      const unkeyedText = `unkeyed ${this.#run} ${n}`;
      const unkeyed = await this.#request('unkeyed', 'POST', path, user, { text: unkeyedText });
      (unkeyed.status === 201 ? this.#unkeyedAcknowledged : this.#unkeyedUnanswered).push(unkeyedText);
      if (unkeyed.status !== 201) await sleep(Math.min(1000, 1000 * Number(unkeyed.retryAfter ?? 1)));
      const read = await this.#request('read', 'GET', `${path}?limit=5`, user);
      if (read.status !== 200) await sleep(Math.min(1000, 1000 * Number(read.retryAfter ?? 1)));
    }
  }

  /**
   * Reads the database (as the owner, on the primary): the comments of this run's texts with their
   * counts, and the author's post_commented notifications; compares them with what was acknowledged
   * and what the stream delivered. Waits up to `streamWaitMillis` for the stream to catch up.
   */
  async check(
    ownerUrl: string,
    report: LoadReport,
    streamWaitMillis = 20_000,
  ): Promise<{ lost: string[]; doubled: string[]; missed: string[]; delivered: number; duplicates: string[] }> {
    const client = new pg.Client({ connectionString: ownerUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ text: string; n: number }>(
        'select text, count(*)::int as n from app.comments where post_id = $1 group by text',
        [this.#postId],
      );
      const counts = new Map(rows.map((row) => [row.text, row.n]));
      const acknowledged = [...report.keyedAcknowledged, ...report.unkeyedAcknowledged];
      const lost = acknowledged.filter((text) => !counts.has(text));
      const doubled = rows.filter((row) => row.n > 1).map((row) => row.text);
      const notifications = async () =>
        (
          await client.query<{ id: string }>("select id::text from app.notifications where recipient_id = $1 and type = 'post_commented'", [
            this.#author.id,
          ])
        ).rows.map((row) => row.id);
      const deadline = Date.now() + streamWaitMillis;
      let missed: string[];
      for (;;) {
        missed = (await notifications()).filter((id) => !this.#stream.ids.has(id));
        if (missed.length === 0 || Date.now() > deadline) break;
        await sleep(100);
      }
      return { lost, doubled, missed, delivered: this.#stream.ids.size, duplicates: this.#stream.duplicates };
    } finally {
      await client.end();
    }
  }

  /** Asks for a data export of a commenter (a job for the worker); answers its id and the commenter's token. */
  async requestExport(n: number): Promise<{ exportId: string; token: string }> {
    const user = this.#commenters[n] as User;
    for (;;) {
      const response = await this.app.post('/users/me/exports', undefined, {
        token: user.token,
        headers: { 'idempotency-key': `export-${user.id}` },
      });
      if (response.status === 202) return { exportId: response.body.data.exportId, token: user.token };
      if (response.status !== 503) throw new Error(`export: ${response.status} ${response.text}`);
      await sleep(500);
    }
  }

  /** Waits until the export is ready (the worker ran its job); its status. */
  async exportDone(exportId: string, token: string, timeoutMillis = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMillis;
    for (;;) {
      const response = await this.app.get(`/users/me/exports/${exportId}`, { token });
      const status = response.body?.data?.status as string | undefined;
      if (status === 'ready' || status === 'failed' || Date.now() > deadline) return status ?? `HTTP ${response.status}`;
      await sleep(200);
    }
  }

  async close(): Promise<void> {
    await this.#stream.close();
  }
}

/** The longest stretch, in seconds, between `from` and the last write, without a write answered 2xx. */
export function writeGapSeconds(answers: Answer[], from: number): number {
  const ends = answers
    .filter((answer) => answer.kind !== 'read' && answer.status >= 200 && answer.status < 300 && answer.answered >= from)
    .map((answer) => answer.answered)
    .sort((a, b) => a - b);
  let gap = 0;
  let previous = from;
  for (const end of ends) {
    gap = Math.max(gap, end - previous);
    previous = end;
  }
  return gap / 1000;
}

export type Fault = 'kill' | 'freeze' | 'switchover';

export interface FaultRound {
  fault: Fault;
  leader: string;
  newLeader: string;
  /** Seconds from the fault until HAProxy's leader port reached the new leader (as the helper saw it). */
  leaderAfterSeconds: number;
  writeGapSeconds: number;
  report: LoadReport;
  check: Awaited<ReturnType<FailoverLoad['check']>>;
  /** The export requested just before the fault, once its job ran. */
  exportStatus: string;
  /** Answers other than 2xx, by kind and status (0: no answer), e.g. "keyed 503". */
  failures: Map<string, number>;
  /** Answers 5xx other than 503, and 503 without Retry-After. */
  badFailures: Answer[];
}

/**
 * One fault under load: the load runs, an export is asked for, the leader is killed (-9), frozen
 * (SIGSTOP) or switched over to the synchronous standby; once a new leader takes writes and the load
 * has written through it, the load stops, the old leader comes back (started again, or thawed) and
 * the database is checked.
 */
export async function faultRound(
  cluster: import('./patroni.ts').PatroniCluster,
  load: FailoverLoad,
  fault: Fault,
  exportOf: number,
): Promise<FaultRound> {
  const leader = await cluster.waitHealthy();
  const candidate = (await cluster.members()).find((member) => member.role === 'sync_standby')?.name as string;
  load.start();
  const warm = performance.now();
  while (performance.now() - warm < 1000) await sleep(100);
  const requested = await load.requestExport(exportOf);
  const faultAt = performance.now();
  if (fault === 'kill') await cluster.kill(leader);
  else if (fault === 'freeze') await cluster.freeze(leader);
  else await cluster.switchover(leader, candidate);
  const newLeader = await cluster.waitForLeader({ not: leader, timeoutMillis: 120_000 });
  const leaderAt = performance.now();
  // Until every client wrote through the new leader (a write sent after it took over, answered 2xx).
  const stop = performance.now() + 30_000;
  while (
    load.answersSoFar.filter((answer) => answer.kind !== 'read' && answer.sent > leaderAt && answer.status >= 200 && answer.status < 300)
      .length < 8 &&
    performance.now() < stop
  ) {
    await sleep(100);
  }
  const report = await load.stop();
  if (fault === 'kill') await cluster.start(leader);
  if (fault === 'freeze') await cluster.thaw(leader);
  const check = await load.check(cluster.primaryUrl, report);
  const exportStatus = await load.exportDone(requested.exportId, requested.token);
  const failures = new Map<string, number>();
  for (const answer of report.answers) {
    if (answer.status >= 200 && answer.status < 300) continue;
    const name = `${answer.kind} ${answer.status}`;
    failures.set(name, (failures.get(name) ?? 0) + 1);
  }
  const badFailures = report.answers.filter(
    (answer) => answer.status === 0 || (answer.status >= 500 && (answer.status !== 503 || answer.retryAfter === null)),
  );
  return {
    fault,
    leader,
    newLeader,
    leaderAfterSeconds: (leaderAt - faultAt) / 1000,
    writeGapSeconds: writeGapSeconds(report.answers, faultAt),
    report,
    check,
    exportStatus,
    failures,
    badFailures,
  };
}
