// The declaration of per-user write limits (server/http/write-limits.ts): every write endpoint has
// one (votes and sign-in excepted), the OpenAPI document names it, WRITE_LIMITS sizes it, and the
// count is the database's, for the viewer only (app.take_write_limit, tested in SQL too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, StartupError } from '../../../config.ts';
import { allEndpoints } from '../../../server/features.ts';
import { resolveWriteLimits, writeLimitDefaults } from '../../../server/http/write-limits.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel } from '../../helpers/users.ts';

/** Writes with limits of their own, or none by contract. */
const unlimited = new Map([
  ['post /posts/{postId}/vote', 'the vote path stays as it is (contract: votes are not in the list)'],
  ['post /users/handles/availability', 'a read, with its own limit per user (30 a minute)'],
  ['post /auth/otp/request', 'limited per phone and per client address'],
  ['post /auth/otp/verify', 'limited per phone (attempts per code, codes per day)'],
  ['post /auth/idp/token', 'sign-in: the identity provider vouches for the caller'],
  ['post /auth/anonymous/session', 'limited per client address'],
  ['post /auth/session/refresh', 'rotates a single-use token: one live token per session'],
  ['post /auth/logout', 'ends sessions'],
]);

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WRITE_LIMITS: 'comments=2/60,hub_fanout=1/3600' });
});
afterAll(() => app.close());

describe('write limit declarations', () => {
  it('cover every write endpoint but the vote and sign-in', () => {
    const writes = allEndpoints.filter((e) => e.method !== 'get').map((e) => ({ key: `${e.method} ${e.path}`, limit: e.limit }));
    expect(writes.filter((w) => !w.limit && !unlimited.has(w.key)).map((w) => w.key)).toEqual([]);
    expect(writes.filter((w) => w.limit && unlimited.has(w.key)).map((w) => w.key)).toEqual([]);
  });

  it('are named in the OpenAPI document, with 429 and the hub limit of writes into hubs', async () => {
    const document = (await app.get('/openapi.json')).body;
    const posts = document.paths['/posts'].post;
    expect(posts['x-write-limits']).toEqual([
      { name: 'posts', max: writeLimitDefaults.posts.max, windowSeconds: 3600, per: 'user' },
      { name: 'hub_fanout', max: writeLimitDefaults.hub_fanout.max, windowSeconds: 3600, per: 'user and hub' },
    ]);
    expect(posts.description).toContain('Write limit: `posts`, at most 30 in any 1 hour(s) per user');
    const tooMany = posts.responses['429'].$ref
      ? document.components.responses[posts.responses['429'].$ref.split('/').at(-1)]
      : posts.responses['429'];
    expect(tooMany['x-error-codes']).toEqual(['RATE_LIMITED']);
    expect(document.paths['/posts/{postId}/vote'].post['x-write-limits']).toBeUndefined();
  });

  it('take their sizes from WRITE_LIMITS, and refuse unknown names or malformed entries at startup', () => {
    expect(resolveWriteLimits(loadConfig({ NODE_ENV: 'test', WRITE_LIMITS: 'posts=5/60' }).writeLimits).posts).toEqual({
      max: 5,
      windowSeconds: 60,
    });
    expect(() => resolveWriteLimits({ nonsense: { max: 1, windowSeconds: 1 } })).toThrow(StartupError);
    expect(() => loadConfig({ NODE_ENV: 'test', WRITE_LIMITS: 'posts=0/60' })).toThrow(StartupError);
  });
});

describe('a write limit reached', () => {
  it('answers 429 with Retry-After and writes nothing; other users are not affected', async () => {
    const author = await userAtLevel(app, 3);
    const post = await createPost(app, author);
    const commenter = await userAtLevel(app, 2);
    for (const text of ['one', 'two'])
      expect((await app.post(`/posts/${post.id}/comments`, { text }, { token: commenter.token })).status).toBe(201);
    const refused = await app.post(`/posts/${post.id}/comments`, { text: 'three' }, { token: commenter.token });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toEqual({
      code: 'RATE_LIMITED',
      message: 'Too many requests. Try again later.',
      details: { retryAfterSeconds: expect.any(Number) },
    });
    expect(refused.body.error.details.retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.error.details.retryAfterSeconds));
    const { rows } = await app.owner.query('select text from app.comments where author_id = $1 order by created_at', [commenter.id]);
    expect(rows.map((r) => r.text)).toEqual(['one', 'two']);
    expect((await app.post(`/posts/${post.id}/comments`, { text: 'other' }, { token: author.token })).status).toBe(201);
    // A limit checked before the request's shape is known good never runs: 422 stays 422.
    expect((await app.post(`/posts/${post.id}/comments`, { text: '' }, { token: commenter.token })).status).toBe(422);
  });

  it('counts writes into a hub per hub: the first hub is full, the second is not', async () => {
    const member = await userAtLevel(app, 4);
    const hubs = [(await createHub(app, member)).id, (await createHub(app, member)).id];
    const into = (hubIds: string[]) =>
      app.post('/posts', { thoughtText: 'into hubs', visibility: 'public_hub', hubIds }, { token: member.token });
    expect((await into([hubs[0] as string])).status).toBe(201);
    expect((await into(hubs)).status).toBe(429);
    expect((await into([hubs[1] as string])).status).toBe(201);
    expect((await app.owner.query('select count(*)::int as n from app.posts where author_id = $1', [member.id])).rows[0].n).toBe(2);
  });
});

describe('app.consume_write_limit in SQL', () => {
  it("counts only the viewer's own writes, raises RATE_LIMITED with the seconds in DETAIL, and refuses anonymous callers", async () => {
    const user = await userAtLevel(app, 2);
    const call = `select app.consume_write_limit('reports', 1, 60)`;
    const first = await asViewer(app, 'app_user', user.id, (c) => rowsOrError(c, call));
    expect(first).toHaveLength(1);
    await app.owner.query(`insert into app_private.sliding_limits (key, hits) values ('write:reports:' || $1, array[now()])`, [user.id]);
    const error = await asViewer(app, 'app_user', user.id, (c) =>
      c.query(call).then(
        () => null,
        (e: { message: string; detail: string }) => e,
      ),
    );
    expect(error?.message).toBe('RATE_LIMITED');
    expect(Number(error?.detail)).toBeGreaterThan(50);
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, call))).toBe('42501');
  });

  it('app.take_write_limit answers what is left for the RateLimit headers, and names itself in HINT when full', async () => {
    const user = await userAtLevel(app, 2);
    const call = `select * from app.take_write_limit('blocks', 2, 60)`;
    const counted = await asViewer(app, 'app_user', user.id, (c) => rowsOrError(c, call));
    expect(counted).toEqual([{ rate_limit: 'blocks', quota: 2, window_seconds: 60, remaining: 1, reset_seconds: 60 }]);
    await app.owner.query(`insert into app_private.sliding_limits (key, hits) values ('write:blocks:' || $1, array[now(), now()])`, [
      user.id,
    ]);
    const error = await asViewer(app, 'app_user', user.id, (c) =>
      c.query(call).then(
        () => null,
        (e: { message: string; detail: string; hint: string }) => e,
      ),
    );
    expect(error?.message).toBe('RATE_LIMITED');
    expect(JSON.parse(error?.hint ?? '{}')).toEqual({ rateLimit: 'blocks', quota: 2, windowSeconds: 60 });
  });
});
