// lastActivityAt of GET /users/me/hubs is read from the members' own activity rows (issue 12): a
// vote on a hub post moves its hub to the top without writing the hub's row, which every voter of
// the hub would otherwise queue on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { addMember, createHub } from '../helpers/hubs.ts';
import { createPost, slider, vote } from '../helpers/posts.ts';
import { userAtLevel } from '../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

async function myHubs(token: string): Promise<{ id: string; lastActivityAt: string }[]> {
  const response = await app.get('/users/me/hubs', { token });
  expect(response.status).toBe(200);
  return response.body.data.items;
}

describe('hub activity', () => {
  it('moves a hub to the top of GET /users/me/hubs when a member votes on its post, leaving the hub row alone', async () => {
    const owner = await userAtLevel(app, 4);
    const member = await userAtLevel(app, 4);
    const quiet = await createHub(app, owner);
    const busy = await createHub(app, owner);
    await addMember(app, busy, member);
    const post = await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [busy.id] });
    await addMember(app, quiet, member);
    const before = await myHubs(member.token);
    expect(before.map((h) => h.id)).toEqual([quiet.id, busy.id]);
    const hubRow = await app.owner.query('select last_activity_at, xmin::text from app.hubs where id = $1', [busy.id]);

    expect((await vote(app, member, post.id, 'left')).status).toBe(201);
    const after = await myHubs(member.token);
    expect(after.map((h) => h.id)).toEqual([busy.id, quiet.id]);
    const busyAfter = after.find((h) => h.id === busy.id) as { lastActivityAt: string };
    expect(Date.parse(busyAfter.lastActivityAt)).toBeGreaterThan(Date.parse(before.find((h) => h.id === busy.id)?.lastActivityAt as string));
    const voted = await app.owner.query('select voted_at from app.vote_receipts where post_id = $1 and user_id = $2', [post.id, member.id]);
    expect(busyAfter.lastActivityAt).toBe(voted.rows[0].voted_at.toISOString());
    expect((await app.owner.query('select last_activity_at, xmin::text from app.hubs where id = $1', [busy.id])).rows).toEqual(hubRow.rows);
  });
});
