// Feed eligibility tested directly in SQL, as the API roles run it: the feed functions return only
// what the viewer's sources and the posts policy allow, read membership at call time, and the
// tables and helpers behind them are closed to the API roles.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import type { TestHub } from '../../helpers/hubs.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let viewer: TestUser;
let author: TestUser;
let member: TestUser;
let outsider: TestUser;
let hub: TestHub;
const post: Record<string, string> = {};
beforeAll(async () => {
  [app, viewer, author, member, outsider] = await appWithUsers(4, 3, 4, 4);
  hub = await hubWithMembers(app, member, viewer);
  expect((await app.post(`/users/${author.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
  post.followed = (await createPost(app, author, slider)).id;
  post.locked = (await createPost(app, member, { visibility: 'private_locked_hub', hubIds: [hub.id] })).id;
  post.outsiders = (await createPost(app, outsider, slider)).id;
  expect((await vote(app, author, post.outsiders as string)).status).toBe(201);
  await app.owner.query('insert into app.default_feed_users (user_id) values ($1)', [outsider.id]);
});
afterAll(() => app.close());

const home = `select post_id, context::text from app.home_feed(now(), now(), 'ffffffff-ffff-ffff-ffff-ffffffffffff', 20)`;
const run = (user: TestUser | null, sql: string, params: unknown[] = []) =>
  asViewer(app, user ? 'app_user' : 'app_anonymous', user?.id ?? null, (c) => rowsOrError(c, sql, params));

describe('app.home_feed', () => {
  it('returns the viewer’s sources with their contexts', async () => {
    expect(await run(viewer, home)).toEqual([
      { post_id: post.outsiders, context: 'friend_interaction' },
      { post_id: post.locked, context: 'joined_hub_post' },
      { post_id: post.followed, context: 'followed_author' },
    ]);
  });

  it('gives anonymous callers the default feed users’ public posts only', async () => {
    expect(await run(null, home)).toEqual([{ post_id: post.outsiders, context: 'default_feed_user' }]);
  });

  it('reads membership at call time: a removed member loses the hub’s posts on the next call', async () => {
    expect(await run(viewer, home)).toContainEqual({ post_id: post.locked, context: 'joined_hub_post' });
    await app.owner.query('delete from app.hub_memberships where hub_id = $1 and user_id = $2', [hub.id, viewer.id]);
    try {
      expect((await run(viewer, home)) as { post_id: string }[]).not.toContainEqual(expect.objectContaining({ post_id: post.locked }));
    } finally {
      await app.owner.query('insert into app.hub_memberships (hub_id, user_id) values ($1, $2)', [hub.id, viewer.id]);
    }
  });

  it('never returns a post the posts policy hides', async () => {
    await app.owner.query('update app.posts set deleted_at = now() where id = $1', [post.followed]);
    try {
      expect(await run(viewer, 'select id from app.posts where id = $1', [post.followed])).toEqual([]);
      expect((await run(viewer, home)) as { post_id: string }[]).not.toContainEqual(expect.objectContaining({ post_id: post.followed }));
    } finally {
      await app.owner.query('update app.posts set deleted_at = null where id = $1', [post.followed]);
    }
  });
});

describe('app.home_feed over a large set of followed users (the time-ordered branch)', () => {
  it('gives the same sources and rules as for a small set', async () => {
    const fan = await userAtLevel(app, 2);
    const { rows: made } = await app.owner.query<{ id: string }>(
      `insert into app.users (username, full_name, terms_accepted_at, terms_version)
       select 'many_' || g || '_' || $1::text, 'Many', now(), 'x' from generate_series(1, 150) g returning id`,
      [fan.id.slice(0, 8)],
    );
    const many = made.map((row) => row.id);
    await app.owner.query('insert into app.follows (follower_id, followee_id) select $1, unnest($2::uuid[])', [fan.id, many]);
    const { rows: posts } = await app.owner.query<{ id: string; visibility: string }>(
      `insert into app.posts (author_id, thought_text, visibility, created_at)
       select a, 'x', v::app.post_visibility, now() - g * interval '1 minute'
       from unnest($1::uuid[], array['public', 'private_locked_hub', 'public_hub', 'public']) with ordinality t (a, v, g)
       returning id, visibility`,
      [many.slice(0, 4)],
    );
    // one of them votes (an activity event) on an outsider's post
    await app.owner.query(`insert into app.activity_events (actor_id, post_id, kind) values ($1, $2, 'post_voted')`, [
      many[10],
      post.outsiders,
    ]);
    const expected = posts
      .filter((row) => row.visibility !== 'private_locked_hub')
      .map((row) => ({ post_id: row.id, context: 'followed_author' }));
    expect(await run(fan, home)).toEqual([{ post_id: post.outsiders, context: 'friend_interaction' }, ...expected]);
  });
});

describe('app.hub_feed and app.profile_feed', () => {
  it('refuse non-members of the hub with HUB_MEMBERSHIP_REQUIRED', async () => {
    const message = await asViewer(app, 'app_user', outsider.id, (client) =>
      client.query(`select * from app.hub_feed($1, now(), now(), 'ffffffff-ffff-ffff-ffff-ffffffffffff', 20)`, [hub.id]).then(
        () => 'ok',
        (error: Error) => error.message,
      ),
    );
    expect(message).toBe('HUB_MEMBERSHIP_REQUIRED');
    expect(
      await run(member, `select post_id from app.hub_feed($1, now(), now(), 'ffffffff-ffff-ffff-ffff-ffffffffffff', 20)`, [hub.id]),
    ).toEqual([{ post_id: post.locked }]);
  });

  it('leave private_locked_hub posts out of the profile feed, even for members', async () => {
    expect(
      await run(member, `select post_id from app.profile_feed($1, now(), now(), 'ffffffff-ffff-ffff-ffff-ffffffffffff', 20)`, [member.id]),
    ).toEqual([]);
  });
});

describe('grants', () => {
  it('keep default feed users, activity and the feed internals away from user roles', async () => {
    for (const user of [viewer, null]) {
      expect(await run(user, 'select user_id from app.default_feed_users')).toBe('42501');
      expect(await run(user, 'select post_id from app.activity_events')).toBe('42501');
      expect(await run(user, 'select * from app_private.home_sources()')).toBe('42501');
      expect(await run(user, 'select app.add_default_feed_user($1)', [viewer.username])).toBe('42501');
    }
    expect(await run(null, `select * from app.hub_feed($1, now(), now(), 'ffffffff-ffff-ffff-ffff-ffffffffffff', 20)`, [hub.id])).toBe(
      '42501',
    );
  });

  it('let app_admin list them', async () => {
    const rows = await asViewer(app, 'app_admin', null, (client) => rowsOrError(client, 'select user_id from app.default_feed_users'));
    expect(rows).toEqual([{ user_id: outsider.id }]);
  });
});
