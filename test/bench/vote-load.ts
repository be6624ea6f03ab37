// The load generator of the vote benchmark (test/bench/votes.ts), a separate process so that
// clients never share the server's CPU time slice or event loop. Reads one job (a JSON file named
// by argv[2]), warms up (every connection open, plans cached), prints `warm`, waits for a line on
// stdin, runs its operations `concurrency` at a time, and prints one JSON line:
// { rate, seconds, dbCpuSeconds, loadCpuSeconds, failure }. dbCpuSeconds is the CPU its own database connections
// used (SQL modes; for HTTP modes the orchestrator reads the service's connections between `warm`
// and the result); loadCpuSeconds is this process's own CPU over the timed operations.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import pg from 'pg';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer, beginAs, sqlLiteral, userViewer } from '../../db/viewer.ts';
import { benchBallotKey, gatePipeline, sealedVoteParams, sealedVoteText } from './vote-wire.ts';
import type { BallotPosition } from '../../server/votes/ballots.ts';
import { cpuDelta, cpuSeconds } from './backend-cpu.ts';

export interface LoadItem {
  userId: string;
  sessionId: string;
  token: string;
  postId: string;
  position: string;
}

/**
 * sealed: the sealed vote of migrations/frozen/0290 (this tree's API: sealed ballots, the session checked
 * in cast_vote); cast_vote: the vote checks its session itself (this tree's API, migrations/frozen/0170); gate: the
 * schema has app.session_gate, sent with the opening ahead of cast_vote; round-trip: neither
 * (BENCH_BEFORE of an older ref), the check is its own round trip, as that API sent it.
 */
export type SessionCheck = 'sealed' | 'cast_vote' | 'gate' | 'round-trip';

export interface LoadJob {
  /**
   * floor: the minimal write a vote needs, one statement in one round trip (a receipt and one of 16
   *   counter slots, in tables of their own);
   * sql: the vote's SQL exactly as the API sends it (RequestTransaction: the viewer's settings and
   *   app.cast_vote, which checks the session, and commit, pipelined in one write: one round trip);
   * contract-floor: the smallest SQL that writes exactly the rows the contract makes a vote write
   *   (receipt, scope receipt, sealed ballot, the author's post_voted notification, the activity
   *   event), in the real tables (their triggers included: the unread and vote counters), one
   *   statement, one round trip, as the owner;
   * session: the session lookup alone (begin + role + session check + commit, one message);
   * http-vote: POST /posts/{postId}/vote; http-onboarding: GET /users/me/onboarding/status.
   */
  mode: 'floor' | 'contract-floor' | 'sql' | 'session' | 'http-vote' | 'http-onboarding' | 'http-summary';
  /** The service's ballot key (hex; sealed schemas), and the tallier's batch. */
  ballotKey: string;
  batch: number;
  /** The posts' author (contract-floor: the notification's recipient). */
  authorId: string;
  databaseUrl: string;
  base: string;
  /** sql mode: how the API of the schema under test checks the vote's session. */
  sessionCheck: SessionCheck;
  concurrency: number;
  /**
   * Operations per second to start the timed operations at (the n-th not before n / pace seconds),
   * `concurrency` at most at a time; none: each as soon as a connection is free.
   */
  pace?: number | undefined;
  warmup: LoadItem[];
  items: LoadItem[];
}

const job = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as LoadJob;
const { concurrency } = job;
const sqlMode = job.mode === 'floor' || job.mode === 'contract-floor' || job.mode === 'sql' || job.mode === 'session';
const ballots = benchBallotKey(job.ballotKey).box;
// Configured like the API pool (db/pools.ts): pipelined.
const pool = sqlMode
  ? new pg.Pool({ connectionString: job.databaseUrl, max: concurrency, idleTimeoutMillis: 0, pipeline: true })
  : undefined;
