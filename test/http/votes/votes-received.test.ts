// stats.votesReceived and stats.votesCast are maintained counters (migrations/frozen/0321): kept in
// counter slots by triggers on vote receipts and posts, checked by the reconciliation check
// (app_private.counter_drift) after concurrent votes, deletions and restores, and exact while a
// deletion and a vote on the same post race (each waits for the other's advisory lock).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let author: TestUser;
let crowd: TestUser[];
beforeAll(async () => {
  [app, author] = await appWithUsers(3);
  crowd = await Promise.all(Array.from({ length: 8 }, () => userAtLevel(app, 2)));
}, 60_000);
afterAll(() => app.close());

const drift = async () =>
  (
    await app.owner.query(
      `select counter, subject, kept, counted from app_private.counter_drift() where counter in ('user_votes_received', 'user_votes_cast')`,
    )
  ).rows;
const received = async (user: TestUser) => (await app.get(`/users/by-username/${user.username}`)).body.data.stats.votesReceived as number;
const recount = async (user: TestUser) =>
  (
    await app.owner.query<{ n: number }>(
      'select count(*)::int as n from app.vote_receipts r join app.posts p on p.id = r.post_id where p.author_id = $1 and p.deleted_at is null',
      [user.id],
    )
  ).rows[0]?.n;
const counterSlots = async (counter: string, subject: string) =>
  (
    await app.owner.query<{ n: number }>(
      `select coalesce(sum(n), 0)::int as n from app_private.counters where counter = $1::app_private.counter and subject = $2`,
      [counter, subject],
    )
  ).rows[0]?.n;

describe('votes received and cast', () => {
  it('count every vote on posts that are not deleted, through concurrent votes and deletions', async () => {
    const posts = await Promise.all(Array.from({ length: 6 }, () => createPost(app, author, slider)));
    const deleted = posts.slice(0, 2);
    // Every voter on every post, while the author deletes two of the posts.
    const statuses = await Promise.all([
      ...crowd.flatMap((voter, i) =>
        posts.map((post, j) => vote(app, voter, post.id, ['left', 'right'][(i + j) % 2]).then((r) => r.status)),
      ),
      ...deleted.map((post) => app.delete(`/posts/${post.id}`, { token: author.token }).then((r) => r.status)),
    ]);
    // A vote that reached a post before its deletion counted (201); one after it is a 404.
    expect(statuses.every((status) => status === 201 || status === 200 || status === 404)).toBe(true);
    const { rows } = await app.owner.query<{ n: number }>('select count(*)::int as n from app.vote_receipts where post_id = any ($1)', [
      posts.slice(2).map((p) => p.id),
    ]);
    expect(rows[0]?.n).toBe(crowd.length * 4);

    expect(await drift()).toEqual([]);
    expect(await received(author)).toBe(crowd.length * 4);
    expect(await recount(author)).toBe(crowd.length * 4);
    for (const voter of crowd) {
      const own = (await app.get('/users/me/profile', { token: voter.token })).body.data.stats;
      const cast = (await app.owner.query<{ n: number }>('select count(*)::int as n from app.vote_receipts where user_id = $1', [voter.id]))
        .rows[0]?.n;
      expect(own.votesCast).toBe(cast);
      // Another viewer never sees someone's votes cast.
      expect((await app.get(`/users/by-username/${voter.username}`, { token: author.token })).body.data.stats.votesCast).toBeNull();
    }
  }, 60_000);

  it('take a deleted post away and give a restored one back (hiding and showing an account)', async () => {
    const hidden = await userAtLevel(app, 3);
    const post = await createPost(app, hidden, slider);
    for (const voter of crowd.slice(0, 3)) expect((await vote(app, voter, post.id)).status).toBe(201);
    expect(await received(hidden)).toBe(3);
    await app.owner.query('select app_private.hide_account($1)', [hidden.id]);
    expect(await counterSlots('user_votes_received', hidden.id)).toBe(0);
    expect(await drift()).toEqual([]);
    await app.owner.query('select app_private.show_account($1)', [hidden.id]);
    expect(await counterSlots('user_votes_received', hidden.id)).toBe(3);
    expect(await received(hidden)).toBe(3);
    expect(await drift()).toEqual([]);
  });

  it('keep a deletion and a vote on one post from missing each other', async () => {
    const post = await createPost(app, author, slider);
    const [voterA, voterB] = [crowd[0] as TestUser, crowd[1] as TestUser];
    const before = await counterSlots('user_votes_received', author.id);
    const vote1 = await app.owner.connect();
    const deletion = await app.owner.connect();
    try {
      // A receipt written and not committed: the deletion of its post waits for it.
      await vote1.query('begin');
      await vote1.query('insert into app.vote_receipts (post_id, user_id) values ($1, $2)', [post.id, voterA.id]);
      await deletion.query('begin');
      await deletion.query(`set local lock_timeout = '300ms'`);
      await expect(deletion.query('update app.posts set deleted_at = now() where id = $1', [post.id])).rejects.toMatchObject({
        code: '55P03',
      });
      await deletion.query('rollback');
      // Once it commits, the deletion counts it and takes it away.
      await deletion.query('begin');
      let deleted = false;
      const deleting = deletion.query('update app.posts set deleted_at = now() where id = $1', [post.id]).then(() => (deleted = true));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(deleted).toBe(false); // still waiting for the receipt's transaction
      await vote1.query('commit');
      await deleting;
      // A deletion not committed yet: a receipt on its post waits for it, then counts nothing.
      await vote1.query('begin');
      await vote1.query(`set local lock_timeout = '300ms'`);
      await expect(
        vote1.query('insert into app.vote_receipts (post_id, user_id) values ($1, $2)', [post.id, voterB.id]),
      ).rejects.toMatchObject({ code: '55P03' });
      await vote1.query('rollback');
      await vote1.query('begin');
      const late = vote1.query('insert into app.vote_receipts (post_id, user_id) values ($1, $2)', [post.id, voterB.id]);
      await deletion.query('commit');
      await late;
      await vote1.query('commit');
    } finally {
      await vote1.query('rollback').catch(() => undefined);
      await deletion.query('rollback').catch(() => undefined);
      vote1.release();
      deletion.release();
    }
    expect(await counterSlots('user_votes_received', author.id)).toBe(before);
    expect(await drift()).toEqual([]);
  });
});
