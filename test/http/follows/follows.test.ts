// Follows, follower/following lists and their counters (spec 4.4; contract section 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { anonymousUser, nextHandle, userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const follow = (user: TestUser, target: string) => app.post(`/users/${target}/follow`, undefined, { token: user.token });
const unfollow = (user: TestUser, target: string) => app.delete(`/users/${target}/follow`, { token: user.token });
async function counts(user: TestUser) {
  return (await app.get(`/users/by-username/${user.username}`)).body.data.counts;
}

describe('POST /users/{userId}/follow', () => {
  it('follows, counts, and notifies the followed user', async () => {
    const [alice, bob] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    const response = await follow(alice, bob.id);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ following: true });
    expect(await counts(bob)).toMatchObject({ followers: 1, following: 0 });
    expect(await counts(alice)).toMatchObject({ followers: 0, following: 1 });
    const { rows } = await app.owner.query('select type, actor_id, hub_id from app.notifications where recipient_id = $1', [bob.id]);
    expect(rows).toEqual([{ type: 'user_followed', actor_id: alice.id, hub_id: null }]);
    const profile = await app.get(`/users/by-username/${bob.username}`, { token: alice.token });
    expect(profile.body.data.viewer).toEqual({ follows: true, followedBy: false, blocked: false });
  });

  it('answers a repeat with 409 ALREADY_FOLLOWING and changes nothing', async () => {
    const [alice, bob] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await follow(alice, bob.id);
    const again = await follow(alice, bob.id);
    expect(again.status).toBe(409);
    expect(again.body.error).toEqual({ code: 'ALREADY_FOLLOWING', message: 'Already following user.', details: {} });
    expect((await counts(bob)).followers).toBe(1);
    const { rows } = await app.owner.query('select count(*)::int as n from app.notifications where recipient_id = $1', [bob.id]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses self (422), unknown and profile-less users (404), level 1 (403) and no token (401)', async () => {
    const alice = await userAtLevel(app, 2);
    const self = await follow(alice, alice.id);
    expect(self.status).toBe(422);
    expect(self.body.error.code).toBe('CANNOT_FOLLOW_SELF');
    for (const target of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', (await anonymousUser(app)).id]) {
      const response = await follow(alice, target);
      expect(response.status, target).toBe(404);
      expect(response.body.error.code).toBe('USER_NOT_FOUND');
    }
    const anonymous = await anonymousUser(app);
    expect((await follow(anonymous, alice.id)).body.error.code).toBe('PROFILE_BASICS_REQUIRED');
    expect((await app.post(`/users/${alice.id}/follow`)).status).toBe(401);
  });

  it('keeps counters exact under concurrent follows, unfollows and crossed follows', async () => {
    const star = await userAtLevel(app, 2);
    const fans = await Promise.all(Array.from({ length: 24 }, () => userAtLevel(app, 2)));
    const results = await Promise.all(fans.map((fan) => follow(fan, star.id)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect((await counts(star)).followers).toBe(24);
    // Half unfollow while the other half follow back (A→B and B→A at once must not deadlock).
    const mixed = await Promise.all([
      ...fans.slice(0, 12).map((fan) => unfollow(fan, star.id)),
      ...fans.slice(12).map((fan) => follow(star, fan.id)),
    ]);
    expect(mixed.every((r) => r.status === 200)).toBe(true);
    expect(await counts(star)).toMatchObject({ followers: 12, following: 12 });
    const { rows } = await app.owner.query(
      `select (select count(*)::int from app.follows where followee_id = $1) as followers,
              (select count(*)::int from app.follows where follower_id = $1) as following`,
      [star.id],
    );
    expect(rows[0]).toEqual({ followers: 12, following: 12 });
  });
});

describe('DELETE /users/{userId}/follow', () => {
  it('unfollows, and is a 200 no-op when not following', async () => {
    const [alice, bob] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await follow(alice, bob.id);
    const response = await unfollow(alice, bob.id);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ following: false });
    expect((await counts(bob)).followers).toBe(0);
    expect((await unfollow(alice, bob.id)).body.data).toEqual({ following: false });
    expect((await counts(bob)).followers).toBe(0);
    expect((await unfollow(alice, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });
});

describe('GET /users/{userId}/followers and /following', () => {
  it("lists newest first with viewerFollows (false on the viewer's own row), paging without repeats", async () => {
    const star = await userAtLevel(app, 2);
    const fans: TestUser[] = [];
    for (let i = 0; i < 5; i += 1) {
      const fan = await userAtLevel(app, 2);
      await follow(fan, star.id);
      fans.push(fan);
    }
    const viewer = fans[0] as TestUser;
    await follow(viewer, (fans[3] as TestUser).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response: any = await app.get(`/users/${star.id}/followers?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        token: viewer.token,
      });
      expect(response.status).toBe(200);
      for (const item of response.body.data.items) {
        expect(Object.keys(item).sort()).toEqual(['fullName', 'id', 'profilePhotoUrl', 'username', 'viewerFollows']);
        expect(item.viewerFollows).toBe(item.id === (fans[3] as TestUser).id);
        seen.push(item.id);
      }
      cursor = response.body.data.nextCursor;
      pages += 1;
      if (pages === 1) await follow(await userAtLevel(app, 2), star.id); // added while paging
    } while (cursor);
    expect(seen).toEqual(fans.map((f) => f.id).reverse());
    expect(pages).toBe(3);

    const following = await app.get(`/users/${viewer.id}/following`, { token: viewer.token });
    expect(following.body.data.items.map((i: any) => i.id)).toEqual([(fans[3] as TestUser).id, star.id]);
  });

  it('searches the list by handle prefix or name word, case- and accent-insensitive', async () => {
    const star = await userAtLevel(app, 2);
    const zoe = await userAtLevel(app, 2, nextHandle('zoe'));
    await app.patch('/users/me/profile', { fullName: 'Zoë Ålvarez' }, { token: zoe.token });
    const other = await userAtLevel(app, 2, nextHandle('other'));
    await follow(zoe, star.id);
    await follow(other, star.id);
    for (const q of ['ZOE', '@zoe', 'alv', 'Älvarez', 'zoë']) {
      const response = await app.get(`/users/${star.id}/followers?q=${encodeURIComponent(q)}`, { token: star.token });
      expect(
        response.body.data.items.map((i: any) => i.id),
        q,
      ).toEqual([zoe.id]);
    }
    const none = await app.get(`/users/${star.id}/followers?q=varez`, { token: star.token });
    expect(none.body.data.items).toEqual([]);
  });

  it('reads at most 1,000 rows of the list per page with q, and pages on to every match', async () => {
    const star = await userAtLevel(app, 2);
    const [early, late] = [await userAtLevel(app, 2, nextHandle('qscan')), await userAtLevel(app, 2, nextHandle('qscan'))];
    await follow(early, star.id);
    // 2,500 followers that do not match, made as the owner (the API would take minutes), then one that does.
    await app.owner.query(
      `with made as (
         insert into app.users (username, full_name, terms_accepted_at, terms_version, media_completed_at)
         select 'filler_' || $2::int || '_' || i, 'Filler Person', now(), 't', now() from generate_series(1, 2500) i returning id)
       insert into app.follows (follower_id, followee_id) select id, $1 from made`,
      [star.id, process.pid % 100000],
    );
    await follow(late, star.id);
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const response: any = await app.get(`/users/${star.id}/followers?q=qscan&limit=5${cursor ? `&cursor=${cursor}` : ''}`, {
        token: star.token,
      });
      expect(response.status).toBe(200);
      pages.push(response.body.data.items.map((i: any) => i.id));
      cursor = response.body.data.nextCursor;
    } while (cursor && pages.length < 10);
    // Newest first: the late match and 999 fillers, 1,000 fillers, 501 fillers and the early match.
    expect(pages).toEqual([[late.id], [], [early.id]]);
    const none = await app.get(`/users/${star.id}/followers?q=zzzz`, { token: star.token });
    expect(none.body.data.items).toEqual([]);
    expect(none.body.data.nextCursor).not.toBeNull();
  });

  it('validates paging and answers unknown users with 404', async () => {
    const user = await userAtLevel(app, 2);
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'cursor=!!!', `cursor=${Buffer.from('{}').toString('base64url')}`]) {
      const response = await app.get(`/users/${user.id}/followers?${query}`, { token: user.token });
      expect(response.status, query).toBe(422);
    }
    expect((await app.get(`/users/${user.id}/followers?limit=100`, { token: user.token })).status).toBe(200);
    expect((await app.get('/users/00000000-0000-4000-8000-000000000000/following', { token: user.token })).body.error.code).toBe(
      'USER_NOT_FOUND',
    );
    expect((await app.get(`/users/${user.id}/followers`)).status).toBe(401);
  });
});
