// The search words (migrations 0223, 0225): kept by triggers with every write of a user's or a
// hub's name, checked by app_private.search_word_drift (the reconciliation check: the words every
// name has now, against the kept ones) after a burst of concurrent renames, and found again by
// people and hub search under the final names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createHub, type TestHub } from '../../helpers/hubs.ts';
import { nextHandle, userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let users: TestUser[];
let owner: TestUser;
let hubs: TestHub[];
beforeAll(async () => {
  app = await startTestApp();
  users = await Promise.all(Array.from({ length: 8 }, () => userAtLevel(app, 2, nextHandle('sw'))));
  owner = await userAtLevel(app, 4);
  hubs = await Promise.all(Array.from({ length: 3 }, () => createHub(app, owner)));
}, 60_000);
afterAll(() => app.close());

const drift = async () => (await app.owner.query('select kind, id, kept, named from app_private.search_word_drift()')).rows;
const ids = (response: any) => response.body.data.items.map((item: any) => item.id);

describe('search words under concurrent renames', () => {
  it('agree with the names after a burst of renames, and search finds the final names', async () => {
    // Each user and hub renamed three times at once; whichever commits last is the name.
    await Promise.all([
      ...users.flatMap((user, i) =>
        ['Wordy Alpha', 'Wordy Beta-Gamma', `Wordy Final${i}`].map((fullName) =>
          app.patch('/users/me/profile', { fullName }, { token: user.token }),
        ),
      ),
      ...hubs.flatMap((hub, i) =>
        ['Quill First', 'Quill Second Words', `Quill Last${i}`].map((name) =>
          app.patch(`/hubs/${hub.id}`, { name }, { token: owner.token }),
        ),
      ),
    ]);
    expect(await drift()).toEqual([]);
    const { rows } = await app.owner.query<{ id: string; full_name: string }>('select id, full_name from app.users where id = any ($1)', [
      users.map((u) => u.id),
    ]);
    for (const row of rows) {
      const word = (row.full_name.split(/[^A-Za-z0-9]+/)[1] as string).toLowerCase();
      expect(ids(await app.get(`/search/users?q=wordy%20${word}&limit=50`)), row.full_name).toContain(row.id);
    }
    const named = await app.owner.query<{ id: string; name: string }>('select id, name from app.hubs where id = any ($1)', [
      hubs.map((h) => h.id),
    ]);
    for (const row of named.rows) {
      expect(ids(await app.get(`/search/hubs?q=${encodeURIComponent(row.name)}`, { token: owner.token })), row.name).toContain(row.id);
    }
  });

  it('reports words that differ from the names, and the rebuilds set them right', async () => {
    const [user, hub] = [users[0] as TestUser, hubs[0] as TestHub];
    await app.owner.query(`delete from app.user_name_words where user_id = $1`, [user.id]);
    await app.owner.query(`insert into app.hub_name_words (hub_id, word) values ($1, 'stale')`, [hub.id]);
    const found = await drift();
    expect(found.map((row) => [row.kind, row.id]).sort()).toEqual(
      [
        ['hub', hub.id],
        ['user', user.id],
      ].sort(),
    );
    expect(found.find((row) => row.kind === 'user')?.kept).toBeNull();
    await app.owner.query('select app_private.rebuild_user_name_words(), app_private.rebuild_hub_name_words()');
    expect(await drift()).toEqual([]);
  });
});
