// Every API transaction runs under statement_timeout and lock_timeout (API_STATEMENT_TIMEOUT_MS,
// API_LOCK_TIMEOUT_MS), set in the transaction itself: a request that waits on a lock held by
// another connection, or whose statement runs too long, answers 503 SERVICE_UNAVAILABLE with
// Retry-After, logs one line, and its connection goes back to the pool healthy.
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../logger.ts';
import { createApp } from '../../../server/app.ts';
import { createServices } from '../../../server/services.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createClient, type Client } from '../../helpers/client.ts';
import { createPost } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let client: Client;
let author: TestUser;
let close: () => void;
const logged: { level: number; msg: string; bound?: string; route?: string }[] = [];
/** Connections the API pool dropped (an unhealthy connection is removed, never reused). */
let removed = 0;

beforeAll(async () => {
  app = await startTestApp({ API_STATEMENT_TIMEOUT_MS: '1000', API_LOCK_TIMEOUT_MS: '300' });
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(JSON.parse(String(chunk)));
      done();
    },
  });
  // The same application and pools, logging into memory.
  const services = await createServices(app.config, createLogger('info', sink), app.pools, app.storage);
  const server = createApp(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  client = createClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  close = () => server.close();
  author = await userAtLevel(app, 4);
  app.pools.api.on('remove', () => (removed += 1));
});
afterAll(async () => {
  close();
  await app.close();
});

const boundLines = () => logged.filter((line) => line.bound !== undefined);

describe('the bounds of a request transaction', () => {
  it('are set in the transaction from the configuration', () => {
    expect(app.config.apiTimeouts).toEqual({ statementTimeoutMs: 1000, lockTimeoutMs: 300 });
  });

  it('a request waiting on a lock another connection holds answers 503 with Retry-After after lock_timeout', async () => {
    const post = await createPost(app, author);
    const holder = await app.owner.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table app.posts in access exclusive mode');
      const started = Date.now();
      const response = await client.get(`/posts/${post.id}`, { token: author.token });
      expect(response.status).toBe(503);
      expect(response.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(response.headers.get('retry-after')).toBe('1');
      // Stopped by the lock bound (300 ms), well before the statement bound would have.
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await holder.query('rollback');
      holder.release();
    }
    expect(boundLines()).toEqual([expect.objectContaining({ level: 40, bound: 'lock_timeout', route: '/api/v1/posts/{postId}' })]);
    expect((await client.get(`/posts/${post.id}`, { token: author.token })).status).toBe(200);
  });

  it('a statement that runs longer than statement_timeout answers 503 with Retry-After and writes nothing', async () => {
    const post = await createPost(app, author);
    // A comment's insert that takes 3 s (this test's database only).
    await app.owner.query(`
      create function app_private.test_slow_insert() returns trigger language plpgsql as $$ begin perform pg_sleep(3); return new; end $$;
      create trigger test_slow_insert before insert on app.comments for each row execute function app_private.test_slow_insert();`);
    try {
      const response = await client.post(`/posts/${post.id}/comments`, { text: 'slow' }, { token: author.token });
      expect(response.status).toBe(503);
      expect(response.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(response.headers.get('retry-after')).toBe('1');
    } finally {
      await app.owner.query('drop trigger test_slow_insert on app.comments; drop function app_private.test_slow_insert()');
    }
    expect(boundLines().at(-1)).toEqual(
      expect.objectContaining({ level: 40, bound: 'statement_timeout', route: '/api/v1/posts/{postId}/comments' }),
    );
    expect(boundLines()).toHaveLength(2);
    const { rows } = await app.owner.query('select count(*)::int as n from app.comments where post_id = $1', [post.id]);
    expect(rows[0].n).toBe(0);
    expect((await client.post(`/posts/${post.id}/comments`, { text: 'fast' }, { token: author.token })).status).toBe(201);
  });

  it('leaves the connections healthy: none dropped, and every one of them answers again', async () => {
    expect(removed).toBe(0);
    // More requests at once than the pool has connections: each connection serves again.
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => client.get('/users/me/onboarding/status', { token: author.token })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array.from({ length: 30 }, () => 200));
    expect(removed).toBe(0);
  });
});
