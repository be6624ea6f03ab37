// People search (contract section 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let zoe: TestUser;
let zoey: TestUser;
let bea: TestUser;
beforeAll(async () => {
  app = await startTestApp();
  zoe = await userAtLevel(app, 3, 'zoe');
  zoey = await userAtLevel(app, 2, 'zoey_k');
  bea = await userAtLevel(app, 2, 'bea_sun');
  await app.patch('/users/me/profile', { fullName: 'Zoë Ålvarez', bio: 'Hi' }, { token: zoe.token });
  await app.patch('/users/me/profile', { fullName: 'Beatriz Zoé Núñez' }, { token: bea.token });
});
afterAll(() => app.close());

const ids = (response: any) => response.body.data.items.map((i: any) => i.id);

describe('GET /search/users', () => {
  it('matches handle prefixes and name words, case- and accent-insensitive, exact handle first', async () => {
    expect(ids(await app.get('/search/users?q=ZOE'))).toEqual([zoe.id, zoey.id, bea.id]);
    expect(ids(await app.get('/search/users?q=%40zoey'))).toEqual([zoey.id]);
    expect(ids(await app.get(`/search/users?q=${encodeURIComponent('nunez')}`))).toEqual([bea.id]);
    expect(ids(await app.get(`/search/users?q=${encodeURIComponent('ÁLV')}`))).toEqual([zoe.id]);
    expect(ids(await app.get('/search/users?q=varez'))).toEqual([]);
    expect(ids(await app.get('/search/users?q=%25'))).toEqual([]);
    expect(ids(await app.get('/search/users?q='))).toEqual([]);
  });

  it('exposes only the public fields, and viewerFollows only with a token', async () => {
    const anonymous = await app.get('/search/users?q=zoe');
    const item = anonymous.body.data.items[0];
    expect(item).toEqual({ id: zoe.id, name: 'Zoë Ålvarez', username: 'zoe', profilePhotoUrl: null, bio: 'Hi' });
    const viewer = await userAtLevel(app, 2);
    await app.post(`/users/${zoe.id}/follow`, undefined, { token: viewer.token });
    const withToken = await app.get('/search/users?q=zoe', { token: viewer.token });
    expect(withToken.body.data.items.map((i: any) => [i.id, i.viewerFollows])).toEqual([
      [zoe.id, true],
      [zoey.id, false],
      [bea.id, false],
    ]);
    const self = await app.get('/search/users?q=zoe', { token: zoe.token });
    expect(self.body.data.items[0]).toMatchObject({ id: zoe.id, viewerFollows: false });
    expect((await app.get('/search/users?q=zoe', { token: 'invalid' })).status).toBe(401);
  });

  it('never finds anyone by phone number, and never returns one', async () => {
    const phone = zoe.phone?.e164 as string;
    for (const q of [phone, phone.slice(1), phone.slice(-7)]) {
      const response = await app.get(`/search/users?q=${encodeURIComponent(q)}`);
      expect(response.body.data.items, q).toEqual([]);
    }
    const response = await app.get('/search/users?q=z');
    expect(response.text).not.toContain(phone.slice(2));
  });

  it('leaves out users without a public profile', async () => {
    const anonymous = await anonymousUser(app);
    const response = await app.get(`/search/users?q=${anonymous.id.slice(0, 8)}`);
    expect(response.body.data.items).toEqual([]);
  });

  it('lists a user whose name has several matching words once, and matches queries of several words as typed', async () => {
    const [ann, other] = [await userAtLevel(app, 2, 'qq_ann'), await userAtLevel(app, 2, 'qq_other')];
    await app.patch('/users/me/profile', { fullName: 'Ånn Annika-Berg' }, { token: ann.token });
    await app.patch('/users/me/profile', { fullName: 'Annika Lund' }, { token: other.token });
    expect(ids(await app.get('/search/users?q=ann'))).toEqual([ann.id, other.id]);
    expect(ids(await app.get(`/search/users?q=${encodeURIComponent('annika-b')}`))).toEqual([ann.id]);
    expect(ids(await app.get(`/search/users?q=${encodeURIComponent('ann annika')}`))).toEqual([ann.id]);
    expect(ids(await app.get(`/search/users?q=${encodeURIComponent('ann berg')}`))).toEqual([]);
    expect(ids(await app.get(`/search/users?q=${encodeURIComponent('annika l')}`))).toEqual([other.id]);
    // Renamed: the old words no longer find the user, the new ones do.
    await app.patch('/users/me/profile', { fullName: 'Otto Lund' }, { token: ann.token });
    expect(ids(await app.get('/search/users?q=ann'))).toEqual([other.id]);
    expect(ids(await app.get('/search/users?q=otto'))).toEqual([ann.id]);
    // Paging one at a time through handle and name matches.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await app.get(`/search/users?q=lund&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...ids(page));
      cursor = page.body.data.nextCursor;
    } while (cursor && seen.length < 5);
    expect(seen.sort()).toEqual([ann.id, other.id].sort());
  });

  it('pages with an opaque cursor and validates limit', async () => {
    const first = await app.get('/search/users?q=zoe&limit=2');
    expect(ids(first)).toEqual([zoe.id, zoey.id]);
    const second = await app.get(`/search/users?q=zoe&limit=2&cursor=${first.body.data.nextCursor}`);
    expect(ids(second)).toEqual([bea.id]);
    expect(second.body.data.nextCursor).toBeNull();
    expect((await app.get('/search/users?q=zoe&limit=51')).status).toBe(422);
    expect((await app.get('/search/users?q=zoe&cursor=nope')).status).toBe(422);
  });
});
