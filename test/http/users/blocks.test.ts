// Blocks (spec 4.4; contract section 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const block = (user: TestUser, target: string) => app.post(`/users/${target}/block`, undefined, { token: user.token });

describe('POST /users/{userId}/block', () => {
  it('blocks (level 1 is enough), removes follows both ways, and notifies nobody', async () => {
    const [alice, bob] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await app.post(`/users/${bob.id}/follow`, undefined, { token: alice.token });
    await app.post(`/users/${alice.id}/follow`, undefined, { token: bob.token });
    const before = await app.owner.query('select count(*)::int as n from app.notifications');
    const response = await block(alice, bob.id);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ blocked: true });
    const { rows } = await app.owner.query('select count(*)::int as n from app.follows where $1 in (follower_id, followee_id)', [alice.id]);
    expect(rows[0].n).toBe(0);
    const after = await app.owner.query('select count(*)::int as n from app.notifications');
    expect(after.rows[0].n).toBe(before.rows[0].n);
    const counts = await app.owner.query(
      `select app_private.counter_value('user_followers', $1) as followers, app_private.counter_value('user_following', $1) as following`,
      [bob.id],
    );
    expect(counts.rows[0]).toEqual({ followers: 0, following: 0 });

    const anonymous = await anonymousUser(app);
    expect((await block(anonymous, bob.id)).status).toBe(200);
  });

  it('answers repeat (409), self (422), unknown (404) and no token (401)', async () => {
    const [alice, bob] = [await userAtLevel(app, 1), await userAtLevel(app, 2)];
    await block(alice, bob.id);
    const again = await block(alice, bob.id);
    expect(again.status).toBe(409);
    expect(again.body.error).toEqual({ code: 'ALREADY_BLOCKED', message: 'User is already blocked.', details: {} });
    const self = await block(alice, alice.id);
    expect(self.status).toBe(422);
    expect(self.body.error.code).toBe('CANNOT_BLOCK_SELF');
    expect((await block(alice, '00000000-0000-4000-8000-000000000000')).body.error.code).toBe('USER_NOT_FOUND');
    expect((await app.post(`/users/${bob.id}/block`)).status).toBe(401);
  });

  it('hides each user from the other: profile, follows, lists and search, with the answer of an unknown user', async () => {
    const [alice, bob, carol] = [await userAtLevel(app, 2), await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await app.post(`/users/${carol.id}/follow`, undefined, { token: bob.token });
    await block(alice, bob.id);
    for (const [viewer, target] of [
      [alice, bob],
      [bob, alice],
    ] as const) {
      expect((await app.get(`/users/by-username/${target.username}`, { token: viewer.token })).status).toBe(404);
      const followResponse = await app.post(`/users/${target.id}/follow`, undefined, { token: viewer.token });
      expect(followResponse.status).toBe(404);
      expect(followResponse.body.error.code).toBe('USER_NOT_FOUND');
      expect((await app.get(`/users/${target.id}/followers`, { token: viewer.token })).status).toBe(404);
      const search = await app.get(`/search/users?q=${target.username}`, { token: viewer.token });
      expect(search.body.data.items).toEqual([]);
    }
    // Carol's followers, seen by Alice, leave out Bob.
    const followers = await app.get(`/users/${carol.id}/followers`, { token: alice.token });
    expect(followers.body.data.items).toEqual([]);
    const forCarol = await app.get(`/users/${carol.id}/followers`, { token: carol.token });
    expect(forCarol.body.data.items.map((i: any) => i.id)).toEqual([bob.id]);
    // The blocked user may still block back.
    expect((await block(bob, alice.id)).status).toBe(200);
  });

  it('is enforced by the policies themselves (SQL)', async () => {
    const [alice, bob] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await block(alice, bob.id);
    const users = await asViewer(app, 'app_user', bob.id, (c) => rowsOrError(c, 'select id from app.users where id = $1', [alice.id]));
    expect(users).toEqual([]);
    const whoBlockedMe = await asViewer(app, 'app_user', bob.id, (c) => rowsOrError(c, 'select blocker_id from app.blocks'));
    expect(whoBlockedMe).toEqual([]);
    const mine = await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'select blocked_id from app.blocks'));
    expect(mine).toEqual([{ blocked_id: bob.id }]);
    const write = await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'delete from app.blocks returning blocked_id'));
    expect(write).toBe('42501');
  });
});

describe('DELETE /users/{userId}/block', () => {
  it('unblocks (visible again) and is a 200 no-op when not blocked', async () => {
    const [alice, bob] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await block(alice, bob.id);
    const response = await app.delete(`/users/${bob.id}/block`, { token: alice.token });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ blocked: false });
    expect((await app.get(`/users/by-username/${bob.username}`, { token: alice.token })).status).toBe(200);
    expect((await app.delete(`/users/${bob.id}/block`, { token: alice.token })).body.data).toEqual({ blocked: false });
  });
});
