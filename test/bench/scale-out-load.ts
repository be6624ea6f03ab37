// The clients of the scale-out benchmark (test/bench/scale-out.ts), in a process of their own: up
// to 1,000 database connections as the API login, each running API request transactions exactly
// as the API sends them (db/request-transaction.ts: the opening with the viewer's settings, the
// bounds and the deferred session check, the statement and `commit` pipelined in one write), half
// GET /users/me/onboarding/status's statement, half a post read under the posts' policy.
// Driven over IPC:
//   { type: 'connect', url, clients, voters, posts } → every connection opened  → { type: 'connected', ms }
//   { type: 'closed', seconds }   → every client runs back to back  → { type: 'done', transactions, errors, p50, p99 }
//   { type: 'open', rate, seconds } → transactions started at `rate` per second on free clients → the same
//   { type: 'end' }               → connections closed               → { type: 'ended' }
import pg from 'pg';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer, userViewer } from '../../db/viewer.ts';

interface Voter {
  userId: string;
  sessionId: string;
}

let pool: pg.Pool | undefined;
let voters: Voter[] = [];
let posts: string[] = [];
let next = 0;
const send = (message: unknown) => process.send?.(message);

/** One API request's transaction: the deferred session check with the request's one statement. */
async function request(n: number): Promise<void> {
  const voter = voters[n % voters.length] as Voter;
  const tx = new RequestTransaction(pool as pg.Pool, anonymousViewer);
  tx.deferSession(userViewer(voter.userId, voter.sessionId), 1);
  if (n % 2 === 0) await tx.queryAndCommit('select * from app.onboarding_status()');
  else await tx.queryAndCommit('select id, author_id, thought_text, created_at from app.posts where id = $1', [posts[n % posts.length]]);
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number);
}

function report(started: number, latencies: number[], errors: string[]): void {
  const sorted = latencies.sort((a, b) => a - b);
  send({
    type: 'done',
    seconds: (performance.now() - started) / 1000,
    transactions: latencies.length,
    errors: errors.length,
    firstError: errors[0],
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
  });
}

async function timed(latencies: number[], errors: string[]): Promise<void> {
  const started = performance.now();
  try {
    await request(next++);
    latencies.push(performance.now() - started);
  } catch (error) {
    errors.push((error as Error).message);
  }
}

process.on('message', async (message: any) => {
  if (message.type === 'connect') {
    const started = performance.now();
    ({ voters, posts } = message);
    pool = new pg.Pool({ connectionString: message.url, max: message.clients, pipeline: true });
    pool.on('error', () => {});
    // Every connection open before the clock starts (a direct login costs a SCRAM exchange each).
    const clients: pg.PoolClient[] = [];
    for (let opened = 0; opened < message.clients; opened += 50) {
      clients.push(
        ...(await Promise.all(Array.from({ length: Math.min(50, message.clients - opened) }, () => (pool as pg.Pool).connect()))),
      );
    }
    for (const client of clients) client.release();
    send({ type: 'connected', ms: performance.now() - started });
  } else if (message.type === 'closed') {
    const latencies: number[] = [];
    const errors: string[] = [];
    const deadline = performance.now() + message.seconds * 1000;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: pool?.options.max ?? 0 }, async () => {
        while (performance.now() < deadline) await timed(latencies, errors);
      }),
    );
    report(started, latencies, errors);
  } else if (message.type === 'open') {
    const latencies: number[] = [];
    const errors: string[] = [];
    const started = performance.now();
    const total = Math.round(message.rate * message.seconds);
    const running: Promise<void>[] = [];
    // Starts are spread evenly: each tick starts the transactions due by now.
    let startedCount = 0;
    while (startedCount < total) {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * message.rate));
      for (; startedCount < due; startedCount++) running.push(timed(latencies, errors));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await Promise.all(running);
    report(started, latencies, errors);
  } else if (message.type === 'end') {
    await pool?.end();
    pool = undefined;
    send({ type: 'ended' });
  }
});
send({ type: 'ready' });
