// Inputs that once answered 500 (issue 9, item 5) now answer their catalogued 4xx in the envelope:
// paths that are not valid percent-encoding, NUL characters in any text, forged cursors, and URLs
// beyond the header limit. Each request changes nothing.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import type { ApiResponse } from '../../helpers/client.ts';
import { createHub } from '../../helpers/hubs.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import type { TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let user: TestUser;
let hubId: string;
let postId: string;
beforeAll(async () => {
  [app, user] = await appWithUsers(4);
  hubId = (await createHub(app, user)).id;
  postId = (await createPost(app, user, slider)).id;
});
afterAll(() => app.close());

function expectError(response: ApiResponse, status: number, code: string): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body).toMatchObject({ success: false, error: { code, details: expect.any(Object) } });
  expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
}

describe('paths that are not valid percent-encoding', () => {
  it('answer 400 MALFORMED_REQUEST on every kind of path parameter', async () => {
    for (const [method, path] of [
      ['POST', '/users/%zz/follow'],
      ['GET', '/users/by-username/%E0%A4%A'],
      ['POST', `/hubs/${hubId}/members/%/remove`],
      ['GET', '/hub-invite-links/%C0'],
      ['DELETE', '/posts/%zz'],
    ] as const) {
      expectError(await app.request(method, path, { token: user.token }), 400, 'MALFORMED_REQUEST');
    }
  });
});

describe('NUL characters', () => {
  const nul = 'a\u0000b';
  const cases: [string, string, Record<string, unknown>, string][] = [
    ['PUT', '/users/me/onboarding/profile-basics', { fullName: nul, username: 'nul_person', acceptTerms: true }, 'fullName'],
    ['PUT', '/users/me/onboarding/profile-basics', { fullName: 'Name', username: nul, acceptTerms: true }, 'username'],
    ['PATCH', '/users/me/profile', { bio: nul }, 'bio'],
    ['PATCH', '/users/me/hub-profile', { displayName: nul }, 'displayName'],
    ['POST', '/users/handles/availability', { handle: nul }, 'handle'],
    ['POST', '/hubs', { name: nul }, 'name'],
    ['PATCH', '/hubs/{hubId}', { description: nul }, 'description'],
    ['PATCH', '/hubs/{hubId}/link', { customLink: nul }, 'customLink'],
    ['POST', '/posts', { thoughtText: nul, visibility: 'public' }, 'thoughtText'],
    ['POST', '/posts', { ...slider, slider: { leftLabel: nul, rightLabel: 'R' }, visibility: 'public' }, 'slider.leftLabel'],
    ['POST', '/posts/{postId}/comments', { text: nul }, 'text'],
    ['POST', '/reports/posts/{postId}', { reason: 'other', details: nul }, 'details'],
    ['POST', '/auth/otp/request', { phoneCountryCode: '+1', phoneNumber: `555${nul}` }, 'phoneNumber'],
    ['POST', '/auth/anonymous/session', { deviceId: `device${nul}` }, 'deviceId'],
    ['POST', '/auth/idp/token', { idToken: nul }, 'idToken'],
  ];

  it('in any body text field answer 422 VALIDATION_FAILED naming the field, and change nothing', async () => {
    const before = await app.owner.query(
      'select (select count(*) from app.posts) + (select count(*) from app.hubs) + (select count(*) from app.comments) as n',
    );
    for (const [method, path, body, field] of cases) {
      const response = await app.request(method, path.replace('{hubId}', hubId).replace('{postId}', postId), { token: user.token, body });
      expectError(response, 422, 'VALIDATION_FAILED');
      expect(response.body.error.details.fields, `${method} ${path}`).toHaveProperty([field], 'Must not contain NUL characters');
    }
    const after = await app.owner.query(
      'select (select count(*) from app.posts) + (select count(*) from app.hubs) + (select count(*) from app.comments) as n',
    );
    expect(after.rows[0].n).toBe(before.rows[0].n);
    const profile = await app.get('/users/me/profile', { token: user.token });
    expect(profile.body.data.fullName).not.toContain('\u0000');
  });

  it('in a query or a path parameter answer 422 too', async () => {
    const search = await app.get('/search/users?q=a%00b', { token: user.token });
    expectError(search, 422, 'VALIDATION_FAILED');
    expect(search.body.error.details.fields).toEqual({ q: 'Must not contain NUL characters' });
    expectError(await app.get('/search/hubs?q=%00', { token: user.token }), 422, 'VALIDATION_FAILED');
    const byName = await app.get('/users/by-username/a%00b', { token: user.token });
    expectError(byName, 422, 'VALIDATION_FAILED');
    expect(byName.body.error.details.fields).toEqual({ username: 'Must not contain NUL characters' });
    expectError(await app.get('/hub-invite-links/%00', { token: user.token }), 422, 'VALIDATION_FAILED');
  });
});

