// Data export (contract 13, migrations/frozen/0263, worker/tasks/accounts/export-account.ts): 202 and a pending
// export, one per 24 hours (429, also when racing itself), the worker's archive in the object store
// behind a 15-minute signed URL, another user's or an unknown id 404 EXPORT_NOT_FOUND. The archive
// holds the user's data and never a vote position, a push token or another user's phone number.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { userAtLevel } from '../../helpers/users.ts';
import { hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(() => app.close());

const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];

describe('POST /users/me/exports and GET /users/me/exports/{exportId}', () => {
  it('prepares one archive of the user’s data behind a 15-minute URL, never a vote position, token or other phone', async () => {
    const [user, friend] = await Promise.all([userAtLevel(app, 4), userAtLevel(app, 4)]);
    const hub = await hubWithMembers(app, friend, user);
    const post = await createPost(app, user, { thoughtText: 'exported thought' });
    const friendPost = await createPost(app, friend, slider);
    expect((await vote(app, user, friendPost.id, 'strong_right')).status).toBe(201);
    expect((await app.post(`/posts/${friendPost.id}/comments`, { text: 'exported comment' }, { token: user.token })).status).toBe(201);
    expect((await app.post(`/users/${friend.id}/follow`, undefined, { token: user.token })).status).toBe(200);
    expect((await app.post(`/posts/${friendPost.id}/save`, undefined, { token: user.token })).status).toBe(200);
    const deviceToken = `export-device-token-${Math.random().toString(36).slice(2)}XyZ9kQ7w`;
    expect(
      (await app.post('/users/me/push-devices', { provider: 'fcm', token: deviceToken, platform: 'ios' }, { token: user.token })).status,
    ).toBe(201);

    const requested = await app.post('/users/me/exports', undefined, { token: user.token });
    expect(requested.status).toBe(202);
    expect(requested.body.data).toEqual({ exportId: expect.any(String), status: 'pending' });
    const { exportId } = requested.body.data;
    expect((await app.get(`/users/me/exports/${exportId}`, { token: user.token })).body.data).toEqual({ exportId, status: 'pending' });

    const again = await app.post('/users/me/exports', undefined, { token: user.token });
    expect(again.status).toBe(429);
    expect(again.body.error.code).toBe('RATE_LIMITED');
    // One export per 24 hours: the wait is what is left of the day since the request.
    expect(again.body.error.details.retryAfterSeconds).toBeGreaterThan(86_000);
    expect(again.body.error.details.retryAfterSeconds).toBeLessThanOrEqual(86_400);
    expect(again.headers.get('retry-after')).toBe(String(again.body.error.details.retryAfterSeconds));

    await app.runJobs();
    const ready = await app.get(`/users/me/exports/${exportId}`, { token: user.token });
    expect(ready.status).toBe(200);
    expect(ready.body.data).toEqual({ exportId, status: 'ready', url: expect.any(String), expiresAt: expect.any(String) });
    expect(Math.abs(Date.parse(ready.body.data.expiresAt) - (Date.now() + 15 * 60_000))).toBeLessThan(60_000);
    expect(new URL(ready.body.data.url).searchParams.get('X-Amz-Expires')).toBe('900');

    const download = await fetch(ready.body.data.url);
    expect(download.status).toBe(200);
    const text = await download.text();
    const archive = JSON.parse(text);
    expect(archive.profile).toMatchObject({ id: user.id, username: user.username, phoneNumber: user.phone?.e164 });
    expect(archive.posts.map((p: { id: string; thoughtText: string }) => [p.id, p.thoughtText])).toEqual([[post.id, 'exported thought']]);
    expect(archive.comments.map((c: { text: string }) => c.text)).toEqual(['exported comment']);
    expect(archive.following).toEqual([expect.objectContaining({ userId: friend.id, username: friend.username })]);
    expect(archive.savedPosts).toEqual([expect.objectContaining({ postId: friendPost.id })]);
    expect(archive.hubMemberships).toEqual([expect.objectContaining({ hubId: hub.id, role: 'member' })]);
    expect(archive.pushDevices).toEqual([expect.objectContaining({ provider: 'fcm', platform: 'ios' })]);
    expect(archive.votes).toEqual([{ postId: friendPost.id, votedAt: expect.any(String) }]);
    // Never a position, a token, or the friend's phone number.
    for (const position of positions) expect(text).not.toMatch(new RegExp(`"${position}"`));
    expect(text).not.toMatch(/position/i);
    expect(text).not.toContain(deviceToken);
    expect(text).not.toContain(deviceToken.slice(-8));
    expect(text).not.toContain(friend.phone?.e164 as string);

    // Someone else's export, an unknown id, a malformed id: 404 EXPORT_NOT_FOUND.
    for (const [token, id] of [
      [friend.token, exportId],
      [user.token, '00000000-0000-4000-8000-000000000000'],
      [user.token, 'nope'],
    ] as const) {
      const response = await app.get(`/users/me/exports/${id}`, { token });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('EXPORT_NOT_FOUND');
    }
  });

  it('answers one of concurrent requests 202 and the others 429, and needs profile basics', async () => {
    const user = await userAtLevel(app, 2);
    const answers = await Promise.all(Array.from({ length: 4 }, () => app.post('/users/me/exports', undefined, { token: user.token })));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 429, 429, 429]);
    expect((await app.owner.query('select count(*)::int as n from app_private.data_exports where user_id = $1', [user.id])).rows[0].n).toBe(
      1,
    );

    const newcomer = await userAtLevel(app, 1);
    const refused = await app.post('/users/me/exports', undefined, { token: newcomer.token });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('PROFILE_BASICS_REQUIRED');
    expect((await app.post('/users/me/exports')).status).toBe(401);
  });
});
