// The hiding rule of deleted and suspended accounts (migrations/frozen/0261) tested in SQL as app_user and
// app_anonymous: once app_private.hide_account has run, the tables' own policies and the feed
// functions show nothing of the account to anyone else, and app_private.show_account brings back
// exactly what was there. The API roles cannot call either function nor read their tables.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { createPost } from '../../helpers/posts.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import type { TestUser } from '../../helpers/users.ts';
import { appWithUsers, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let viewer: TestUser;
let hidden: TestUser;
let postId: string;
let ownDeletedId: string;
beforeAll(async () => {
  [app, viewer, hidden] = await appWithUsers(4, 4);
  await hubWithMembers(app, viewer, hidden);
  postId = (await createPost(app, hidden)).id;
  ownDeletedId = (await createPost(app, hidden)).id;
  expect((await app.delete(`/posts/${ownDeletedId}`, { token: hidden.token })).status).toBe(200);
  expect((await app.post(`/posts/${postId}/comments`, { text: 'own comment' }, { token: hidden.token })).status).toBe(201);
  expect((await app.post(`/users/${hidden.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
});
afterAll(() => app.close());

const run = (user: TestUser | null, sql: string, params: unknown[] = []) =>
  asViewer(app, user ? 'app_user' : 'app_anonymous', user?.id ?? null, (c) => rowsOrError(c, sql, params));

async function visible(user: TestUser | null) {
  const one = async (sql: string) => ((await run(user, sql, [hidden.id])) as unknown[]).length;
  return {
    users: await one('select id from app.users where id = $1'),
    posts: await one('select id from app.posts where author_id = $1'),
    comments: await one('select id from app.comments where author_id = $1'),
    follows: user ? await one('select follower_id from app.follows where followee_id = $1 or follower_id = $1') : 0,
    memberships: user ? await one('select user_id from app.hub_memberships where user_id = $1') : 0,
    phones: user ? await one('select user_id from app.phone_identities where user_id = $1') : 0,
    profileFeed: await one(`select post_id from app.profile_feed($1, now(), now(), 'ffffffff-ffff-ffff-ffff-ffffffffffff', 20)`),
  };
}

describe('hidden accounts', () => {
  it('show nothing to other users or guests while hidden, and exactly what was there once shown again', async () => {
    const before = await visible(viewer);
    expect(before).toEqual({ users: 1, posts: 1, comments: 1, follows: 1, memberships: 1, phones: 1, profileFeed: 1 });
    const guestBefore = await visible(null);
    expect(guestBefore).toMatchObject({ users: 1, posts: 1, comments: 1 });

    await app.owner.query('select app_private.hide_account($1)', [hidden.id]);
    await app.owner.query(`update app_private.account_states set suspended_at = now() where user_id = $1`, [hidden.id]);
    expect(await visible(viewer)).toEqual({ users: 0, posts: 0, comments: 0, follows: 0, memberships: 0, phones: 0, profileFeed: 0 });
    expect(await visible(null)).toMatchObject({ users: 0, posts: 0, comments: 0, profileFeed: 0 });
    // Hiding twice changes nothing; showing with a reason left (the suspension) changes nothing.
    await app.owner.query('select app_private.hide_account($1)', [hidden.id]);
    expect((await app.owner.query('select app_private.show_account($1) as shown', [hidden.id])).rows[0].shown).toBe(false);
    expect(await visible(viewer)).toMatchObject({ users: 0, posts: 0 });

    await app.owner.query(`update app_private.account_states set suspended_at = null where user_id = $1`, [hidden.id]);
    expect((await app.owner.query('select app_private.show_account($1) as shown', [hidden.id])).rows[0].shown).toBe(true);
    expect(await visible(viewer)).toEqual(before);
    expect(await visible(null)).toEqual(guestBefore);
    // The post its author had deleted before stays deleted.
    expect(
      (await app.owner.query('select deleted_at is not null as deleted from app.posts where id = $1', [ownDeletedId])).rows[0].deleted,
    ).toBe(true);
    expect((await app.owner.query('select * from app_private.counter_drift()')).rows).toEqual([]);
  });

  it('are closed to the API roles: the functions and tables of the rule', async () => {
    for (const role of ['app_user', 'app_anonymous'] as const) {
      for (const sql of [
        'select app_private.hide_account($1)',
        'select app_private.show_account($1)',
        'select * from app_private.account_states where user_id = $1',
        'select * from app_private.hidden_rows where user_id = $1',
      ]) {
        expect(await asViewer(app, role, viewer.id, (c) => rowsOrError(c, sql, [hidden.id]))).toBe('42501');
      }
    }
  });
});
