// Account deletion (contract 13, migrations/frozen/0261): POST /users/me/deletion hides the account from
// everyone at once (profile, posts, reposts, comments, follows and counts, hub member lists, search,
// discussion authorship), signs it out and frees its handle; signing in again within 30 days
// restores all of it. Every list and count the user was in is read before, during and after, and
// the counter reconciliation checks stay empty throughout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TestHub } from '../../helpers/hubs.ts';
import { idpClaims, startTestIdp, type TestIdp } from '../../helpers/idp.ts';
import { createPost } from '../../helpers/posts.ts';
import { anonymousUser, completeBasics, nextHandle, userAtLevel, verifyPhone, type TestUser } from '../../helpers/users.ts';
import { hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let idp: TestIdp;
beforeAll(async () => {
  idp = await startTestIdp();
  app = await startTestApp({ IDP_JWKS_URL: idp.jwksUrl });
}, 60_000);
afterAll(async () => {
  await app.close();
  await idp.close();
});

const projectId = 'opinion-test';

async function noDrift(): Promise<void> {
  expect((await app.owner.query('select * from app_private.counter_drift()')).rows).toEqual([]);
  expect((await app.owner.query('select * from app_private.unread_counter_drift()')).rows).toEqual([]);
}

/** Everything a friend of `user` can see of them, as one object to compare before and after. */
async function seenBy(viewer: TestUser, user: TestUser & { username: string }, world: World) {
  const profile = await app.get(`/users/by-username/${user.username}`, { token: viewer.token });
  const viewerProfile = (await app.get('/users/me/profile', { token: viewer.token })).body.data;
  const post = await app.get(`/posts/${world.postId}`, { token: viewer.token });
  const repost = await app.get(`/posts/${world.repostId}`, { token: viewer.token });
  const friendPost = (await app.get(`/posts/${world.friendPostId}`, { token: viewer.token })).body.data;
  const comments = (await app.get(`/posts/${world.friendPostId}/comments`, { token: viewer.token })).body.data.items;
  const followers = (await app.get(`/users/${viewer.id}/followers`, { token: viewer.token })).body.data.items;
  const members = (await app.get(`/hubs/${world.hub.id}/members`, { token: viewer.token })).body.data.items;
  const hub = (await app.get(`/hubs/${world.hub.id}`, { token: viewer.token })).body.data;
  const messages = (await app.get(`/hubs/${world.hub.id}/discussions/${world.discussionId}/messages`, { token: viewer.token })).body.data
    .items;
  const search = (await app.get(`/search/users?q=${user.username}`, { token: viewer.token })).body.data.items;
  const home = (await app.get('/posts?limit=50', { token: viewer.token })).body.data.items;
  const hubs = (await app.get(`/search/hubs?q=${encodeURIComponent(hub.name)}&limit=50`, { token: viewer.token })).body.data.items;
  return {
    profile: profile.status,
    profileError: profile.body.error?.code ?? null,
    post: post.status,
    repost: repost.status,
    friendCommentCount: friendPost.stats?.commentCount ?? friendPost.commentCount,
    friendRepostCount: friendPost.stats?.repostCount ?? friendPost.repostCount,
    comments: comments.filter((c: { author?: { id: string } }) => c.author?.id === user.id).length,
    viewerCounts: viewerProfile.counts,
    followers: followers.some((f: { id?: string; userId?: string }) => (f.id ?? f.userId) === user.id),
    members: members.some((m: { id?: string; userId?: string; user?: { id: string } }) => (m.id ?? m.userId ?? m.user?.id) === user.id),
    memberCount: hub.memberCount,
    activeUsers: hubs.find((h: { id: string }) => h.id === world.hub.id)?.activeUsers24h,
    messageAuthor:
      messages
        .map((m: { author: { id: string | null; isFormerMember: boolean } }) => m.author)
        .find((a: { id: string | null; displayName: string }) => a.id === user.id || a.displayName === 'Former member') ?? null,
    search: search.some((s: { id: string }) => s.id === user.id),
    home: home.some((item: { post?: { id: string }; id?: string }) =>
      [world.postId, world.repostId].includes(item.post?.id ?? item.id ?? ''),
    ),
  };
}

interface World {
  hub: TestHub;
  postId: string;
  repostId: string;
  friendPostId: string;
  discussionId: string;
}

async function buildWorld(friend: TestUser, user: TestUser): Promise<World> {
  const hub = await hubWithMembers(app, friend, user);
  const friendPost = await createPost(app, friend);
  const discussionPost = await createPost(app, friend, { visibility: 'public_hub', hubIds: [hub.id] });
  const discussionId = (await app.owner.query('select id from app.hub_discussions where post_id = $1', [discussionPost.id])).rows[0].id;
  const post = await createPost(app, user, { thoughtText: 'mine' });
  const repost = await app.post(`/posts/${friendPost.id}/reposts`, { thoughtText: 'again', visibility: 'public' }, { token: user.token });
  expect(repost.status).toBe(201);
  expect((await app.post(`/posts/${friendPost.id}/comments`, { text: 'hello' }, { token: user.token })).status).toBe(201);
  expect((await app.post(`/users/${friend.id}/follow`, undefined, { token: user.token })).status).toBe(200);
  expect((await app.post(`/users/${user.id}/follow`, undefined, { token: friend.token })).status).toBe(200);
  const message = await app.post(`/hubs/${hub.id}/discussions/${discussionId}/messages`, { text: 'in the hub' }, { token: user.token });
  expect(message.status).toBe(201);
  const device = await app.post(
    '/users/me/push-devices',
    { provider: 'fcm', token: `device-${user.id}`, platform: 'ios' },
    { token: user.token },
  );
  expect(device.status).toBe(201);
  return { hub, postId: post.id, repostId: repost.body.data.id, friendPostId: friendPost.id, discussionId };
}

describe('POST /users/me/deletion', () => {
  it('hides the account from everyone at once, signs it out, frees the handle; OTP sign-in within 30 days restores all', async () => {
    const friend = await userAtLevel(app, 4);
    const user = (await userAtLevel(app, 4)) as TestUser & { username: string };
    const world = await buildWorld(friend, user);
    const before = await seenBy(friend, user, world);
    expect(before).toMatchObject({
      profile: 200,
      post: 200,
      repost: 200,
      comments: 1,
      followers: true,
      members: true,
      search: true,
      home: true,
    });
    expect(before.messageAuthor).toMatchObject({ id: user.id, isFormerMember: false });
    await noDrift();

    const deletion = await app.post('/users/me/deletion', undefined, { token: user.token });
    expect(deletion.status).toBe(202);
    const scheduledFor = Date.parse(deletion.body.data.scheduledFor);
    expect(Math.abs(scheduledFor - (Date.now() + 30 * 86_400_000))).toBeLessThan(120_000);

    // Signed out everywhere, devices gone: the same token cannot ask again.
    expect((await app.get('/users/me/profile', { token: user.token })).status).toBe(401);
    const again = await app.post('/users/me/deletion', undefined, { token: user.token });
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('UNAUTHORIZED');
    expect((await app.post('/auth/session/refresh', { refreshToken: user.refreshToken })).status).toBe(401);
    expect((await app.owner.query('select count(*)::int as n from app.push_devices where user_id = $1', [user.id])).rows[0].n).toBe(0);
    // The purge is queued for the scheduled time, once.
    const jobs = (await app.owner.query(`select run_at from graphile_worker.jobs where key = $1`, [`purge_account:${user.id}`])).rows;
    expect(jobs).toHaveLength(1);
    expect(Math.abs(jobs[0].run_at.getTime() - scheduledFor)).toBeLessThan(1000);

    const during = await seenBy(friend, user, world);
    expect(during).toMatchObject({
      profile: 404,
      profileError: 'USER_NOT_FOUND',
      post: 404,
      repost: 404,
      comments: 0,
      followers: false,
      members: false,
      search: false,
      home: false,
      friendCommentCount: before.friendCommentCount - 1,
      friendRepostCount: before.friendRepostCount - 1,
      memberCount: before.memberCount - 1,
      activeUsers: before.activeUsers - 1,
    });
    expect(during.viewerCounts.followers).toBe(before.viewerCounts.followers - 1);
    expect(during.viewerCounts.following).toBe(before.viewerCounts.following - 1);
    expect(during.messageAuthor).toEqual(
      expect.objectContaining({ id: null, displayName: 'Former member', isFormerMember: true, phoneNumber: null }),
    );
    expect((await app.get(`/users/${user.id}/feed`, { token: friend.token })).status).toBe(404);
    await noDrift();

    // The handle is free for someone else at once (and given back on restore only if still free).
    const availability = await app.post('/users/handles/availability', { handle: user.username }, { token: friend.token });
    expect(availability.body.data).toMatchObject({ available: true });

    const back = await verifyPhone(app, user.phone);
    expect(back.id).toBe(user.id);
    const session = await app.post('/auth/session/refresh', { refreshToken: back.refreshToken });
    expect(session.body.data.user.restored).toBeUndefined();
    expect(
      (await app.owner.query('select count(*)::int as n from graphile_worker.jobs where key = $1', [`purge_account:${user.id}`])).rows[0].n,
    ).toBe(0);

    const after = await seenBy(friend, user, world);
    expect(after).toEqual(before);
    await noDrift();
  });

  it('says user.restored: true on the sign-in that restores, and a handle taken meanwhile must be chosen again', async () => {
    const user = (await userAtLevel(app, 3)) as TestUser & { username: string };
    expect((await app.post('/users/me/deletion', undefined, { token: user.token })).status).toBe(202);
    const taker = await userAtLevel(app, 1);
    await completeBasics(app, taker, user.username);

    const phone = user.phone as { phoneCountryCode: string; phoneNumber: string };
    await app.post('/auth/otp/request', { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber });
    const verify = await app.post('/auth/otp/verify', {
      phoneCountryCode: phone.phoneCountryCode,
      phoneNumber: phone.phoneNumber,
      code: '1234',
    });
    expect(verify.status).toBe(200);
    expect(verify.body.data.user).toMatchObject({ id: user.id, restored: true, accessLevel: 1 });
    const token = verify.body.data.accessToken;
    expect((await app.get('/users/me/profile', { token })).body.data.username).toBeNull();
    const handle = nextHandle('back');
    const basics = await app.put(
      '/users/me/onboarding/profile-basics',
      { fullName: 'Test Person', username: handle, acceptTerms: true },
      { token },
    );
    expect(basics.status).toBe(200);
    expect((await app.get(`/users/by-username/${handle}`, { token: taker.token })).status).toBe(200);
    await noDrift();
  });

  it('restores through the identity provider with the same subject', async () => {
    const first = await app.post('/auth/idp/token', { idToken: idp.sign(idpClaims(projectId, { sub: `delete-subject-${process.pid}` })) });
    expect(first.status).toBe(200);
    const user = { id: first.body.data.user.id, token: first.body.data.accessToken, refreshToken: first.body.data.refreshToken };
    const withHandle = await completeBasics(app, user);
    const viewer = await userAtLevel(app, 2);
    expect((await app.get(`/users/by-username/${withHandle.username}`, { token: viewer.token })).status).toBe(200);
    expect((await app.post('/users/me/deletion', undefined, { token: user.token })).status).toBe(202);
    expect((await app.get(`/users/by-username/${withHandle.username}`, { token: viewer.token })).status).toBe(404);

    const back = await app.post('/auth/idp/token', { idToken: idp.sign(idpClaims(projectId, { sub: `delete-subject-${process.pid}` })) });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.data.user).toMatchObject({ id: user.id, restored: true, accessLevel: 2 });
    expect((await app.get(`/users/by-username/${withHandle.username}`, { token: viewer.token })).status).toBe(200);
  });

  it('deletes an anonymous account the same way; the device then starts a new account', async () => {
    const deviceId = `deleting-device-${process.pid}`;
    const first = await app.post('/auth/anonymous/session', { deviceId });
    const user = first.body.data.user.id;
    expect((await app.post('/users/me/deletion', undefined, { token: first.body.data.accessToken })).status).toBe(202);
    const next = await app.post('/auth/anonymous/session', { deviceId });
    expect(next.status).toBe(200);
    expect(next.body.data.user.id).not.toBe(user);
    expect(next.body.data.user.restored).toBeUndefined();
    const other = await anonymousUser(app);
    expect(other.id).not.toBe(user);
  });

  it('asks for a token: without one 401, and a revoked one 401, changing nothing', async () => {
    expect((await app.post('/users/me/deletion')).status).toBe(401);
    const user = await userAtLevel(app, 2);
    expect(
      (await app.post('/auth/logout', { refreshToken: user.refreshToken, logoutFromAllDevices: false }, { token: user.token })).status,
    ).toBe(200);
    const response = await app.post('/users/me/deletion', undefined, { token: user.token });
    expect(response.status).toBe(401);
    expect(
      (await app.owner.query('select count(*)::int as n from app_private.account_states where user_id = $1', [user.id])).rows[0].n,
    ).toBe(0);
  });
});
