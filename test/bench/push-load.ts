// The write load of the push benchmark (test/bench/push.ts), a process of its own: single-row
// notification inserts, one per transaction, `concurrency` at a time, each recipient in turn. Prints
// one JSON line { rate, commits: [[notificationId, committedAtMs]], cpu } (the commit times give the
// push lag: the stand-in FCM records when it answered each notification's message; cpu: seconds
// this process and its database backends spent on the CPU while inserting).
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { cpuDelta, cpuSeconds } from './backend-cpu.ts';

interface Job {
  databaseUrl: string;
  recipients: string[];
  count: number;
  concurrency: number;
}

const job = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as Job;
const clients = await Promise.all(
  Array.from({ length: job.concurrency }, async () => {
    const client = new pg.Client({ connectionString: job.databaseUrl });
    await client.connect();
    return client;
  }),
);
const backends = await Promise.all(
  clients.map(async (client) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid as number),
);
const statement = { name: 'insert', text: `insert into app.notifications (recipient_id, type) values ($1, 'post_commented') returning id` };
const commits: [string, number][] = [];
let next = 0;
const backendsBefore = cpuSeconds(backends);
const ownBefore = process.cpuUsage();
const started = performance.now();
await Promise.all(
  clients.map(async (client) => {
    for (let i = next++; i < job.count; i = next++) {
      const { rows } = await client.query<{ id: string }>({ ...statement, values: [job.recipients[i % job.recipients.length]] });
      commits.push([(rows[0] as { id: string }).id, Date.now()]);
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
const own = process.cpuUsage(ownBefore);
const cpu = { load: (own.user + own.system) / 1e6, backends: cpuDelta(backendsBefore, cpuSeconds(backends)) ?? 0, pids: backends };
await Promise.all(clients.map((client) => client.end()));
process.stdout.write(`${JSON.stringify({ rate: job.count / seconds, seconds, commits, cpu })}\n`);
