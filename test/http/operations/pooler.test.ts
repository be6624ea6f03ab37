// The API behind a real PgBouncer (Debian's, transaction mode; test/helpers/pgbouncer.ts), as
// DATABASE_POOLER_URL makes it: the API and GraphQL pools go through the pooler, which keeps
// nothing of a session from one transaction to the next, while the live delivery stays direct.
// A journey through it works; the pooler down answers 503 with Retry-After, and the first request
// after it is back succeeds. (Other HTTP test files run through a pooler too: vitest.config.ts.)
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleUrl } from '../../../db/roles.ts';
import { loadConfig, StartupError } from '../../../config.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { internalGraphql } from '../../helpers/admin.ts';
import { createHub } from '../../helpers/hubs.ts';
import { startPgBouncer } from '../../helpers/pgbouncer.ts';
import { openStream } from '../../helpers/notifications.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import type { TestUser } from '../../helpers/users.ts';
import { usersAtLevels } from '../../helpers/worlds.ts';

const adminToken = 'pooler-test-admin-token';
let app: TestApp;
let author: TestUser;
let reader: TestUser;

beforeAll(async () => {
  app = await startTestApp({ ADMIN_API_TOKEN: adminToken }, {}, { pooler: true });
  [author, reader] = await usersAtLevels(app, 4, 4);
  // Both GraphQL schemas built (introspected through the pooler) before the clock of a test starts.
  await app.services.graphql.ready();
});
afterAll(() => app.close());

describe('DATABASE_POOLER_URL', () => {
  it('needs DATABASE_URL and takes no credentials of its own', () => {
    const base = { NODE_ENV: 'test', JWT_SECRET: 'x', BALLOT_KEY: `k:${'ab'.repeat(32)}` };
    expect(() => loadConfig({ ...base, DATABASE_POOLER_URL: 'postgres://127.0.0.1:6432/opinion' })).toThrow(StartupError);
    expect(() =>
      loadConfig({ ...base, DATABASE_URL: 'postgres://o:p@db:5432/opinion', DATABASE_POOLER_URL: 'postgres://u:p@127.0.0.1:6432/opinion' }),
    ).toThrow(/takes no user or password/);
    const config = loadConfig({
      ...base,
      DATABASE_URL: 'postgres://o:p@db:5432/opinion',
      DATABASE_POOLER_URL: 'postgres://pooler:6432/opinion',
    });
    expect(config.databasePoolerUrl).toBe('postgres://pooler:6432/opinion');
  });

  it('routes the API and GraphQL pools through the pooler, as authenticator, and the worker pool direct', () => {
    const port = (pool: { options: { connectionString?: string } }) => new URL(pool.options.connectionString as string).port;
    expect(port(app.pools.api)).toBe(String(app.pooler?.port));
    expect(port(app.pools.graphql)).toBe(String(app.pooler?.port));
    expect(port(app.pools.worker)).toBe(new URL(app.ownerUrl).port);
    expect(new URL(app.pools.api.options.connectionString as string).username).toBe('authenticator');
    expect(app.pools.pooled).toBe(true);
  });
});

describe("the compose file's pooler configuration", () => {
  it('logs the API in with the password it looks up as the owner (auth_query, SCRAM), as deploy/pgbouncer/pgbouncer.ini does', async () => {
    const lookedUp = await startPgBouncer(app.ownerUrl, { authQuery: true, poolSize: 2 });
    const client = new pg.Client({ connectionString: roleUrl(app.ownerUrl, 'authenticator', lookedUp.url) });
    try {
      await client.connect();
      const { rows } = await client.query<{ role: string }>('select current_user::text as role');
      expect(rows).toEqual([{ role: 'authenticator' }]);
      const wrong = new pg.Client({
        connectionString: roleUrl(app.ownerUrl, 'authenticator', lookedUp.url).replace(/:[^:@/]+@/, ':wrong@'),
      });
      await expect(wrong.connect()).rejects.toThrow();
      await wrong.end().catch(() => undefined);
    } finally {
      await client.end().catch(() => undefined);
      await lookedUp.close();
    }
  });
});

