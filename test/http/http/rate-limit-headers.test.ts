// The RateLimit headers (server/http/rate-limit-headers.ts): every answer in which a per-user or
// per-address limit counted the request names the limit (RateLimit-Policy: q and w) and what is
// left (RateLimit: r and t), as the limit's own statement answered; a 429 carries r=0 and t equal
// to Retry-After. Write limits, the handle check, the per-address sign-in limits and the export.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { type ApiResponse } from '../../helpers/client.ts';
import { createHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { userAtLevel } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WRITE_LIMITS: 'comments=3/3600,posts=5/3600,hub_fanout=2/3600' });
});
afterAll(() => app.close());

/** The RateLimit header's items, by name: { r, t }. */
function remaining(response: ApiResponse): Record<string, { r: number; t: number }> {
  const header = response.headers.get('ratelimit') ?? '';
  return Object.fromEntries(
    header
      .split(', ')
      .filter(Boolean)
      .map((item) => {
        const match = /^"([a-z_]+)";r=(\d+);t=(\d+)$/.exec(item);
        expect(match, item).not.toBeNull();
        return [match?.[1], { r: Number(match?.[2]), t: Number(match?.[3]) }];
      }),
  );
}

describe('a write limit', () => {
  it('counts down on every answer to a 429 with r=0 and t = Retry-After', async () => {
    const author = await userAtLevel(app, 3);
    const post = await createPost(app, author);
    const commenter = await userAtLevel(app, 2);
    const comment = (text: string) => app.post(`/posts/${post.id}/comments`, { text }, { token: commenter.token });

    const seen = [];
    for (const text of ['one', 'two', 'three']) {
      const response = await comment(text);
      expect(response.status).toBe(201);
      expect(response.headers.get('ratelimit-policy')).toBe('"comments";q=3;w=3600');
      seen.push(remaining(response).comments);
    }
    expect(seen.map((s) => s?.r)).toEqual([2, 1, 0]);
    for (const s of seen) {
      expect(s?.t).toBeGreaterThan(0);
      expect(s?.t).toBeLessThanOrEqual(3600);
    }

    const refused = await comment('four');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"comments";q=3;w=3600');
    expect(remaining(refused).comments).toEqual({ r: 0, t: refused.body.error.details.retryAfterSeconds });
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.error.details.retryAfterSeconds));
    // Another user's count is their own.
    expect(remaining(await app.post(`/posts/${post.id}/comments`, { text: 'mine' }, { token: author.token })).comments?.r).toBe(2);
  });

  it('does not count a write that failed after the limit counted it, and says so', async () => {
    const author = await userAtLevel(app, 3);
    const post = await createPost(app, author);
    const commenter = await userAtLevel(app, 2);
    const first = await app.post(`/posts/${post.id}/comments`, { text: 'one' }, { token: commenter.token });
    expect(remaining(first).comments?.r).toBe(2);
    // An unknown parent comment: the handler refuses after the limit's statement ran, and the
    // transaction rolls back.
    const failed = await app.post(
      `/posts/${post.id}/comments`,
      { text: 'reply', parentCommentId: '00000000-0000-4000-8000-000000000000' },
      { token: commenter.token },
    );
    expect(failed.status).toBe(404);
    expect(failed.body.error.code).toBe('COMMENT_NOT_FOUND');
    expect(remaining(failed).comments?.r).toBe(2);
    expect(remaining(await app.post(`/posts/${post.id}/comments`, { text: 'two' }, { token: commenter.token })).comments?.r).toBe(1);
  });

  it('lists the per-hub limit beside the per-user one', async () => {
    const member = await userAtLevel(app, 4);
    const hub = await createHub(app, member);
    const into = () =>
      app.post('/posts', { thoughtText: 'into a hub', visibility: 'public_hub', hubIds: [hub.id] }, { token: member.token });
    const first = await into();
    expect(first.status).toBe(201);
    expect(first.headers.get('ratelimit-policy')).toBe('"posts";q=5;w=3600, "hub_fanout";q=2;w=3600');
    expect(remaining(first)).toEqual({ posts: { r: 4, t: 3600 }, hub_fanout: { r: 1, t: 3600 } });
    expect(remaining(await into())).toEqual({ posts: { r: 3, t: expect.any(Number) }, hub_fanout: { r: 0, t: expect.any(Number) } });
    const refused = await into();
    expect(refused.status).toBe(429);
    expect(remaining(refused).hub_fanout).toEqual({ r: 0, t: refused.body.error.details.retryAfterSeconds });
    expect(refused.headers.get('ratelimit-policy')).toContain('"hub_fanout";q=2;w=3600');
  });

  it('is not on answers refused before the limit counted, nor on operations no limit counts', async () => {
    const user = await userAtLevel(app, 2);
    const post = await createPost(app, await userAtLevel(app, 3));
    const invalid = await app.post(`/posts/${post.id}/comments`, { text: '' }, { token: user.token });
    expect(invalid.status).toBe(422);
    expect(invalid.headers.get('ratelimit')).toBeNull();
    const read = await app.get('/users/me/profile', { token: user.token });
    expect(read.headers.get('ratelimit')).toBeNull();
    expect(read.headers.get('ratelimit-policy')).toBeNull();
  });
});

