// The counters the API shows (migrations/frozen/0220): after a burst of concurrent writes and deletes
// through the API, every kept counter equals a recount of its rows (app_private.counter_drift, the
// reconciliation check), and the API shows the recounted numbers. A write adds to a slot row of its
// own, never to the counted row, so writers of one popular subject do not queue on that row's lock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub, type TestHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { asViewer } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let author: TestUser;
let crowd: TestUser[];
let hub: TestHub;
beforeAll(async () => {
  [app, author] = await appWithUsers(4);
  crowd = await Promise.all(Array.from({ length: 10 }, () => userAtLevel(app, 4)));
  hub = await createHub(app, author);
}, 60_000);
afterAll(() => app.close());

const drift = async () => (await app.owner.query('select counter, subject, kept, counted from app_private.counter_drift()')).rows;
const ok = (status: number) => expect([200, 201]).toContain(status);

describe('counters under concurrent writes and deletes', () => {
  it('agree with a recount of the rows, and the API shows the recounted numbers', async () => {
    const post = await createPost(app, author);
    const root = (await app.post(`/posts/${post.id}/comments`, { text: 'root' }, { token: author.token })).body.data;
    const discussionPost = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
    const discussion = (await app.owner.query('select id from app.hub_discussions where post_id = $1', [discussionPost.id])).rows[0].id;
    const thread = (await app.post(`/hubs/${hub.id}/discussions/${discussion}/messages`, { text: 'thread' }, { token: author.token })).body
      .data;
    const blockedFan = await userAtLevel(app, 2);
    ok((await app.post(`/users/${author.id}/follow`, undefined, { token: blockedFan.token })).status);

    // Everyone at once: comments, replies, follows, reposts, posts of their own, joins and messages.
    const comments: { id: string; by: TestUser; reply: boolean }[] = [];
    const reposts: { id: string; by: TestUser }[] = [];
    const ownPosts: { id: string; by: TestUser }[] = [];
    const comment = async (user: TestUser, reply: boolean) => {
      const body = reply ? { text: 'reply', parentCommentId: root.id } : { text: 'comment' };
      const response = await app.post(`/posts/${post.id}/comments`, body, { token: user.token });
      ok(response.status);
      comments.push({ id: response.body.data.id, by: user, reply });
    };
    await Promise.all(
      crowd.flatMap((user) => [
        comment(user, false),
        comment(user, false),
        comment(user, true),
        app.post(`/users/${author.id}/follow`, undefined, { token: user.token }).then((r) => ok(r.status)),
        app.post(`/posts/${post.id}/reposts`, { thoughtText: 'again', visibility: 'public' }, { token: user.token }).then((r) => {
          ok(r.status);
          reposts.push({ id: r.body.data.id, by: user });
        }),
        app.post('/posts', { thoughtText: 'mine', visibility: 'public' }, { token: user.token }).then((r) => {
          ok(r.status);
          ownPosts.push({ id: r.body.data.id, by: user });
        }),
        addMember(app, hub, user).then(async () =>
          ok(
            (
              await app.post(
                `/hubs/${hub.id}/discussions/${discussion}/messages`,
                { text: 'hello', parentMessageId: thread.id },
                { token: user.token },
              )
            ).status,
          ),
        ),
      ]),
    );
    // Half of it taken back at once: every other comment and reply, follow, repost, post and
    // membership, and a block that removes a follow in the same statement.
    const half = crowd.filter((_, i) => i % 2 === 0);
    const deletedComments = comments.filter((_, i) => i % 2 === 0);
    const deletedReposts = reposts.filter((_, i) => i % 2 === 0);
    const deletedPosts = ownPosts.filter((_, i) => i % 2 === 0);
    await Promise.all([
      ...deletedComments.map((c) => app.delete(`/comments/${c.id}`, { token: c.by.token }).then((r) => ok(r.status))),
      ...half.map((user) => app.delete(`/users/${author.id}/follow`, { token: user.token }).then((r) => ok(r.status))),
      ...[...deletedReposts, ...deletedPosts].map((p) => app.delete(`/posts/${p.id}`, { token: p.by.token }).then((r) => ok(r.status))),
      ...half.map((user) => app.delete(`/hubs/${hub.id}/membership`, { token: user.token }).then((r) => ok(r.status))),
      app.post(`/users/${blockedFan.id}/block`, undefined, { token: author.token }).then((r) => ok(r.status)),
    ]);

    expect(await drift()).toEqual([]);
    const card = (await app.get(`/posts/${post.id}`, { token: author.token })).body.data;
    expect(card.commentCount).toBe(1 + comments.length - deletedComments.length);
    expect(card.repostCount).toBe(reposts.length - deletedReposts.length);
    const roots = (await app.get(`/posts/${post.id}/comments?limit=100`, { token: author.token })).body.data.items;
    const liveReplies = comments.filter((c) => c.reply && !deletedComments.includes(c)).length;
    expect(roots.find((c: any) => c.id === root.id).replyCount).toBe(liveReplies);
    const profile = (await app.get(`/users/by-username/${author.username}`)).body.data;
    expect(profile.counts).toEqual({ followers: crowd.length - half.length, following: 0, posts: 2 });
    for (const user of crowd) {
      const counts = (await app.get(`/users/by-username/${user.username}`)).body.data.counts;
      const posts =
        ownPosts.filter((p) => p.by === user && !deletedPosts.includes(p)).length +
        reposts.filter((p) => p.by === user && !deletedReposts.includes(p)).length;
      expect(counts).toEqual({ followers: 0, following: half.includes(user) ? 0 : 1, posts });
    }
    expect((await app.get(`/hubs/${hub.id}`, { token: author.token })).body.data.memberCount).toBe(1 + crowd.length - half.length);
    const messages = (await app.get(`/hubs/${hub.id}/discussions/${discussion}/messages`, { token: author.token })).body.data.items;
    expect(messages).toMatchObject([{ id: thread.id, replyCount: crowd.length }]);
  }, 60_000);

  it('reports a counter that differs from its rows, and the rebuild sets it right', async () => {
    const post = await createPost(app, author);
    await app.post(`/posts/${post.id}/comments`, { text: 'one' }, { token: author.token });
    await app.owner.query(
      `insert into app_private.counters (counter, subject, slot, n) values ('post_comments', $1, 15, 2)
                           on conflict (counter, subject, slot) do update set n = app_private.counters.n + 2`,
      [post.id],
    );
    await app.owner.query(`update app.hub_discussion_stats set message_count = message_count + 1`);
    const found = await drift();
    expect(found).toContainEqual({ counter: 'post_comments', subject: post.id, kept: 3, counted: 1 });
    // Every discussion's kept count is one above its rows, and no other discussion drifts.
    const { rows: stats } = await app.owner.query<{ subject: string; kept: number }>(
      'select discussion_id as subject, message_count::int as kept from app.hub_discussion_stats',
    );
    expect(stats.length).toBeGreaterThan(0);
    const sortBySubject = <T extends { subject: string }>(rows: T[]) => [...rows].sort((a, b) => (a.subject < b.subject ? -1 : 1));
    expect(sortBySubject(found.filter((row) => row.counter === 'discussion_messages'))).toEqual(
      sortBySubject(stats).map((row) => ({ counter: 'discussion_messages', subject: row.subject, kept: row.kept, counted: row.kept - 1 })),
    );
    expect((await app.get(`/posts/${post.id}`, { token: author.token })).body.data.commentCount).toBe(3);
    await app.owner.query('select app_private.rebuild_counters()');
    expect(await drift()).toEqual([]);
    expect((await app.get(`/posts/${post.id}`, { token: author.token })).body.data.commentCount).toBe(1);
  });

  it('spreads one subject over at most 16 slot rows', async () => {
    const post = await createPost(app, author);
    await Promise.all(
      crowd.flatMap((user) => [1, 2, 3].map(() => app.post(`/posts/${post.id}/comments`, { text: 'x' }, { token: user.token }))),
    );
    const { rows } = await app.owner.query(
      `select count(*)::int as slots, sum(n)::int as n from app_private.counters where counter = 'post_comments' and subject = $1`,
      [post.id],
    );
    expect(rows[0].n).toBe(30);
    expect(rows[0].slots).toBeGreaterThan(1);
    expect(rows[0].slots).toBeLessThanOrEqual(16);
  });
});

