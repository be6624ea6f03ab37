// Notifications over HTTP (spec 2.7, 4.7, 6.3; contract section 9): the list, the unread count and
// mark-read. The live stream has its own file (notification-stream.test.ts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, type TestHub } from '../../helpers/hubs.ts';
import { insertNotification } from '../../helpers/notifications.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const list = (user: TestUser, query = '') => app.get(`/notifications${query}`, { token: user.token });
const markRead = (user: TestUser, body: unknown) => app.patch('/notifications/read', body, { token: user.token });
const unreadCount = async (user: TestUser) => (await app.get('/notifications/unread-count', { token: user.token })).body.data.unreadCount;

async function readAt(id: string): Promise<Date | null> {
  const { rows } = await app.owner.query('select read_at from app.notifications where id = $1', [id]);
  return rows[0].read_at;
}

/** Every page of a listing, following nextCursor. */
async function allPages(user: TestUser, query: string): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const response = await list(user, `?${query}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    pages.push(response.body.data.items.map((item: { id: string }) => item.id));
    cursor = response.body.data.nextCursor;
  } while (cursor);
  return pages;
}

describe('authentication', () => {
  it('answers 401 without a valid token on every notification endpoint', async () => {
    for (const [method, path] of [
      ['GET', '/notifications'],
      ['GET', '/notifications/unread-count'],
      ['PATCH', '/notifications/read'],
      ['GET', '/notifications/stream'],
    ] as const) {
      const body = method === 'PATCH' ? { markAll: true } : undefined;
      const missing = await app.request(method, path, { body });
      expect(missing.status, `${method} ${path}`).toBe(401);
      expect(missing.body.error.code).toBe('UNAUTHORIZED');
      const invalid = await app.request(method, path, { token: 'not-a-token', body });
      expect(invalid.status, `${method} ${path}`).toBe(401);
    }
  });

  it('answers 401 for the access token of a logged-out session', async () => {
    const user = await anonymousUser(app);
    expect(
      (await app.post('/auth/logout', { refreshToken: user.refreshToken, logoutFromAllDevices: false }, { token: user.token })).status,
    ).toBe(200);
    expect((await list(user)).status).toBe(401);
  });
});

describe('GET /notifications', () => {
  it('lists the rows of the viewer, newest first, in the row shape of contract 9', async () => {
    const viewer = await userAtLevel(app, 2);
    const actor = await userAtLevel(app, 2, `actor_${Date.now() % 100000}`);
    const other = await userAtLevel(app, 2);
    const postId = randomUUID();
    const commentId = randomUUID();
    const older = await insertNotification(app, viewer.id, { type: 'user_followed', actorId: actor.id, ageSeconds: 60 });
    const newer = await insertNotification(app, viewer.id, { type: 'post_commented', actorId: actor.id, postId, commentId, ageSeconds: 1 });
    const system = await insertNotification(app, viewer.id, { type: 'hub_member_removed', ageSeconds: 30 });
    await insertNotification(app, other.id, { actorId: actor.id });

    const response = await list(viewer);
    expect(response.status).toBe(200);
    const { items, nextCursor, unreadCount: count } = response.body.data;
    expect(items.map((item: { id: string }) => item.id)).toEqual([newer, system, older]);
    expect(nextCursor).toBeNull();
    expect(count).toBe(3);
    const { rows } = await app.owner.query('select created_at from app.notifications where id = $1', [newer]);
    expect(items[0]).toEqual({
      id: newer,
      type: 'post_commented',
      createdAt: rows[0].created_at.toISOString(),
      isRead: false,
      actor: { id: actor.id, username: actor.username, fullName: 'Test Person', profilePhotoUrl: null },
      postId,
      commentId,
      hub_id: null,
      invitationId: null,
      joinRequestId: null,
    });
    expect(items[0].createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(items[1].actor).toBeNull();
    expect(JSON.stringify(response.body)).not.toContain('phone');
  });

  it('gives an anonymous user an empty list', async () => {
    const anonymous = await anonymousUser(app);
    const response = await list(anonymous);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ items: [], nextCursor: null, unreadCount: 0 });
  });

  it('pages by cursor with no repeat and no skip, also across equal timestamps and while rows are added', async () => {
    const viewer = await userAtLevel(app, 1);
    const ids: string[] = [];
    for (let age = 10; age >= 6; age -= 1) ids.push(await insertNotification(app, viewer.id, { ageSeconds: age }));
    // Three rows written by one transaction share created_at (now()): the id breaks the tie.
    const { rows } = await app.owner.query(
      `insert into app.notifications (recipient_id, type, created_at)
       select $1, 'user_followed', now() - interval '5 seconds' from generate_series(1, 3) returning id`,
      [viewer.id],
    );
    const tied = rows
      .map((row) => row.id as string)
      .sort()
      .reverse();
    const expected = [...tied, ...[...ids].reverse()];

    const first = await list(viewer, '?limit=3');
    expect(first.body.data.items.map((item: { id: string }) => item.id)).toEqual(expected.slice(0, 3));
    // Rows added while paging (newer than every page) change no later page.
    await insertNotification(app, viewer.id);
    await insertNotification(app, viewer.id);
    const seen = [...first.body.data.items.map((item: { id: string }) => item.id)];
    let cursor = first.body.data.nextCursor;
    while (cursor) {
      const page = await list(viewer, `?limit=1&cursor=${cursor}`);
      seen.push(...page.body.data.items.map((item: { id: string }) => item.id));
      cursor = page.body.data.nextCursor;
    }
    expect(seen).toEqual(expected);
  });

  it('defaults to 20 rows and accepts limit 1 to 50 only', async () => {
    const viewer = await userAtLevel(app, 1);
    await app.owner.query(
      `insert into app.notifications (recipient_id, type, created_at)
       select $1, 'user_followed', now() - make_interval(secs => g) from generate_series(1, 55) g`,
      [viewer.id],
    );
    const byDefault = await list(viewer);
    expect(byDefault.body.data.items).toHaveLength(20);
    expect(byDefault.body.data.unreadCount).toBe(55);
    expect((await list(viewer, '?limit=50')).body.data.items).toHaveLength(50);
    expect((await allPages(viewer, 'limit=50')).flat()).toHaveLength(55);
    for (const limit of ['0', '51', 'x', '-1', '1.5']) {
      const response = await list(viewer, `?limit=${limit}`);
      expect(response.status, limit).toBe(422);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
      expect(response.body.error.details.fields).toHaveProperty('limit');
    }
  });

  it('refuses a cursor that does not decode or was not issued here with 422', async () => {
    const viewer = await userAtLevel(app, 1);
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of ['%%%', 'abc', forged(['x', 'y']), forged([1.5, randomUUID()]), forged([1, 'not-a-uuid']), forged([1])]) {
      const response = await list(viewer, `?cursor=${cursor}`);
      expect(response.status, cursor).toBe(422);
      expect(response.body.error.details.fields).toHaveProperty('cursor');
    }
  });

  it('lists unread rows only with unreadOnly=true, and refuses other values', async () => {
    const viewer = await userAtLevel(app, 1);
    const unread = await insertNotification(app, viewer.id, { ageSeconds: 2 });
    const read = await insertNotification(app, viewer.id, { ageSeconds: 1, readAt: new Date() });
    expect((await list(viewer, '?unreadOnly=true')).body.data.items.map((item: { id: string }) => item.id)).toEqual([unread]);
    const all = (await list(viewer, '?unreadOnly=false')).body.data;
    expect(all.items.map((item: { id: string; isRead: boolean }) => [item.id, item.isRead])).toEqual([
      [read, true],
      [unread, false],
    ]);
    expect(all.unreadCount).toBe(1);
    for (const value of ['yes', '1', 'TRUE']) {
      const response = await list(viewer, `?unreadOnly=${value}`);
      expect(response.status).toBe(422);
      expect(response.body.error.details.fields).toHaveProperty('unreadOnly');
    }
  });

  it('pages unread rows only, with the unread count of every visible row', async () => {
    const viewer = await userAtLevel(app, 1);
    for (let age = 8; age >= 1; age -= 1)
      await insertNotification(app, viewer.id, { ageSeconds: age, readAt: age % 2 ? new Date() : null });
    const pages = await allPages(viewer, 'unreadOnly=true&limit=3');
    expect(pages.map((page) => page.length)).toEqual([3, 1]);
    expect((await list(viewer, '?unreadOnly=true&limit=1')).body.data.unreadCount).toBe(4);
  });
});

describe('hub-scoped rows (spec 6.3 rules 3 and 5)', () => {
  let hub: TestHub;
  let member: TestUser;
  let outsider: TestUser;
  beforeAll(async () => {
    hub = await createHub(app, await userAtLevel(app, 4));
    member = await userAtLevel(app, 4);
    outsider = await userAtLevel(app, 4);
    await addMember(app, hub, member);
  });

  it('shows a hub row to an active member of that hub', async () => {
    const before = await unreadCount(member);
    const row = await insertNotification(app, member.id, { type: 'hub_post_created', hubId: hub.id, postId: randomUUID() });
    const item = (await list(member)).body.data.items.find((listed: { id: string }) => listed.id === row);
    expect(item).toMatchObject({ id: row, type: 'hub_post_created', hub_id: hub.id });
    expect(await unreadCount(member)).toBe(before + 1);
  });

  it('hides it from a recipient who is not an active member: list, count, mark-one and mark-all', async () => {
    const global = await insertNotification(app, outsider.id, { ageSeconds: 5 });
    const hidden = await insertNotification(app, outsider.id, { type: 'hub_post_created', hubId: hub.id, postId: randomUUID() });
    const unknownHub = await insertNotification(app, outsider.id, { type: 'hub_role_changed', hubId: randomUUID() });
    const listed = await list(outsider);
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toEqual([global]);
    expect(listed.body.data.unreadCount).toBe(1);
    expect((await list(outsider, '?unreadOnly=true')).body.data.items).toHaveLength(1);
    expect(await unreadCount(outsider)).toBe(1);

    // Mark-one: an own hidden row is no 404, is not updated, and stays unread.
    expect((await markRead(outsider, { notificationIds: [hidden] })).body.data).toEqual({ updated: 0 });
    expect((await markRead(outsider, { notificationIds: [hidden, unknownHub, global] })).body.data).toEqual({ updated: 1 });
    expect(await readAt(hidden)).toBeNull();
    expect(await readAt(unknownHub)).toBeNull();
    // Mark-all: visible rows only.
    await insertNotification(app, outsider.id);
    expect((await markRead(outsider, { markAll: true })).body.data).toEqual({ updated: 1 });
    expect(await readAt(hidden)).toBeNull();
    expect(await readAt(unknownHub)).toBeNull();
    expect(await unreadCount(outsider)).toBe(0);
  });

  it('hides the rows of a hub once the recipient is removed, keeps them unread, and shows them again on rejoining', async () => {
    const leaver = await userAtLevel(app, 4);
    await addMember(app, hub, leaver);
    await markRead(leaver, { markAll: true }); // the invitation's own notification
    const row = await insertNotification(app, leaver.id, { type: 'post_shared_to_hub', hubId: hub.id, postId: randomUUID() });
    expect(await unreadCount(leaver)).toBe(1);
    const removed = await app.post(`/hubs/${hub.id}/members/${leaver.id}/remove`, undefined, { token: hub.owner.token });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect((await list(leaver)).body.data.items.map((item: { id: string }) => item.id)).not.toContain(row);
    // Only the global hub_member_removed row is visible to mark.
    expect((await markRead(leaver, { markAll: true })).body.data).toEqual({ updated: 1 });
    expect(await readAt(row)).toBeNull();
    await addMember(app, hub, leaver);
    const again = (await list(leaver)).body.data.items.find((item: { id: string }) => item.id === row);
    expect(again).toMatchObject({ id: row, isRead: false });
  });
});

describe('PATCH /notifications/read', () => {
  it('marks the listed rows read and answers how many changed', async () => {
    const viewer = await userAtLevel(app, 1);
    const [a, b, c] = [
      await insertNotification(app, viewer.id),
      await insertNotification(app, viewer.id),
      await insertNotification(app, viewer.id),
    ];
    const response = await markRead(viewer, { notificationIds: [a, b, a] });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ updated: 2 });
    expect(await readAt(a)).toBeInstanceOf(Date);
    expect(await readAt(c)).toBeNull();
    expect(await unreadCount(viewer)).toBe(1);
    expect((await markRead(viewer, { notificationIds: [a], markAll: false })).body.data).toEqual({ updated: 0 });
    const listed = (await list(viewer)).body.data.items;
    expect(listed.map((item: { id: string; isRead: boolean }) => [item.id, item.isRead]).sort()).toEqual(
      [
        [a, true],
        [b, true],
        [c, false],
      ].sort(),
    );
  });

  it('marks every visible unread row with markAll', async () => {
    const viewer = await userAtLevel(app, 1);
    await insertNotification(app, viewer.id);
    await insertNotification(app, viewer.id);
    await insertNotification(app, viewer.id, { readAt: new Date() });
    expect((await markRead(viewer, { markAll: true })).body.data).toEqual({ updated: 2 });
    expect((await markRead(viewer, { markAll: true })).body.data).toEqual({ updated: 0 });
    expect(await unreadCount(viewer)).toBe(0);
  });

  it("answers 404 NOTIFICATION_NOT_FOUND for unknown ids and other users' ids, and changes nothing", async () => {
    const viewer = await userAtLevel(app, 1);
    const other = await userAtLevel(app, 1);
    const own = await insertNotification(app, viewer.id);
    const theirs = await insertNotification(app, other.id);
    for (const ids of [[theirs], [own, theirs], [own, randomUUID()], [own, 'not-a-uuid'], ['']]) {
      const response = await markRead(viewer, { notificationIds: ids });
      expect(response.status, JSON.stringify(ids)).toBe(404);
      expect(response.body.error).toEqual({ code: 'NOTIFICATION_NOT_FOUND', message: 'Notification does not exist.', details: {} });
    }
    expect(await readAt(own)).toBeNull();
    expect(await readAt(theirs)).toBeNull();
    expect(await unreadCount(viewer)).toBe(1);
  });

  it('refuses bodies without exactly one of a non-empty list or markAll: true with 422', async () => {
    const viewer = await userAtLevel(app, 1);
    const own = await insertNotification(app, viewer.id);
    const cases: [unknown, string][] = [
      [{}, 'notificationIds'],
      [{ markAll: false }, 'notificationIds'],
      [{ notificationIds: [] }, 'notificationIds'],
      [{ notificationIds: [own], markAll: true }, 'markAll'],
      [{ notificationIds: own }, 'notificationIds'],
      [{ notificationIds: [1] }, 'notificationIds.0'],
      [{ markAll: 'true' }, 'markAll'],
      [{ markAll: true, extra: 1 }, 'extra'],
      [{ notificationIds: Array.from({ length: 101 }, () => randomUUID()) }, 'notificationIds'],
    ];
    for (const [body, field] of cases) {
      const response = await markRead(viewer, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
      expect(response.body.error.details.fields, JSON.stringify(body)).toHaveProperty([field]);
    }
    expect(await readAt(own)).toBeNull();
  });

  it('checks the body before the ids: an invalid body with an unknown id is 422', async () => {
    const viewer = await userAtLevel(app, 1);
    const response = await markRead(viewer, { notificationIds: [randomUUID()], markAll: true });
    expect(response.status).toBe(422);
  });
});