describe('a journey through the pooler', () => {
  it('posts, votes, comments, reads the feed, notifications (list and stream), uploads, hubs and internal GraphQL', async () => {
    const stream = await openStream(app.url, author.token);
    try {
      expect(stream.status).toBe(200);
      const post = await createPost(app, author, slider);
      expect((await vote(app, reader, post.id)).status).toBe(201);
      expect((await app.post(`/posts/${post.id}/comments`, { text: 'Through the pooler' }, { token: reader.token })).status).toBe(201);
      const feed = await app.get(`/users/${author.id}/feed`, { token: reader.token });
      expect(feed.status).toBe(200);
      expect(feed.body.data.items.map((item: { id: string }) => item.id)).toContain(post.id);
      const events = await stream.waitForEvents(2);
      expect(events.map((event) => event.data.type).sort()).toEqual(['post_commented', 'post_voted']);
    } finally {
      stream.close();
    }
    const notifications = await app.get('/notifications', { token: author.token });
    expect(notifications.status).toBe(200);
    expect(notifications.body.data.items.length).toBeGreaterThanOrEqual(2);
    // A hub with its photo uploaded (presigned PUT, then the asset completed).
    const hub = await createHub(app, author);
    const hubs = await app.get('/users/me/hubs', { token: author.token });
    expect(hubs.status).toBe(200);
    expect(JSON.stringify(hubs.body.data)).toContain(hub.id);
    const admin = await internalGraphql(app.url, '{ allUsers { totalCount } }', adminToken);
    expect(admin.errors).toBeUndefined();
    expect(admin.data.allUsers.totalCount).toBeGreaterThanOrEqual(2);
    // The user schema: the token's check, then the read as that user, twice (PostGraphile prepares nothing behind a pooler).
    for (let i = 0; i < 2; i++) {
      const mine = await internalGraphql(app.url, '{ allSessions { nodes { userId } } }', author.token);
      expect(mine.errors).toBeUndefined();
      expect(mine.data.allSessions.nodes).toContainEqual({ userId: author.id });
    }
  });
});

describe('the pooler down and back', () => {
  it('answers 503 with Retry-After while it is down, and the first request after it is back succeeds', async () => {
    const pooler = app.pooler!;
    const post = await createPost(app, author, slider);
    expect((await app.get('/users/me/onboarding/status', { token: reader.token })).status).toBe(200);
    await pooler.stop();
    try {
      const down = [
        await app.get('/users/me/onboarding/status', { token: reader.token }),
        await app.get(`/posts/${post.id}`, { token: reader.token }),
        await vote(app, reader, post.id),
        await app.get('/posts', { token: reader.token }),
      ];
      for (const response of down) {
        expect(response.status).toBe(503);
        expect(response.body.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      }
    } finally {
      await pooler.start();
    }
    expect((await app.get('/users/me/onboarding/status', { token: reader.token })).status).toBe(200);
    expect((await vote(app, reader, post.id)).status).toBe(201);
  });

  it('under load: a restart fails no read (each is retried on a fresh connection), and requests started after its return succeed', async () => {
    const pooler = app.pooler!;
    const statuses = new Map<number, number>();
    let restartedAt = Number.POSITIVE_INFINITY;
    const failuresAfterRestart: number[] = [];
    let running = true;
    const load = Array.from({ length: 8 }, async () => {
      while (running) {
        const startedAt = Date.now();
        const response = await app.get('/users/me/onboarding/status', { token: reader.token });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (startedAt > restartedAt && response.status !== 200) failuresAfterRestart.push(response.status);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await pooler.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await pooler.start();
    restartedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 500));
    running = false;
    await Promise.all(load);
    // A read that met the restart was retried by the server within its bound (server/http/failover-retry.ts): never a 500, and no 503 either.
    expect([...statuses.keys()].sort()).toEqual([200]);
    expect(failuresAfterRestart).toEqual([]);
  });
});