describe('writers of a popular subject', () => {
  /**
   * Runs `write` as `user` in an open transaction, then checks that another transaction can at once
   * take the lock an update of the counted row needs (`for no key update`: a counter kept in that row
   * would hold it until the writer commits; foreign keys only share its key).
   */
  async function rowStaysFree(user: TestUser, write: string, params: unknown[], lockSql: string, lockParams: unknown[]) {
    await asViewer(app, 'app_user', user.id, async (writer) => {
      await writer.query(write, params);
      const other = await app.owner.connect();
      try {
        await other.query('begin');
        await other.query(`set local lock_timeout = '200ms'`);
        const locked = await other.query(lockSql, lockParams);
        expect(locked.rowCount).toBe(1);
        await other.query('rollback');
      } finally {
        other.release();
      }
    });
  }

  it('leave the post, the comment, the user and the hub they count for unlocked', async () => {
    const post = await createPost(app, author);
    const root = (await app.post(`/posts/${post.id}/comments`, { text: 'root' }, { token: author.token })).body.data;
    const [fan, joiner] = [crowd[2] as TestUser, await userAtLevel(app, 4)];
    await rowStaysFree(
      fan,
      'select app.create_comment($1, $2, null)',
      [post.id, 'hi'],
      'select from app.posts where id = $1 for no key update',
      [post.id],
    );
    await rowStaysFree(
      fan,
      'select app.create_comment($1, $2, $3)',
      [post.id, 'hi', root.id],
      'select from app.comments where id = $1 for no key update',
      [root.id],
    );
    await rowStaysFree(
      fan,
      'select app.create_repost($1, $2, null, null, null, $3, null)',
      [post.id, 'again', 'public'],
      'select from app.posts where id = $1 for no key update',
      [post.id],
    );
    await rowStaysFree(joiner, 'select app.follow_user($1)', [author.id], 'select from app.users where id = $1 for no key update', [
      author.id,
    ]);
    const invitationId = (
      await app.post(
        `/hubs/${hub.id}/invitations`,
        { invitees: [{ phoneCountryCode: '+1', phoneNumber: (joiner.phone as any).phoneNumber }] },
        { token: author.token },
      )
    ).body.data.invitations[0].invitationId;
    await rowStaysFree(
      joiner,
      'select * from app.accept_invitation($1)',
      [invitationId],
      'select from app.hubs where id = $1 for no key update',
      [hub.id],
    );
  });
});
