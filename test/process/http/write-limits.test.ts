// Per-user write limits (contract section 3; server/http/write-limits.ts), across two real API
// processes sharing one database: each limit, reached with writes alternating between the two,
// answers the next write 429 RATE_LIMITED with retryAfterSeconds and Retry-After, and writes
// nothing. The processes run with small limits (WRITE_LIMITS); arranging happens through the test
// app, by other users or under other limits than the one each case measures.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeLimitDefaults } from '../../../server/http/write-limits.ts';
import { startTestApp, testCodes, type TestApp } from '../../helpers/app.ts';
import { createClient, type ApiResponse, type Client } from '../../helpers/client.ts';
import { addMember, createHub, invite, type TestHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { answers, type RunningProcess } from '../../helpers/process.ts';
import { png, uploadAsset } from '../../helpers/uploads.ts';
import { nextPhone, userAtLevel, type TestUser } from '../../helpers/users.ts';
import { hubWithMembers, processOnApp } from '../../helpers/worlds.ts';

const max = 2;
let app: TestApp;
let apis: [Client, Client];
const processes: RunningProcess[] = [];

beforeAll(async () => {
  app = await startTestApp();
  const writeLimits = Object.keys(writeLimitDefaults)
    .map((name) => `${name}=${max}/3600`)
    .join(',');
  apis = (await Promise.all(
    [0, 1].map(async () => {
      const api = await processOnApp(app, 'api', {
        OTP_TEST_CODES: testCodes,
        WRITE_LIMITS: writeLimits,
        LOG_LEVEL: 'warn',
      });
      processes.push(api);
      await api.waitFor(() => answers(`http://127.0.0.1:${api.port}/readyz`), 'an API process');
      return createClient(`http://127.0.0.1:${api.port}`);
    }),
  )) as [Client, Client];
}, 90_000);

afterAll(async () => {
  for (const api of processes) api.child.kill('SIGTERM');
  expect(await Promise.all(processes.map((api) => api.exited))).toEqual([0, 0]);
  await app.close();
});

const count = async (sql: string, params: unknown[] = []) =>
  (await app.owner.query<{ n: number }>(`select count(*)::int as n from ${sql}`, params)).rows[0]?.n;

interface Case {
  /** Write number `i` through `api` (each limit's writes alternate between the two processes). */
  write(api: Client, i: number): Promise<ApiResponse>;
  /** What such writes leave in the database. */
  written(): Promise<unknown>;
}

/** `max` writes succeed, alternating processes; the next answers 429 and writes nothing. */
async function reachLimit({ write, written }: Case): Promise<void> {
  for (let i = 0; i < max; i += 1) {
    const response = await write(apis[i % 2] as Client, i);
    expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  }
  const before = await written();
  const refused = await write(apis[max % 2] as Client, max);
  expect(refused.status, JSON.stringify(refused.body)).toBe(429);
  expect(refused.body.error.code).toBe('RATE_LIMITED');
  const seconds = refused.body.error.details.retryAfterSeconds;
  expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= 3600).toBe(true);
  expect(refused.headers.get('retry-after')).toBe(String(seconds));
  expect(await written()).toEqual(before);
}

let hub: TestHub;
let owner: TestUser;
beforeAll(async () => {
  owner = await userAtLevel(app, 4);
  hub = await createHub(app, owner);
}, 60_000);

