// Phone verification while signed in as a phoneless user whose phone already has a user: the
// caller's public activity moves to that user (contract section 3).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { completeBasics, anonymousUser, nextPhone, userAtLevel, verifyPhone } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('merge into an existing phone identity', () => {
  it('moves follows and blocks, keeps counters exact, and frees the caller handle', async () => {
    const phone = nextPhone();
    const target = await completeBasics(app, await verifyPhone(app, phone));
    const [star, bothFollowed, pest] = [await userAtLevel(app, 2), await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await app.post(`/users/${bothFollowed.id}/follow`, undefined, { token: target.token });

    const caller = await completeBasics(app, await anonymousUser(app));
    for (const followee of [star, bothFollowed]) {
      expect((await app.post(`/users/${followee.id}/follow`, undefined, { token: caller.token })).status).toBe(200);
    }
    await app.post(`/users/${pest.id}/block`, undefined, { token: caller.token });

    await app.owner.query(`update app_private.otp_codes set created_at = now() - interval '61 seconds'`);
    const merged = await verifyPhone(app, phone, caller.token);
    expect(merged.id).toBe(target.id);

    const following = await app.get(`/users/${target.id}/following`, { token: merged.token });
    expect(following.body.data.items.map((i: any) => i.id).sort()).toEqual([star.id, bothFollowed.id].sort());
    const counts = await app.owner.query(
      `select u as user_id, app_private.counter_value('user_followers', u) as followers, app_private.counter_value('user_following', u) as following
       from unnest($1::uuid[]) u`,
      [[target.id, bothFollowed.id, caller.id]],
    );
    const byUser = Object.fromEntries(counts.rows.map((r) => [r.user_id, r]));
    expect(byUser[target.id]).toMatchObject({ following: 2 });
    expect(byUser[bothFollowed.id]).toMatchObject({ followers: 1 });
    expect(byUser[caller.id]).toMatchObject({ following: 0 });
    expect((await app.get(`/users/by-username/${pest.username}`, { token: merged.token })).status).toBe(404);
    // The caller's handle is free again, and the retired user is gone from public view.
    expect((await app.get(`/users/by-username/${caller.username}`)).status).toBe(404);
    const reuse = await app.post('/users/handles/availability', { handle: caller.username }, { token: merged.token });
    expect(reuse.body.data.available).toBe(true);
  });
});

describe('merge of post activity', () => {
  it('moves votes on frames the target has not voted on, comments and saved posts', async () => {
    const phone = nextPhone();
    const target = await completeBasics(app, await verifyPhone(app, phone));
    const writer = await userAtLevel(app, 3);
    const [both, onlyCaller] = [await createPost(app, writer, slider), await createPost(app, writer, slider)];
    await vote(app, target, both.id, 'left');
    const caller = await completeBasics(app, await anonymousUser(app));
    await vote(app, caller, both.id, 'right');
    await vote(app, caller, onlyCaller.id, 'right');
    await app.post(`/posts/${onlyCaller.id}/comments`, { text: 'from before' }, { token: caller.token });
    await app.post(`/posts/${onlyCaller.id}/save`, undefined, { token: caller.token });

    await app.owner.query(`update app_private.otp_codes set created_at = now() - interval '61 seconds'`);
    const merged = await verifyPhone(app, phone, caller.token);
    expect(merged.id).toBe(target.id);
    expect((await app.get(`/posts/${onlyCaller.id}/vote/me`, { token: merged.token })).body.data.hasVoted).toBe(true);
    const receipts = await app.owner.query(
      'select post_id, user_id from app.vote_receipts where user_id = any($1) order by user_id, post_id',
      [[target.id, caller.id]],
    );
    expect(
      receipts.rows
        .filter((r) => r.user_id === target.id)
        .map((r) => r.post_id)
        .sort(),
    ).toEqual([both.id, onlyCaller.id].sort());
    expect(receipts.rows.filter((r) => r.user_id === caller.id).map((r) => r.post_id)).toEqual([both.id]);
    const comments = await app.get(`/posts/${onlyCaller.id}/comments`, { token: merged.token });
    expect(comments.body.data.items.map((c: any) => c.author.id)).toEqual([target.id]);
    const saved = await app.get('/users/me/saved-posts', { token: merged.token });
    expect(saved.body.data.items.map((c: any) => c.id)).toEqual([onlyCaller.id]);
    // Counters were not touched by the merge: both votes still count.
    expect((await app.get(`/posts/${both.id}/vote/summary`, { token: writer.token })).body.data.totalVotes).toBe(2);
  });
});

describe('merge while the target votes', () => {
  it('keeps both votes and answers 200 when the target votes on a post the caller voted on during the merge (was a 500)', async () => {
    const phone = nextPhone();
    const target = await completeBasics(app, await verifyPhone(app, phone));
    const writer = await userAtLevel(app, 3);
    const post = await createPost(app, writer, slider);
    const caller = await completeBasics(app, await anonymousUser(app));
    await vote(app, caller, post.id, 'right');
    await app.owner.query(`update app_private.otp_codes set created_at = now() - interval '61 seconds'`);
    // The target's vote, written and not yet committed when the merge reaches the receipts.
    const voting = await app.owner.connect();
    try {
      await voting.query('begin');
      await voting.query('insert into app.vote_receipts (post_id, user_id) values ($1, $2)', [post.id, target.id]);
      const merging = verifyPhone(app, phone, caller.token);
      const deadline = Date.now() + 10_000;
      while (
        (await app.owner.query(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rows
          .length === 0
      ) {
        if (Date.now() > deadline) throw new Error('the merge never waited for the open vote');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await voting.query('commit');
      const merged = await merging;
      expect(merged.id).toBe(target.id);
    } finally {
      voting.release();
    }
    const receipts = await app.owner.query<{ user_id: string }>('select user_id from app.vote_receipts where post_id = $1', [post.id]);
    expect(receipts.rows.map((row) => row.user_id).sort()).toEqual([caller.id, target.id].sort());
  });
});
