// Hub discussions and saved discussions (spec 2.2 HubDiscussionAuthor, 2.5, part 6; contract
// section 8) over real HTTP: discussions opened by placements, one-level threads, authors by the
// phone policy, activity ordering, no notifications or stream events, saving, errors in order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub, invite, type TestHub } from '../../helpers/hubs.ts';
import { insertNotification, openStream } from '../../helpers/notifications.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers, usersAtLevels, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let owner: TestUser;
let member: TestUser;
let outsider: TestUser;
let hub: TestHub;
let otherHub: TestHub;
beforeAll(async () => {
  [app, owner, member, outsider] = await appWithUsers(4, 4, 4);
  hub = await createHub(app, owner);
  otherHub = await createHub(app, owner);
  await addMember(app, hub, member);
});
afterAll(() => app.close());

const discussionsOf = (user: TestUser, hubId = hub.id, query = '') => app.get(`/hubs/${hubId}/discussions${query}`, { token: user.token });
const messagesPath = (discussionId: string, hubId = hub.id) => `/hubs/${hubId}/discussions/${discussionId}/messages`;
const say = (user: TestUser, discussionId: string, body: Record<string, unknown>, hubId = hub.id) =>
  app.post(messagesPath(discussionId, hubId), body, { token: user.token });
const listMessages = (user: TestUser, discussionId: string, query = '', hubId = hub.id) =>
  app.get(`${messagesPath(discussionId, hubId)}${query}`, { token: user.token });

/** A post targeted to the hub and its discussion id. */
async function hubPost(author: TestUser, target: TestHub = hub): Promise<{ postId: string; discussionId: string }> {
  const post = await createPost(app, author, { visibility: 'public_hub', hubIds: [target.id] });
  const { rows } = await app.owner.query('select id from app.hub_discussions where hub_id = $1 and post_id = $2', [target.id, post.id]);
  return { postId: post.id, discussionId: rows[0].id };
}

const countRows = async (table: string) => (await app.owner.query(`select count(*)::int as n from ${table}`)).rows[0].n as number;

