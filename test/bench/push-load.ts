// The write load of the push benchmark (test/bench/push.ts), a process of its own: single-row
// notification inserts, one per transaction, `concurrency` at a time, each recipient in turn. Prints
// one JSON line { rate, commits: [[notificationId, committedAtMs]] } (the commit times give the
// push lag: the stand-in FCM records when it answered each notification's message).
import { readFileSync } from 'node:fs';
import pg from 'pg';

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
const statement = { name: 'insert', text: `insert into app.notifications (recipient_id, type) values ($1, 'post_commented') returning id` };
const commits: [string, number][] = [];
let next = 0;
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
await Promise.all(clients.map((client) => client.end()));
process.stdout.write(`${JSON.stringify({ rate: job.count / seconds, commits })}\n`);
