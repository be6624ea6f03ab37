// Live notifications across a real database restart (contract section 9): a PostgreSQL cluster
// this test owns (embedded, stopped and started again on the same port), an API process of its
// own (npm run server), and a client that behaves like the mobile app: it reconnects whenever its
// stream ends, sending Last-Event-ID. Rows committed before the restart, while the API's
// connections are still coming back, and after it all reach the client, once each, in order.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import pg from 'pg';
import { survivesServerLoss } from '../../../db/pools.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../../db/embedded.ts';
import { freePort } from '../../../db/free-port.ts';
import { migrate } from '../../../db/migrate.ts';
import { loadConfig } from '../../../config.ts';
import { s3Client } from '../../../server/uploads/storage.ts';
import { databaseUrl } from '../../helpers/global-setup.ts';
import { openStream, sleep, type TestStream } from '../../helpers/notifications.ts';

let dataDir: string;
let dbPort: number;
let cluster: EmbeddedDatabase | undefined;
let ownerUrl: string;
let owner: pg.Pool;
let api: ChildProcess;
let apiUrl: string;
let output = '';

const startCluster = async () => {
  cluster = await startEmbeddedPostgres(dataDir, { persistent: true, durable: false, port: dbPort });
};

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-restart-'));
  await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user
  dbPort = await freePort();
  await startCluster();
  ownerUrl = databaseUrl((cluster as EmbeddedDatabase).url, 'live_restart');
  const admin = new pg.Client({ connectionString: (cluster as EmbeddedDatabase).url });
  await admin.connect();
  await admin.query('create database live_restart');
  await admin.end();
  await migrate(ownerUrl);
  owner = survivesServerLoss(new pg.Pool({ connectionString: ownerUrl, max: 2 }));

  const bucket = `live-restart-${randomUUID().slice(0, 8)}`;
  const s3 = s3Client(loadConfig({ S3_ENDPOINT: inject('s3Endpoint'), S3_BUCKET: bucket }).s3, inject('s3Endpoint'));
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  s3.destroy();
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  api = spawn(process.execPath, ['main.ts', '--only=api'], {
    cwd: path.resolve(import.meta.dirname, '../../..'),
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: ownerUrl,
      S3_ENDPOINT: inject('s3Endpoint'),
      S3_BUCKET: bucket,
      JWT_SECRET: 'restart-test',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  api.stdout?.on('data', (chunk) => (output += chunk));
  api.stderr?.on('data', (chunk) => (output += chunk));
  const started = Date.now();
  for (;;) {
    const answer = await fetch(`${apiUrl}/api/v1/auth/login-config`).catch(() => undefined);
    if (answer?.status === 200) break;
    if (api.exitCode !== null || Date.now() - started > 30_000) throw new Error(`the API process did not start:\n${output}`);
    await sleep(100);
  }
}, 120_000);

afterAll(async () => {
  if (api && api.exitCode === null) {
    const exited = new Promise((resolve) => api.once('exit', resolve));
    api.kill('SIGKILL');
    await exited;
  }
  await owner?.end();
  await cluster?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Like the mobile app: reads the stream, and reconnects with Last-Event-ID whenever it ends. */
function resumingClient(token: string) {
  const finished: string[] = [];
  let current: TestStream | undefined;
  let running = true;
  let connections = 0;
  const received = () => [...finished, ...(current?.events.map((event) => event.id as string) ?? [])];
  const loop = (async () => {
    while (running) {
      const lastEventId = received().at(-1);
      const headers: Record<string, string> = { accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) };
      const stream = await openStream(apiUrl, token, headers).catch(() => undefined);
      if (stream?.status !== 200) {
        await sleep(50);
        continue;
      }
      current = stream;
      connections += 1;
      await stream.ended;
      finished.push(...stream.events.map((event) => event.id as string));
      current = undefined;
    }
  })();
  return {
    received,
    connections: () => connections,
    async waitFor(ids: string[], timeoutMs = 20_000) {
      const started = Date.now();
      while (!ids.every((id) => received().includes(id))) {
        if (Date.now() - started > timeoutMs)
          throw new Error(`missing ${ids.filter((id) => !received().includes(id)).join(', ')}\n${output.slice(-3000)}`);
        await sleep(20);
      }
    },
    async stop() {
      running = false;
      current?.close();
      await loop;
    },
  };
}

const insert = async (recipientId: string): Promise<string> =>
  (
    await owner.query<{ id: string }>(`insert into app.notifications (recipient_id, type) values ($1, 'user_followed') returning id`, [
      recipientId,
    ])
  ).rows[0]!.id;

/** Inserts as soon as the restarted database accepts connections. */
async function insertWhenUp(recipientId: string): Promise<string> {
  for (;;) {
    try {
      return await insert(recipientId);
    } catch {
      await sleep(10);
    }
  }
}

describe('a database restart', () => {
  it(
    'loses nothing: rows committed before, right after and well after each restart reach a resuming client once each, in order',
    { timeout: 120_000 },
    async () => {
      const session = await fetch(`${apiUrl}/api/v1/auth/anonymous/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ deviceId: `restart-${randomUUID()}` }),
      }).then((response) => response.json());
      const userId: string = session.data.user.id;
      const client = resumingClient(session.data.accessToken);
      try {
        while (client.connections() === 0) await sleep(20);
        const written: string[] = [];
        for (let round = 0; round < 2; round += 1) {
          const before = [await insert(userId), await insert(userId)];
          written.push(...before);
          await client.waitFor(before);
          // Committed just before the database goes down: perhaps not yet announced, perhaps not yet read.
          written.push(await insert(userId), await insert(userId));
          await (cluster as EmbeddedDatabase).stop();
          await startCluster();
          // Committed while the API's connections are still coming back.
          written.push(await insertWhenUp(userId), await insertWhenUp(userId));
          await client.waitFor(written);
          const after = await insert(userId);
          written.push(after);
          await client.waitFor([after]);
        }
        expect(client.received()).toEqual(written);
      } finally {
        await client.stop();
      }
    },
  );
});