describe('discussions of a hub', () => {
  it('exist for every post targeted or shared into the hub, opened by the placement itself', async () => {
    const targeted = await createPost(app, owner, { visibility: 'public_hub', hubIds: [hub.id, otherHub.id], ...slider });
    const shared = await createPost(app, member, { visibility: 'public' });
    expect((await app.post(`/posts/${shared.id}/share/hubs`, { hubIds: [hub.id] }, { token: member.token })).status).toBe(201);
    const { rows } = await app.owner.query(
      `select ph.hub_id, ph.post_id, d.id as discussion_id from app.post_hubs ph
       left join app.hub_discussions d on d.hub_id = ph.hub_id and d.post_id = ph.post_id
       where ph.post_id = any($1)`,
      [[targeted.id, shared.id]],
    );
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row.discussion_id).toEqual(expect.any(String));
    // A placement that fails (not a member of one target) leaves no discussion behind.
    const before = await countRows('app.hub_discussions');
    const refused = await app.post(
      '/posts',
      { thoughtText: 'x', visibility: 'public_hub', hubIds: [hub.id, (await createHub(app, outsider)).id] },
      { token: member.token },
    );
    expect(refused.body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    expect(await countRows('app.hub_discussions')).toBe(before);
  });

  it('lists discussions with the post card in the hub scope, most recent activity first, keyset-paged', async () => {
    const user = await userAtLevel(app, 4);
    const ownHub = await createHub(app, user);
    const first = await hubPost(user, ownHub);
    const post = await createPost(app, user, { visibility: 'public_hub', hubIds: [ownHub.id], ...slider });
    const second = (await app.owner.query('select id from app.hub_discussions where post_id = $1', [post.id])).rows[0].id as string;
    const third = await hubPost(user, ownHub);
    await vote(app, user, post.id, 'right');
    // A vote from outside the hub counts in the global pool only.
    expect((await vote(app, outsider, post.id, 'left')).status).toBe(201);

    const page = await discussionsOf(user, ownHub.id, '?limit=2');
    expect(page.status).toBe(200);
    expect(page.body.data.items.map((d: any) => d.id)).toEqual([third.discussionId, second]);
    const item = page.body.data.items[1];
    expect(item).toEqual({
      id: second,
      hubId: ownHub.id,
      postId: post.id,
      post: expect.objectContaining({ id: post.id, visibility: 'public_hub', sliderText: slider.sliderText }),
      messageCount: 0,
      lastActivityAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      viewerSaved: false,
    });
    expect(item.post.voteSummary).toEqual({ totalVotes: 1, resultsVisible: true, leftCount: 0, neutralCount: 0, rightCount: 1 });
    expect((await app.get(`/posts/${post.id}`, { token: user.token })).body.data.voteSummary.totalVotes).toBe(2);
    const rest = await discussionsOf(user, ownHub.id, `?limit=2&cursor=${page.body.data.nextCursor}`);
    expect(rest.body.data.items.map((d: any) => d.id)).toEqual([first.discussionId]);
    expect(rest.body.data.nextCursor).toBeNull();

    // A message moves its discussion to the top.
    expect((await say(user, first.discussionId, { text: 'bump' }, ownHub.id)).status).toBe(201);
    const bumped = await discussionsOf(user, ownHub.id);
    expect(bumped.body.data.items.map((d: any) => [d.id, d.messageCount])).toEqual([
      [first.discussionId, 1],
      [third.discussionId, 0],
      [second, 0],
    ]);
  });

  it('leaves out discussions of posts the viewer may no longer see', async () => {
    const { postId, discussionId } = await hubPost(member);
    expect((await discussionsOf(owner)).body.data.items.map((d: any) => d.id)).toContain(discussionId);
    expect((await app.delete(`/posts/${postId}`, { token: member.token })).status).toBe(200);
    expect((await discussionsOf(owner)).body.data.items.map((d: any) => d.id)).not.toContain(discussionId);
    expect((await listMessages(owner, discussionId)).body.error.code).toBe('DISCUSSION_NOT_FOUND');
    expect((await say(owner, discussionId, { text: 'hello?' })).body.error.code).toBe('DISCUSSION_NOT_FOUND');
  });
});