describe('a per-address limit', () => {
  it('counts an address down from 30 to a 429 with r=0', async () => {
    const address = '2001:db8:ffff:1::1';
    const session = (n: number, from = address) =>
      app.post('/auth/anonymous/session', { deviceId: `ratelimit-device-${n}` }, { headers: { 'x-forwarded-for': from } });
    const left = [];
    for (let n = 0; n < 30; n += 1) {
      const response = await session(n);
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-policy')).toBe('"anonymous_session";q=30;w=300');
      left.push(remaining(response).anonymous_session?.r);
    }
    expect(left).toEqual(Array.from({ length: 30 }, (_, n) => 29 - n));
    const refused = await session(30);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"anonymous_session";q=30;w=300');
    expect(remaining(refused).anonymous_session).toEqual({ r: 0, t: refused.body.error.details.retryAfterSeconds });
    expect(refused.body.error.details.retryAfterSeconds).toBeLessThanOrEqual(300);
    // Another address is counted on its own.
    expect(remaining(await session(31, '2001:db8:ffff:3::1')).anonymous_session?.r).toBe(29);
  });

  it('reports the address on a code request, not the per-phone limits', async () => {
    const response = await app.post(
      '/auth/otp/request',
      { phoneCountryCode: '+1', phoneNumber: '5550000490' },
      { headers: { 'x-forwarded-for': '2001:db8:ffff:2::1' } },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('ratelimit-policy')).toBe('"otp_request";q=30;w=300');
    expect(remaining(response).otp_request).toEqual({ r: 29, t: 300 });
    // A second code for the phone within 60 s is refused by the phone's limit: the address's count stands.
    const again = await app.post(
      '/auth/otp/request',
      { phoneCountryCode: '+1', phoneNumber: '5550000490' },
      { headers: { 'x-forwarded-for': '2001:db8:ffff:2::1' } },
    );
    expect(again.status).toBe(429);
    expect(remaining(again).otp_request?.r).toBe(28);
  });
});

describe('other per-user limits', () => {
  it('the handle check counts down per user', async () => {
    const user = await userAtLevel(app, 2);
    const first = await app.post('/users/handles/availability', { handle: 'someone_new' }, { token: user.token });
    const second = await app.post('/users/handles/availability', { handle: 'someone_new' }, { token: user.token });
    expect(first.headers.get('ratelimit-policy')).toBe('"handle_availability";q=30;w=60');
    expect([remaining(first).handle_availability?.r, remaining(second).handle_availability?.r]).toEqual([29, 28]);
  });

  it('the export allows one per 24 hours, beside the write limit', async () => {
    const user = await userAtLevel(app, 2);
    const first = await app.post('/users/me/exports', {}, { token: user.token });
    expect(first.status).toBe(202);
    expect(first.headers.get('ratelimit-policy')).toMatch(/^"other_writes";q=\d+;w=\d+, "data_exports";q=1;w=86400$/);
    expect(remaining(first).data_exports).toEqual({ r: 0, t: 86400 });
    const refused = await app.post('/users/me/exports', {}, { token: user.token });
    expect(refused.status).toBe(429);
    expect(remaining(refused).data_exports).toEqual({ r: 0, t: refused.body.error.details.retryAfterSeconds });
    expect(refused.body.error.details.retryAfterSeconds).toBeGreaterThan(86000);
  });
});

describe('the OpenAPI document', () => {
  it('documents the headers on the operations limits count, and on their 429', async () => {
    const document = (await app.get('/openapi.json')).body;
    const resolve = (response: { $ref?: string }) =>
      response.$ref ? document.components.responses[response.$ref.split('/').at(-1) as string] : response;
    for (const [path, method, status, names] of [
      ['/posts/{postId}/comments', 'post', '201', ['comments']],
      ['/posts', 'post', '201', ['posts', 'hub_fanout']],
      ['/auth/anonymous/session', 'post', '200', ['anonymous_session']],
      ['/auth/otp/request', 'post', '200', ['otp_request']],
      ['/users/handles/availability', 'post', '200', ['handle_availability']],
      ['/users/me/exports', 'post', '202', ['other_writes', 'data_exports']],
    ] as const) {
      const operation = document.paths[path][method];
      expect(operation['x-rate-limits'], path).toEqual(names);
      expect(Object.keys(operation.responses[status].headers), path).toEqual(expect.arrayContaining(['RateLimit-Policy', 'RateLimit']));
      expect(Object.keys(resolve(operation.responses['429']).headers), path).toEqual(
        expect.arrayContaining(['RateLimit-Policy', 'RateLimit', 'Retry-After']),
      );
    }
    expect(document.paths['/users/me/profile'].get.responses['200'].headers.RateLimit).toBeUndefined();
    expect(document.components.headers['RateLimit-Policy'].description).toContain('q=');
  });
});
