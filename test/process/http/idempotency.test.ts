// Idempotency keys across real API processes (contract part 15, server/http/idempotency.ts): two
// API processes on one database, retries of one request sent to both at once run it once; an API
// process killed (-9) while the request's transaction is open leaves nothing, and the retry runs it
// once; one killed after the commit, before the phone read its answer, leaves the effect and its
// kept answer, and the retry through the other process replays it.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createClient, type Client } from '../../helpers/client.ts';
import { createPost } from '../../helpers/posts.ts';
import { answers, killAll, type RunningProcess } from '../../helpers/process.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { processOnApp } from '../../helpers/worlds.ts';

let app: TestApp;
const processes: RunningProcess[] = [];

beforeAll(async () => {
  app = await startTestApp();
}, 60_000);

afterAll(async () => {
  await killAll(processes);
  await app.close();
});

/** An API process on the test app's database (tokens signed by the test app are valid there). */
async function startApi(): Promise<{ running: RunningProcess; client: Client; port: number }> {
  const running = await processOnApp(app, 'api', {
    // The tests hold app.comments while a request waits for it: longer than the default lock bound.
    API_LOCK_TIMEOUT_MS: '60000',
    API_STATEMENT_TIMEOUT_MS: '60000',
  });
  processes.push(running);
  const { port } = running;
  const url = `http://127.0.0.1:${port}`;
  await running.waitFor(() => answers(`${url}/readyz`), 'the API process');
  return { running, client: createClient(url), port };
}

const count = async (sql: string, params: unknown[] = []): Promise<number> => (await app.owner.query(sql, params)).rows[0].n;
const comments = (postId: string) => count('select count(*)::int as n from app.comments where post_id = $1', [postId]);
const keyed = (key: string) => ({ 'Idempotency-Key': key });

/** A test connection that holds app.comments: a comment's transaction waits at its insert, after its key's claim. */
async function holdComments(): Promise<pg.Client> {
  const holder = new pg.Client({ connectionString: app.ownerUrl });
  await holder.connect();
  await holder.query('begin');
  await holder.query('lock table app.comments in share mode');
  return holder;
}

/** The backend waiting for a lock (the held request's), once there is one. */
async function lockWaiter(): Promise<number> {
  for (;;) {
    const { rows } = await app.owner.query(
      `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    if (rows[0]) return rows[0].pid as number;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function killed(running: RunningProcess): Promise<void> {
  process.kill(-(running.child.pid as number), 'SIGKILL');
  await running.exited;
}

describe('Idempotency-Key across API processes', () => {
  let a: Awaited<ReturnType<typeof startApi>>;
  let b: Awaited<ReturnType<typeof startApi>>;
  let author: TestUser;
  beforeAll(async () => {
    [a, b] = await Promise.all([startApi(), startApi()]);
    author = await userAtLevel(app, 3);
  }, 90_000);

  it(
    'runs concurrent retries sent to two processes once: the others answer 409 IN_USE, then the kept answer',
    { timeout: 60_000 },
    async () => {
      const post = await createPost(app, author);
      const user = await userAtLevel(app, 2);
      const key = randomUUID();
      const send = (client: Client) =>
        client.post(`/posts/${post.id}/comments`, { text: 'one of six' }, { token: user.token, headers: keyed(key) });
      const holder = await holdComments();
      try {
        const first = send(a.client);
        await lockWaiter();
        const retries = await Promise.all([b.client, a.client, b.client, a.client, b.client].map(send));
        for (const retry of retries) {
          expect(retry.status).toBe(409);
          expect(retry.body.error.code).toBe('IDEMPOTENCY_KEY_IN_USE');
          expect(retry.headers.get('retry-after')).toBe('1');
        }
        await holder.query('commit');
        const answered = await first;
        expect(answered.status).toBe(201);
        for (const client of [a.client, b.client]) {
          const replay = await send(client);
          expect(replay.text).toBe(answered.text);
          expect(replay.headers.get('idempotent-replayed')).toBe('true');
        }
      } finally {
        await holder.end();
      }
      expect(await comments(post.id)).toBe(1);
    },
  );

  it(
    'leaves nothing when the process dies mid-transaction: the retry through the other process runs once',
    { timeout: 60_000 },
    async () => {
      const doomed = await startApi();
      const post = await createPost(app, author);
      const user = await userAtLevel(app, 2);
      const key = randomUUID();
      const holder = await holdComments();
      let backend: number;
      try {
        void doomed.client
          .post(`/posts/${post.id}/comments`, { text: 'after a crash' }, { token: user.token, headers: keyed(key) })
          .catch(() => undefined);
        backend = await lockWaiter();
        await killed(doomed.running);
      } finally {
        await holder.query('commit');
        await holder.end();
      }
      // The dead process's backend ends its transaction (rolled back) and its key's lock with it.
      await b.running.waitFor(
        async () => (await count('select count(*)::int as n from pg_stat_activity where pid = $1', [backend])) === 0,
        'the dead backend',
      );
      expect(await comments(post.id)).toBe(0);
      const retry = await b.client.post(
        `/posts/${post.id}/comments`,
        { text: 'after a crash' },
        { token: user.token, headers: keyed(key) },
      );
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      expect(await comments(post.id)).toBe(1);
    },
  );

  it(
    'replays through the other process when the process died after the commit, before the phone read the answer',
    { timeout: 60_000 },
    async () => {
      const doomed = await startApi();
      const post = await createPost(app, author);
      const user = await userAtLevel(app, 2);
      const key = randomUUID();
      const body = JSON.stringify({ text: 'answer lost' });
      // A phone on a bad network: the request leaves, the answer is never read.
      const socket = net.connect(doomed.port, '127.0.0.1');
      socket.pause();
      socket.on('error', () => undefined);
      socket.write(
        `POST /api/v1/posts/${post.id}/comments HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${user.token}\r\n` +
          `Idempotency-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      // The effect and its kept answer commit together: every look (one snapshot each) sees both or neither.
      const seen: string[] = [];
      await doomed.running.waitFor(async () => {
        const { rows } = await app.owner.query(
          `select (select count(*)::int from app.comments where post_id = $1) as comments,
                (select count(*)::int from app_private.idempotent_answers where user_id = $2) as kept`,
          [post.id, user.id],
        );
        seen.push(`${rows[0].comments}/${rows[0].kept}`);
        return rows[0].kept === 1;
      }, 'the commit');
      expect(
        seen.every((look) => look === '0/0' || look === '1/1'),
        seen.join(' '),
      ).toBe(true);
      await killed(doomed.running);
      socket.destroy();
      const stored = (await app.owner.query('select id from app.comments where post_id = $1', [post.id])).rows;
      expect(stored).toHaveLength(1);
      const retry = await b.client.post(`/posts/${post.id}/comments`, { text: 'answer lost' }, { token: user.token, headers: keyed(key) });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body.data.id).toBe(stored[0].id);
      expect(await comments(post.id)).toBe(1);
    },
  );
});