describe('messages', () => {
  it('post with a HubDiscussionAuthor showing the Hub identity and phone of active members', async () => {
    const { discussionId } = await hubPost(owner);
    expect((await app.patch('/users/me/hub-profile', { displayName: 'Member In Hub' }, { token: member.token })).status).toBe(200);
    const posted = await say(member, discussionId, { text: '  First!  ' });
    expect(posted.status).toBe(201);
    expect(posted.body.data).toEqual({
      id: expect.any(String),
      discussionId,
      parentMessageId: null,
      author: {
        id: member.id,
        displayName: 'Member In Hub',
        profilePhotoUrl: null,
        phoneNumber: member.phone?.e164,
        publicUsername: null,
        isFormerMember: false,
      },
      text: 'First!',
      replyCount: 0,
      createdAt: expect.stringMatching(/Z$/),
    });
    const listed = await listMessages(owner, discussionId);
    expect(listed.body.data).toEqual({ items: [posted.body.data], nextCursor: null });
  });

  it('keep threads one level deep: a reply to a reply attaches to the root; replyCount on roots', async () => {
    const { discussionId } = await hubPost(owner);
    const root = (await say(owner, discussionId, { text: 'root' })).body.data;
    const reply = (await say(member, discussionId, { text: 'reply', parentMessageId: root.id })).body.data;
    const nested = (await say(owner, discussionId, { text: 'reply to reply', parentMessageId: reply.id })).body.data;
    const second = (await say(member, discussionId, { text: 'second root' })).body.data;
    expect(reply.parentMessageId).toBe(root.id);
    expect(nested.parentMessageId).toBe(root.id);

    const top = await listMessages(member, discussionId);
    expect(top.body.data.items.map((m: any) => [m.id, m.replyCount])).toEqual([
      [root.id, 2],
      [second.id, 0],
    ]);
    const thread = await listMessages(member, discussionId, `?parentMessageId=${root.id}&limit=1`);
    expect(thread.body.data.items.map((m: any) => m.id)).toEqual([reply.id]);
    const more = await listMessages(member, discussionId, `?parentMessageId=${root.id}&limit=1&cursor=${thread.body.data.nextCursor}`);
    expect(more.body.data.items.map((m: any) => m.id)).toEqual([nested.id]);
    expect(more.body.data.nextCursor).toBeNull();
    // A reply's id lists the thread it belongs to.
    const byReply = await listMessages(member, discussionId, `?parentMessageId=${nested.id}`);
    expect(byReply.body.data.items.map((m: any) => m.id)).toEqual([reply.id, nested.id]);
    const discussion = (await discussionsOf(member)).body.data.items.find((d: any) => d.id === discussionId);
    expect(discussion.messageCount).toBe(4);
  });

  it("move the hub's lastActivityAt in GET /users/me/hubs", async () => {
    const user = await userAtLevel(app, 4);
    const older = await createHub(app, user);
    const { discussionId } = await hubPost(user, older);
    const newer = await createHub(app, user);
    const order = async () => (await app.get('/users/me/hubs', { token: user.token })).body.data.items.map((h: any) => h.id);
    expect(await order()).toEqual([newer.id, older.id]);
    const before = (await app.get('/users/me/hubs', { token: user.token })).body.data.items[1].lastActivityAt;
    expect((await say(user, discussionId, { text: 'activity' }, older.id)).status).toBe(201);
    expect(await order()).toEqual([older.id, newer.id]);
    expect((await app.get('/users/me/hubs', { token: user.token })).body.data.items[0].lastActivityAt > before).toBe(true);
  });

  it('create no notification rows, no jobs and no stream events', async () => {
    const { discussionId } = await hubPost(owner);
    // What the hub post wrote for the member goes through the live dispatcher first: a stream opened
    // while the dispatcher is behind (a loaded machine) would carry it. The dispatcher delivers in
    // commit order, so once a later row reached a stream, the post's rows are behind it.
    const settle = await openStream(app.url, member.token);
    try {
      await settle.waitForId(await insertNotification(app, member.id, { type: 'user_followed' }));
    } finally {
      settle.close();
    }
    const stream = await openStream(app.url, member.token);
    try {
      const [notifications, jobs] = [await countRows('app.notifications'), await countRows('graphile_worker._private_jobs')];
      const root = (await say(owner, discussionId, { text: 'quiet' })).body.data;
      expect((await say(owner, discussionId, { text: 'still quiet', parentMessageId: root.id })).status).toBe(201);
      expect(await countRows('app.notifications')).toBe(notifications);
      expect(await countRows('graphile_worker._private_jobs')).toBe(jobs);
      // A notification written after the messages is the first event the stream carries.
      const marker = await insertNotification(app, member.id, { type: 'user_followed' });
      await stream.waitForId(marker);
      expect(stream.events.map((event) => event.id)).toEqual([marker]);
    } finally {
      stream.close();
    }
  });

  it('show a former member without phone, falling back to the public handle, and a gone author without id', async () => {
    const leaver = await userAtLevel(app, 4);
    await addMember(app, hub, leaver);
    expect((await app.patch('/users/me/hub-profile', { displayName: 'Private Name' }, { token: leaver.token })).status).toBe(200);
    const { discussionId } = await hubPost(owner);
    const message = (await say(leaver, discussionId, { text: 'bye soon' })).body.data;
    expect(message.author.displayName).toBe('Private Name');
    expect((await app.delete(`/hubs/${hub.id}/membership`, { token: leaver.token })).status).toBe(200);
    expect((await say(leaver, discussionId, { text: 'still here?' })).body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    expect((await listMessages(leaver, discussionId)).body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');

    const author = async () => (await listMessages(member, discussionId)).body.data.items[0].author;
    expect(await author()).toEqual({
      id: leaver.id,
      displayName: 'Test Person',
      profilePhotoUrl: null,
      phoneNumber: null,
      publicUsername: leaver.username,
      isFormerMember: true,
    });
    // Still a co-member elsewhere: the phone policy would show the phone, this hub's rule does not.
    await hubWithMembers(app, member, leaver);
    expect(await author()).toMatchObject({ phoneNumber: null, isFormerMember: true, displayName: 'Test Person' });

    await app.owner.query('update app.hub_discussion_messages set author_id = null where id = $1', [message.id]);
    expect(await author()).toEqual({
      id: null,
      displayName: 'Former member',
      profilePhotoUrl: null,
      phoneNumber: null,
      publicUsername: null,
      isFormerMember: true,
    });
    expect((await listMessages(member, discussionId)).text).not.toContain(leaver.phone?.e164.slice(2) as string);
  });

  it('hide messages of users blocked with the viewer either way, and refuse replies to them', async () => {
    const blocker = await userAtLevel(app, 4);
    await addMember(app, hub, blocker);
    const { discussionId } = await hubPost(owner);
    const fromMember = (await say(member, discussionId, { text: 'from member' })).body.data;
    const fromOwner = (await say(owner, discussionId, { text: 'from owner' })).body.data;
    expect((await app.post(`/users/${member.id}/block`, undefined, { token: blocker.token })).status).toBe(200);
    expect((await listMessages(blocker, discussionId)).body.data.items.map((m: any) => m.id)).toEqual([fromOwner.id]);
    expect((await say(blocker, discussionId, { text: 'x', parentMessageId: fromMember.id })).body.error.code).toBe('MESSAGE_NOT_FOUND');
    expect((await listMessages(member, discussionId)).body.data.items.map((m: any) => m.id)).toEqual([fromMember.id, fromOwner.id]);
  });
});

describe('errors, in contract order', () => {
  let discussionId: string;
  let foreignDiscussion: string;
  let messageId: string;
  let foreignMessage: string;
  let invited: TestUser;
  let pending: TestUser;
  let level3: TestUser;
  beforeAll(async () => {
    ({ discussionId } = await hubPost(owner));
    ({ discussionId: foreignDiscussion } = await hubPost(owner, otherHub));
    messageId = (await say(owner, discussionId, { text: 'm' })).body.data.id;
    foreignMessage = (await say(owner, foreignDiscussion, { text: 'f' }, otherHub.id)).body.data.id;
    [invited, pending, level3] = await usersAtLevels(app, 4, 4, 3);
    await invite(app, hub, owner, invited);
    const link = await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: owner.token });
    expect((await app.post(`/hub-invite-links/${link.body.data.token}/join-requests`, undefined, { token: pending.token })).status).toBe(
      201,
    );
  });

  const code = (response: { body: any }) => response.body.error?.code;

  it('401 without a token, HUB_READINESS_REQUIRED below level 4 (before the body)', async () => {
    expect((await app.get(`/hubs/${hub.id}/discussions`)).status).toBe(401);
    expect(code(await discussionsOf(level3))).toBe('HUB_READINESS_REQUIRED');
    expect(code(await say(level3, discussionId, { text: '' }))).toBe('HUB_READINESS_REQUIRED');
    expect(code(await app.get('/users/me/saved-discussions', { token: level3.token }))).toBe('HUB_READINESS_REQUIRED');
    expect(code(await app.post(`/hubs/${hub.id}/discussions/${discussionId}/save`, undefined, { token: level3.token }))).toBe(
      'HUB_READINESS_REQUIRED',
    );
  });

  it('422 for text bounds, unknown fields and bad paging, before existence', async () => {
    const before = await countRows('app.hub_discussion_messages');
    for (const body of [{}, { text: '' }, { text: '   ' }, { text: 'x'.repeat(2001) }, { text: 'ok', extra: 1 }, { text: 5 }]) {
      const response = await say(member, discussionId, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(code(response)).toBe('VALIDATION_FAILED');
    }
    expect(code(await say(member, '00000000-0000-4000-8000-000000000000', { text: '' }))).toBe('VALIDATION_FAILED');
    expect((await say(member, discussionId, { text: 'x'.repeat(2000) })).status).toBe(201);
    expect(await countRows('app.hub_discussion_messages')).toBe(before + 1);
    for (const query of ['?limit=0', '?limit=101']) expect(code(await listMessages(member, discussionId, query))).toBe('VALIDATION_FAILED');
    expect(code(await discussionsOf(member, hub.id, '?limit=51'))).toBe('VALIDATION_FAILED');
  });

  it('422 for forged cursors on every list, never 500', async () => {
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const forged = [
      'not-a-cursor!',
      cursor(['x', 'y']),
      cursor([1e300, discussionId]),
      cursor([2 ** 53, discussionId]),
      cursor([1.5, discussionId]),
      cursor([1, 'not-a-uuid']),
      cursor([1]),
      cursor([1, discussionId, 3]),
      cursor({ a: 1 }),
    ];
    const lists = [`/hubs/${hub.id}/discussions`, messagesPath(discussionId), '/users/me/saved-discussions'];
    for (const path of lists) {
      for (const value of forged) {
        const response = await app.get(`${path}?cursor=${value}`, { token: member.token });
        expect(response.status, `${path} ${value}`).toBe(422);
        expect(code(response)).toBe('VALIDATION_FAILED');
      }
      for (const valid of [
        [0, discussionId],
        [-1, discussionId],
      ]) {
        expect((await app.get(`${path}?cursor=${cursor(valid)}`, { token: member.token })).status).toBe(200);
      }
    }
  });

  it('HUB_NOT_FOUND, then HUB_MEMBERSHIP_REQUIRED for outsiders, invited and pending users', async () => {
    const unknownHub = '00000000-0000-4000-8000-000000000000';
    expect(code(await discussionsOf(member, unknownHub))).toBe('HUB_NOT_FOUND');
    expect(code(await discussionsOf(member, 'nope'))).toBe('HUB_NOT_FOUND');
    expect(code(await say(member, discussionId, { text: 'x' }, unknownHub))).toBe('HUB_NOT_FOUND');
    for (const user of [outsider, invited, pending]) {
      expect(code(await discussionsOf(user))).toBe('HUB_MEMBERSHIP_REQUIRED');
      expect(code(await listMessages(user, discussionId))).toBe('HUB_MEMBERSHIP_REQUIRED');
      expect(code(await say(user, discussionId, { text: 'x' }))).toBe('HUB_MEMBERSHIP_REQUIRED');
      // Membership is checked before the discussion, whatever the discussion id.
      expect(code(await say(user, 'not-an-id', { text: 'x' }))).toBe('HUB_MEMBERSHIP_REQUIRED');
      expect(code(await app.post(`/hubs/${hub.id}/discussions/${discussionId}/save`, undefined, { token: user.token }))).toBe(
        'HUB_MEMBERSHIP_REQUIRED',
      );
      expect(code(await app.delete(`/hubs/${hub.id}/discussions/${discussionId}/save`, { token: user.token }))).toBe(
        'HUB_MEMBERSHIP_REQUIRED',
      );
    }
  });

  it('DISCUSSION_NOT_FOUND for unknown ids and discussions of another hub, then MESSAGE_NOT_FOUND', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id', foreignDiscussion]) {
      expect(code(await listMessages(member, id))).toBe('DISCUSSION_NOT_FOUND');
      expect(code(await say(member, id, { text: 'x', parentMessageId: 'nope' }))).toBe('DISCUSSION_NOT_FOUND');
      expect(code(await app.post(`/hubs/${hub.id}/discussions/${id}/save`, undefined, { token: member.token }))).toBe(
        'DISCUSSION_NOT_FOUND',
      );
    }
    const before = await countRows('app.hub_discussion_messages');
    for (const parent of ['00000000-0000-4000-8000-000000000000', 'nope', foreignMessage]) {
      expect(code(await say(member, discussionId, { text: 'x', parentMessageId: parent }))).toBe('MESSAGE_NOT_FOUND');
      expect(code(await listMessages(member, discussionId, `?parentMessageId=${parent}`))).toBe('MESSAGE_NOT_FOUND');
    }
    expect(await countRows('app.hub_discussion_messages')).toBe(before);
    expect((await say(member, discussionId, { text: 'x', parentMessageId: messageId })).status).toBe(201);
  });
});