describe('each write limit, across two API processes', { timeout: 60_000 }, () => {
  it('posts and reposts', async () => {
    const author = await userAtLevel(app, 3);
    const source = await createPost(app, await userAtLevel(app, 3));
    await reachLimit({
      write: (api, i) =>
        i % 2 === 0
          ? api.post('/posts', { thoughtText: `post ${i}`, visibility: 'public' }, { token: author.token })
          : api.post(`/posts/${source.id}/reposts`, { thoughtText: `repost ${i}`, visibility: 'public' }, { token: author.token }),
      written: () => count('app.posts where author_id = $1', [author.id]),
    });
  });

  it('posts, reposts and shares into one hub, per user and hub', async () => {
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const other = await hubWithMembers(app, owner, member);
    const source = await createPost(app, await userAtLevel(app, 3));
    await reachLimit({
      write: (api, i) =>
        i === 1
          ? api.post(`/posts/${source.id}/share/hubs`, { hubIds: [hub.id] }, { token: member.token })
          : api.post('/posts', { thoughtText: `hub post ${i}`, visibility: 'public_hub', hubIds: [hub.id] }, { token: member.token }),
      written: () => count('app.post_hubs where hub_id = $1 and added_by = $2', [hub.id, member.id]),
    });
    // The member's posts limit has room left (2 per hour, one post used): another hub still takes one.
    const elsewhere = await apis[1].post(
      '/posts',
      { thoughtText: 'elsewhere', visibility: 'public_hub', hubIds: [other.id] },
      { token: member.token },
    );
    expect(elsewhere.status).toBe(201);
  });

  it('comments', async () => {
    const post = await createPost(app, owner);
    const commenter = await userAtLevel(app, 2);
    await reachLimit({
      write: (api, i) => api.post(`/posts/${post.id}/comments`, { text: `comment ${i}` }, { token: commenter.token }),
      written: () => count('app.comments where author_id = $1', [commenter.id]),
    });
  });

  it('discussion messages', async () => {
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    await createPost(app, owner, { visibility: 'public_hub', hubIds: [hub.id] });
    const { rows } = await app.owner.query<{ id: string }>('select id from app.hub_discussions where hub_id = $1 limit 1', [hub.id]);
    await reachLimit({
      write: (api, i) => api.post(`/hubs/${hub.id}/discussions/${rows[0]?.id}/messages`, { text: `message ${i}` }, { token: member.token }),
      written: () => count('app.hub_discussion_messages where author_id = $1', [member.id]),
    });
  });

  it('follows and blocks', async () => {
    const actor = await userAtLevel(app, 2);
    const targets = await Promise.all(Array.from({ length: 6 }, () => userAtLevel(app, 2)));
    await reachLimit({
      write: (api, i) => api.post(`/users/${targets[i]?.id}/follow`, undefined, { token: actor.token }),
      written: () => count('app.follows where follower_id = $1', [actor.id]),
    });
    await reachLimit({
      write: (api, i) => api.post(`/users/${targets[3 + i]?.id}/block`, undefined, { token: actor.token }),
      written: () => count('app.blocks where blocker_id = $1', [actor.id]),
    });
  });

  it('shares, reports and other writes (saves)', async () => {
    const user = await userAtLevel(app, 2);
    const posts = await Promise.all(Array.from({ length: 3 }, () => createPost(app, owner)));
    await reachLimit({
      write: (api, i) => api.post(`/posts/${posts[i]?.id}/share/feed`, undefined, { token: user.token }),
      written: () => count('app.post_shares where user_id = $1', [user.id]),
    });
    await reachLimit({
      write: (api, i) => api.post(`/reports/posts/${posts[i]?.id}`, { reason: 'spam' }, { token: user.token }),
      written: () => count('app.reports where reporter_id = $1', [user.id]),
    });
    // Its onboarding steps counted under other_writes: start that window afresh.
    await app.owner.query(`delete from app_private.sliding_limits where key = 'write:other_writes:' || $1`, [user.id]);
    await reachLimit({
      write: (api, i) => api.post(`/posts/${posts[i]?.id}/save`, undefined, { token: user.token }),
      written: () => count('app.saved_posts where user_id = $1', [user.id]),
    });
  });

  it('invitations and invite links', async () => {
    const admin = await userAtLevel(app, 4);
    const ownHub = await createHub(app, admin);
    await reachLimit({
      write: (api) => {
        const phone = nextPhone();
        return api.post(
          `/hubs/${ownHub.id}/invitations`,
          { invitees: [{ phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber }] },
          { token: admin.token },
        );
      },
      written: () => count('app.hub_invitations where invited_by = $1', [admin.id]),
    });
    await reachLimit({
      write: (api) => api.post(`/hubs/${ownHub.id}/invite-links`, undefined, { token: admin.token }),
      written: () => count('app.hub_invite_links where created_by = $1', [admin.id]),
    });
  });

  it('join requests and answers to invitations', async () => {
    const joiner = await userAtLevel(app, 4);
    const hubs = await Promise.all(Array.from({ length: 3 }, () => createHub(app, owner)));
    const tokens = await Promise.all(
      hubs.map(async (h) => (await app.post(`/hubs/${h.id}/invite-links`, undefined, { token: owner.token })).body.data.token as string),
    );
    const invitationId = await invite(app, hub, owner, joiner);
    await reachLimit({
      write: (api, i) =>
        i === 1
          ? api.post(`/hub-invitations/${invitationId}/decline`, undefined, { token: joiner.token })
          : api.post(`/hub-invite-links/${tokens[i]}/join-requests`, undefined, { token: joiner.token }),
      written: () => count('app.hub_join_requests where user_id = $1', [joiner.id]),
    });
  });

  it('uploads, hubs and hub admin changes', async () => {
    const user = await userAtLevel(app, 4);
    await reachLimit({
      write: (api) =>
        api.post('/uploads/presign', { purpose: 'post_image', contentType: 'image/png', contentLength: png.length }, { token: user.token }),
      written: () => count('app.upload_intents where owner_id = $1', [user.id]),
    });
    const creator = await userAtLevel(app, 4);
    const photos = [
      await uploadAsset(app, creator, 'hub_photo'),
      await uploadAsset(app, creator, 'hub_photo'),
      await uploadAsset(app, creator, 'hub_photo'),
    ];
    await reachLimit({
      write: (api, i) => api.post('/hubs', { name: `Limited hub ${i}`, profileAssetId: photos[i] }, { token: creator.token }),
      written: () => count('app.hubs where created_by = $1', [creator.id]),
    });
    const { rows } = await app.owner.query<{ id: string }>('select id from app.hubs where created_by = $1 limit 1', [creator.id]);
    await reachLimit({
      write: (api, i) => api.patch(`/hubs/${rows[0]?.id}`, { description: `description ${i}` }, { token: creator.token }),
      written: async () => (await app.owner.query('select description from app.hubs where id = $1', [rows[0]?.id])).rows,
    });
  });

  it('push device registrations', async () => {
    const user = await userAtLevel(app, 1);
    await reachLimit({
      write: (api, i) =>
        api.post(
          '/users/me/push-devices',
          { provider: 'fcm', token: `limited-${user.id}-${i}`, platform: 'android' },
          { token: user.token },
        ),
      written: () => count('app.push_devices where user_id = $1', [user.id]),
    });
  });

  it('counts only writes that happened: a refused write (404) leaves the limit as it was', async () => {
    const user = await userAtLevel(app, 2);
    const unknown = await apis[0].post('/posts/00000000-0000-4000-8000-000000000000/comments', { text: 'nowhere' }, { token: user.token });
    expect(unknown.status).toBe(404);
    const post = await createPost(app, owner);
    for (let i = 0; i < max; i += 1) {
      expect((await apis[i % 2]?.post(`/posts/${post.id}/comments`, { text: `ok ${i}` }, { token: user.token }))?.status).toBe(201);
    }
  });
});