const target = new URL(job.base);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function request(method: 'GET' | 'POST', path: string, token: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${token}` };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    const req = http.request(
      { agent, host: target.hostname, port: target.port, method, path: `${target.pathname}${path}`, headers },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function perform(item: LoadItem): Promise<void> {
  switch (job.mode) {
    case 'floor': {
      await (pool as pg.Pool).query(
        `with receipt as (insert into bench_floor.receipts (post_id, user_id) values ($1, $2))
         insert into bench_floor.counters as c (post_id, slot, count) values ($1, floor(random() * 16), 1)
         on conflict (post_id, slot) do update set count = c.count + 1`,
        [item.postId, item.userId],
      );
      return;
    }
    case 'contract-floor': {
      const sealed = ballots.seal(item.postId, null, item.position as BallotPosition);
      await (pool as pg.Pool).query(
        `with receipt as (insert into app.vote_receipts (post_id, user_id) values ($1, $2)),
         scope as (insert into app.vote_scope_receipts (post_id, user_id, hub_id) values ($1, $2, null)),
         ballot as (insert into app_private.sealed_ballots (post_id, hub_id, key_id, nonce, ciphertext) values ($1, null, $3, $4, $5)),
         notification as (insert into app.notifications (recipient_id, type, actor_id, post_id) values ($6, 'post_voted', null, $1))
         insert into app.activity_events (actor_id, post_id, kind) values ($2, $1, 'post_voted')`,
        [item.postId, item.userId, ballots.keyId, sealed.subarray(0, 12), sealed.subarray(12), job.authorId],
      );
      return;
    }
    case 'sql': {
      if (job.sessionCheck === 'sealed') {
        // As POST /posts/{postId}/vote sends it: sealed in this process, one round trip.
        const tx = new RequestTransaction(pool as pg.Pool, anonymousViewer);
        tx.deferSession(userViewer(item.userId, item.sessionId), 2);
        await tx.queryAndCommit(sealedVoteText, sealedVoteParams(ballots, item.postId, item.position as BallotPosition, job.batch), 2);
        return;
      }
      // As POST /posts/{postId}/vote sends it.
      const text = 'select voted_at, hub_ids, global_tally from app.cast_vote($1, $2)';
      const viewer = userViewer(item.userId, item.sessionId);
      if (job.sessionCheck === 'gate') {
        await gatePipeline(pool as pg.Pool, viewer, text, [item.postId, item.position]);
        return;
      }
      // This tree's API (one round trip), or an older one's session round trip.
      const tx = new RequestTransaction(pool as pg.Pool, anonymousViewer);
      if (job.sessionCheck === 'cast_vote') tx.deferSession(viewer, 2);
      else if ((await tx.openWithSession(viewer)) === null) throw new Error('session refused');
      await tx.queryAndCommit(text, [item.postId, item.position], job.sessionCheck === 'cast_vote' ? 2 : undefined);
      return;
    }
    case 'session': {
      // The session lookup alone, at its cheapest: opening, check and commit in one message.
      const viewer = userViewer(item.userId, item.sessionId);
      const results = (await (pool as pg.Pool).query(
        `${beginAs(viewer)} select app.session_access_level(${sqlLiteral(item.sessionId)}, ${sqlLiteral(item.userId)}) as level; commit`,
      )) as unknown as pg.QueryResult<{ level: number | null }>[];
      if ((results.at(-2)?.rows[0]?.level ?? null) === null) throw new Error('session refused');
      return;
    }
    case 'http-vote': {
      const response = await request('POST', `/posts/${item.postId}/vote`, item.token, JSON.stringify({ position: item.position }));
      if (response.status !== 201) throw new Error(`vote answered ${response.status}: ${response.text}`);
      return;
    }
    case 'http-summary': {
      const response = await request('GET', `/posts/${item.postId}/vote/summary`, item.token);
      if (response.status !== 200) throw new Error(`vote summary answered ${response.status}: ${response.text}`);
      return;
    }
    case 'http-onboarding': {
      const response = await request('GET', '/users/me/onboarding/status', item.token);
      if (response.status !== 200) throw new Error(`onboarding status answered ${response.status}: ${response.text}`);
      return;
    }
  }
}

async function run(items: LoadItem[], pace?: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const n = next++;
        const wait = pace ? started + (n * 1000) / pace - performance.now() : 0;
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await perform(items[n] as LoadItem);
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

let result: { rate: number; seconds: number; dbCpuSeconds: number | null; loadCpuSeconds: number; failure?: string };
try {
  let pids: number[] = [];
  if (pool) {
    // Open every connection now (and learn its backend), so that none opens while timed.
    const clients = await Promise.all(Array.from({ length: concurrency }, () => pool.connect()));
    pids = await Promise.all(
      clients.map(async (client) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid as number),
    );
    for (const client of clients) client.release();
  }
  await run(job.warmup);
  process.stdout.write('warm\n');
  await once(process.stdin, 'data');
  const before = cpuSeconds(pids);
  const ownBefore = process.cpuUsage();
  const seconds = await run(job.items, job.pace);
  const own = process.cpuUsage(ownBefore);
  const dbCpuSeconds = pool ? cpuDelta(before, cpuSeconds(pids)) : null;
  result = { rate: job.items.length / seconds, seconds, dbCpuSeconds, loadCpuSeconds: (own.user + own.system) / 1e6 };
} catch (error) {
  result = { rate: 0, seconds: 0, dbCpuSeconds: null, loadCpuSeconds: 0, failure: error instanceof Error ? error.message : String(error) };
}
agent.destroy();
await pool?.end();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.stdin.destroy();
