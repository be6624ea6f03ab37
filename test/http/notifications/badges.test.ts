// Badges over HTTP (contract 12 "Badges"): GET /notifications/unread-count per hub through joins,
// removals and rejoining, and the list's unreadCount, the same number.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, type TestHub } from '../../helpers/hubs.ts';
import { insertNotification } from '../../helpers/notifications.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const badges = async (user: TestUser) => {
  const response = await app.get('/notifications/unread-count', { token: user.token });
  expect(response.status).toBe(200);
  const data = response.body.data as { unreadCount: number; hubUnreadCount: number; hubs: { hubId: string; unreadCount: number }[] };
  const listed = await app.get('/notifications?limit=1', { token: user.token });
  expect(listed.body.data.unreadCount, 'the list answers the same unreadCount').toBe(data.unreadCount);
  return { ...data, hubs: [...data.hubs].sort((a, b) => a.hubId.localeCompare(b.hubId)) };
};
const byHub = (...counts: [TestHub, number][]) =>
  counts.map(([hub, unreadCount]) => ({ hubId: hub.id, unreadCount })).sort((a, b) => a.hubId.localeCompare(b.hubId));

describe('GET /notifications/unread-count', () => {
  it('counts per hub, drops a hub at once when its member leaves, and counts it again on rejoining', async () => {
    const owner = await userAtLevel(app, 4);
    const [a, b] = [await createHub(app, owner), await createHub(app, owner)];
    const member = await userAtLevel(app, 4);
    await addMember(app, a, member);
    await addMember(app, b, member);
    expect((await app.patch('/notifications/read', { markAll: true }, { token: member.token })).status).toBe(200);
    expect(await badges(member)).toEqual({ unreadCount: 0, hubUnreadCount: 0, hubs: [] });

    for (const hub of [a, a, b]) await insertNotification(app, member.id, { type: 'hub_post_created', hubId: hub.id });
    await insertNotification(app, member.id, { type: 'user_followed' });
    expect(await badges(member)).toEqual({ unreadCount: 4, hubUnreadCount: 3, hubs: byHub([a, 2], [b, 1]) });

    const removed = await app.post(`/hubs/${a.id}/members/${member.id}/remove`, undefined, { token: owner.token });
    expect(removed.status).toBe(200);
    // A's rows are hidden at once; the removal itself is a global row.
    expect(await badges(member)).toEqual({ unreadCount: 3, hubUnreadCount: 1, hubs: byHub([b, 1]) });

    // Rejoining (its invitation is one more global row) shows A's rows again.
    await addMember(app, a, member);
    expect(await badges(member)).toEqual({ unreadCount: 6, hubUnreadCount: 3, hubs: byHub([a, 2], [b, 1]) });

    // Reading one hub's rows changes that hub's count only.
    const rows = (await app.get('/notifications?limit=50', { token: member.token })).body.data.items as {
      id: string;
      hub_id: string | null;
    }[];
    const inB = rows.filter((row) => row.hub_id === b.id).map((row) => row.id);
    expect((await app.patch('/notifications/read', { notificationIds: inB }, { token: member.token })).body.data).toEqual({ updated: 1 });
    expect(await badges(member)).toEqual({ unreadCount: 5, hubUnreadCount: 2, hubs: byHub([a, 2]) });
  });

  it('answers 401 without a token', async () => {
    expect((await app.get('/notifications/unread-count')).status).toBe(401);
  });
});
