// The write load of the live benchmark (test/bench/live.ts), in a thread of its own: for `seconds`,
// `concurrency` writers in a closed loop, either votes over HTTP (each on a post of its own) or
// notification rows inserted directly (one transaction each). Reports how many completed and, for
// each, when its answer (after the commit) arrived: keyed `post:<postId>` for votes, by
// notification id for inserts. Also reports the CPU its own database connections used (their
// backends end with the thread, before the benchmark could read them).
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { cpuDelta, cpuSeconds } from './backend-cpu.ts';

interface Job {
  mode: 'votes' | 'inserts';
  base: string;
  ownerUrl: string;
  votes: { token: string; postId: string }[];
  recipients: string[];
  concurrency: number;
  seconds: number;
}

const job = workerData as Job;
const now = () => performance.timeOrigin + performance.now();
const target = new URL(job.base);
const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
const pool = new pg.Pool({ connectionString: job.ownerUrl, max: job.concurrency });

function vote(token: string, postId: string): Promise<number> {
  const body = JSON.stringify({ position: 'neutral' });
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: `${target.pathname}/posts/${postId}/vote`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

// Every connection open (and its backend known) before the clock starts.
const clients = await Promise.all(Array.from({ length: job.concurrency }, () => pool.connect()));
const pids = await Promise.all(
  clients.map(async (client) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid as number),
);
for (const client of clients) client.release();
const cpuBefore = cpuSeconds(pids);

const responses: [string, number][] = [];
let next = 0;
let failure: string | undefined;
const started = now();
const until = started + job.seconds * 1000;
await Promise.all(
  Array.from({ length: job.concurrency }, async () => {
    while (now() < until && !failure) {
      const i = next++;
      if (job.mode === 'votes') {
        const item = job.votes[i];
        if (!item) return;
        const status = await vote(item.token, item.postId);
        if (status !== 201) failure = `vote answered ${status}`;
        else responses.push([`post:${item.postId}`, now()]);
      } else {
        const { rows } = await pool.query<{ id: string }>(
          `insert into app.notifications (recipient_id, type) values ($1, 'user_followed') returning id`,
          [job.recipients[i % job.recipients.length]],
        );
        responses.push([rows[0]?.id as string, now()]);
      }
    }
  }),
);
const seconds = (now() - started) / 1000;
const dbCpuSeconds = cpuDelta(cpuBefore, cpuSeconds(pids)) ?? 0;
agent.destroy();
await pool.end();
parentPort?.postMessage({ responses, seconds, dbCpuSeconds, pids, failure });