describe('forged cursors', () => {
  const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const forged = [
    'WyJ4IiwieSJd', // ["x","y"]
    forge([1.5, '00000000-0000-4000-8000-000000000000']),
    forge([9e300, '00000000-0000-4000-8000-000000000000']),
    forge(['1', 'not-a-uuid']),
    forge(['a\u0000b', '00000000-0000-4000-8000-000000000000']),
    forge([1, '00000000-0000-4000-8000-000000000000', 'extra']),
    forge([0.5]),
    forge([2 ** 53, '00000000-0000-4000-8000-000000000000']),
    forge({}),
  ];
  const lists = () => [
    `/users/${user.id}/followers`,
    `/users/${user.id}/following`,
    '/users/me/hubs',
    '/users/me/saved-posts',
    `/posts/${postId}/frames`,
    `/posts/${postId}/comments`,
    '/search/users?q=a',
    '/search/hubs?q=a',
    '/notifications',
    `/hubs/${hubId}/members`,
    `/hubs/${hubId}/admins`,
    `/hubs/${hubId}/invitations`,
    `/hubs/${hubId}/join-requests`,
  ];

  it('answer 422 on every list endpoint: the position must have the shape that endpoint issues', async () => {
    for (const path of lists()) {
      for (const cursor of forged) {
        const response = await app.get(`${path}${path.includes('?') ? '&' : '?'}cursor=${cursor}`, { token: user.token });
        expect(response.status, `${path} ${cursor}`).toBe(422);
        expectError(response, 422, 'VALIDATION_FAILED');
        expect(response.body.error.details.fields, `${path} ${cursor}`).toEqual({ cursor: 'Invalid cursor' });
      }
    }
  });

  it('while cursors the server issued keep working', async () => {
    for (const text of ['first', 'second']) await app.post(`/posts/${postId}/comments`, { text }, { token: user.token });
    const first = await app.get(`/posts/${postId}/comments?limit=1`, { token: user.token });
    expect(first.body.data.nextCursor).toEqual(expect.any(String));
    const second = await app.get(`/posts/${postId}/comments?limit=1&cursor=${first.body.data.nextCursor}`, { token: user.token });
    expect(second.status).toBe(200);
    expect(second.body.data.items.map((c: { text: string }) => c.text)).toEqual(['second']);
  });
});

describe('requests beyond the header limit', () => {
  /** A raw request: fetch refuses nothing here, but the answer must come on the same socket. */
  function rawGet(
    path: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
    return new Promise((resolve, reject) => {
      const request = httpRequest(`${app.url}${path}`, { method: 'GET', headers }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      });
      request.on('error', reject);
      request.end();
    });
  }

  it('answer a URL over 16 KiB with 431 HEADERS_TOO_LARGE in the envelope, with X-Request-Id', async () => {
    const response = await rawGet(`/api/v1/search/users?q=${'x'.repeat(17_000)}`);
    expect(response.status).toBe(431);
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(response.body)).toEqual({
      success: false,
      error: { code: 'HEADERS_TOO_LARGE', message: 'Request URL or headers are too large.', details: {} },
    });
  });

  it('answer oversized headers the same way, and a URL just under the limit normally', async () => {
    const headers = await rawGet('/api/v1/auth/login-config', { 'x-padding': 'y'.repeat(20_000) });
    expect(headers.status).toBe(431);
    expect(JSON.parse(headers.body).error.code).toBe('HEADERS_TOO_LARGE');
    const fits = await rawGet(`/api/v1/auth/login-config?pad=${'x'.repeat(8_000)}`);
    expect(fits.status).toBe(200);
  });
});