describe('saved discussions', () => {
  it('save and unsave idempotently; the list is newest save first with up to 3 earliest messages as preview', async () => {
    const user = await userAtLevel(app, 4);
    await addMember(app, hub, user);
    const a = await hubPost(owner);
    const b = await hubPost(owner);
    const messages: any[] = [];
    for (const text of ['one', 'two', 'three', 'four']) messages.push((await say(owner, a.discussionId, { text })).body.data);
    await say(user, a.discussionId, { text: 'a reply', parentMessageId: messages[0].id });

    const save = (id: string) => app.post(`/hubs/${hub.id}/discussions/${id}/save`, undefined, { token: user.token });
    const [notifications, jobs] = [await countRows('app.notifications'), await countRows('graphile_worker._private_jobs')];
    expect((await save(a.discussionId)).body.data).toEqual({ saved: true });
    expect((await save(a.discussionId)).body.data).toEqual({ saved: true });
    expect((await save(b.discussionId)).body.data).toEqual({ saved: true });
    // Saving notifies nobody (spec part 6).
    expect([await countRows('app.notifications'), await countRows('graphile_worker._private_jobs')]).toEqual([notifications, jobs]);

    const list = await app.get('/users/me/saved-discussions', { token: user.token });
    expect(list.status).toBe(200);
    expect(list.body.data.items.map((s: any) => s.discussionId)).toEqual([b.discussionId, a.discussionId]);
    const saved = list.body.data.items[1];
    expect(saved).toEqual({
      discussionId: a.discussionId,
      hubId: hub.id,
      hubName: expect.any(String),
      postId: a.postId,
      savedAt: expect.stringMatching(/Z$/),
      preview: messages.slice(0, 3).map((m) => ({ ...m, replyCount: m.id === messages[0].id ? 1 : 0 })),
    });
    expect(saved.preview[0].author.phoneNumber).toBe(owner.phone?.e164);
    const paged = await app.get('/users/me/saved-discussions?limit=1', { token: user.token });
    const next = await app.get(`/users/me/saved-discussions?limit=1&cursor=${paged.body.data.nextCursor}`, { token: user.token });
    expect(next.body.data.items.map((s: any) => s.discussionId)).toEqual([a.discussionId]);
    expect(next.body.data.nextCursor).toBeNull();

    const flags = (await discussionsOf(user)).body.data.items.filter((d: any) => [a.discussionId, b.discussionId].includes(d.id));
    expect(flags.map((d: any) => d.viewerSaved)).toEqual([true, true]);
    expect((await discussionsOf(owner)).body.data.items.find((d: any) => d.id === a.discussionId).viewerSaved).toBe(false);

    const unsave = () => app.delete(`/hubs/${hub.id}/discussions/${b.discussionId}/save`, { token: user.token });
    expect((await unsave()).body.data).toEqual({ saved: false });
    expect((await unsave()).body.data).toEqual({ saved: false });
    expect((await app.get('/users/me/saved-discussions', { token: user.token })).body.data.items.map((s: any) => s.discussionId)).toEqual([
      a.discussionId,
    ]);
  });

  it('omits hubs the user left, keeps the rows, and shows them again on rejoining', async () => {
    const user = await userAtLevel(app, 4);
    await addMember(app, hub, user);
    const { discussionId } = await hubPost(owner);
    expect((await app.post(`/hubs/${hub.id}/discussions/${discussionId}/save`, undefined, { token: user.token })).status).toBe(200);
    const listed = async () =>
      (await app.get('/users/me/saved-discussions', { token: user.token })).body.data.items.map((s: any) => s.discussionId);
    expect(await listed()).toEqual([discussionId]);
    expect((await app.delete(`/hubs/${hub.id}/membership`, { token: user.token })).status).toBe(200);
    expect(await listed()).toEqual([]);
    expect((await app.owner.query('select count(*)::int as n from app.saved_discussions where user_id = $1', [user.id])).rows[0].n).toBe(1);
    await addMember(app, hub, user);
    expect(await listed()).toEqual([discussionId]);
  });
});
