// The purge of a deleted account (contract 13, migrations/frozen/0264, worker/tasks/accounts/purge-account.ts), run
// by a real worker process: begun by hand (the first steps run, as if a worker died after them),
// finished by the worker's job, then run again by a second job, which changes nothing. Afterwards
// the account, its content, its frames and its stored objects are gone, its hub passed to the
// longest-standing admin, the hub it was alone in is deleted, its discussion message stays as from a
// former member, reports about it and vote tallies stay, the counters agree with the rows, and the
// phone signs up as a new user.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createHub } from '../../helpers/hubs.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { killAll, type RunningProcess } from '../../helpers/process.ts';
import { uploadAsset } from '../../helpers/uploads.ts';
import { userAtLevel, verifyPhone } from '../../helpers/users.ts';
import { hubWithMembers, processOnApp } from '../../helpers/worlds.ts';

let app: TestApp;
let worker: RunningProcess | undefined;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(async () => {
  await killAll([worker]);
  await app.close();
});

const one = async <T = any>(sql: string, params: unknown[] = []): Promise<T> => (await app.owner.query(sql, params)).rows[0] as T;
const count = async (sql: string, params: unknown[] = []) => (await one<{ n: number }>(sql, params)).n;

async function purgeJobDone(userId: string): Promise<boolean> {
  return (
    (await count(
      `select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = 'purge_account' and j.payload ->> 'userId' = $1`,
      [userId],
    )) === 0
  );
}

describe('the purge of a deleted account', () => {
  it(
    'runs to completion in a worker process, resumes after a partial run, and a second run changes nothing',
    { timeout: 120_000 },
    async () => {
      const [user, friend, admin] = await Promise.all([userAtLevel(app, 4), userAtLevel(app, 4), userAtLevel(app, 4)]);
      // The user's stored objects: a profile photo and the photos of the two hubs they create.
      const photo = await uploadAsset(app, user);
      expect((await app.patch('/users/me/profile', { profileAssetId: photo }, { token: user.token })).status).toBe(200);
      const sharedHub = await hubWithMembers(app, user, friend, admin);
      expect((await app.post(`/hubs/${sharedHub.id}/admins`, { userId: admin.id }, { token: user.token })).status).toBe(200);
      const lonelyHub = await createHub(app, user);
      const objectKeys = (
        await app.owner.query<{ object_key: string }>('select object_key from app.assets where owner_id = $1 order by object_key', [
          user.id,
        ])
      ).rows.map((r) => r.object_key);
      expect(objectKeys).toHaveLength(3);
      const sharedPhotoKey = (
        await one('select a.object_key from app.hubs h join app.assets a on a.id = h.profile_asset_id where h.id = $1', [sharedHub.id])
      ).object_key;

      // Content and frames: a post with a friend's comment and repost, a comment with a friend's
      // reply, a vote, follows, a discussion message, a report about the user.
      const post = await createPost(app, user, { thoughtText: 'to be purged' });
      // A slider post of the user's with a friend's vote still sealed (fewer than k: not tallied).
      const sliderPost = await createPost(app, user, slider);
      expect((await vote(app, friend, sliderPost.id)).status).toBe(201);
      expect(await count('select count(*)::int as n from app_private.sealed_ballots where post_id = $1', [sliderPost.id])).toBe(1);
      expect((await app.post(`/posts/${post.id}/comments`, { text: 'nice' }, { token: friend.token })).status).toBe(201);
      const repost = (await app.post(`/posts/${post.id}/reposts`, { thoughtText: 'look', visibility: 'public' }, { token: friend.token }))
        .body.data;
      const friendPost = await createPost(app, friend, slider);
      const comment = (await app.post(`/posts/${friendPost.id}/comments`, { text: 'mine' }, { token: user.token })).body.data;
      expect(
        (await app.post(`/posts/${friendPost.id}/comments`, { text: 'reply', parentCommentId: comment.id }, { token: friend.token }))
          .status,
      ).toBe(201);
      expect((await vote(app, user, friendPost.id)).status).toBe(201);
      expect((await app.post(`/users/${friend.id}/follow`, undefined, { token: user.token })).status).toBe(200);
      expect((await app.post(`/users/${user.id}/follow`, undefined, { token: friend.token })).status).toBe(200);
      const hubPost = await createPost(app, friend, { visibility: 'public_hub', hubIds: [sharedHub.id] });
      const discussion = (await one('select id from app.hub_discussions where post_id = $1', [hubPost.id])).id;
      const message = (
        await app.post(`/hubs/${sharedHub.id}/discussions/${discussion}/messages`, { text: 'said by the user' }, { token: user.token })
      ).body.data;
      const reportId = (await app.post(`/reports/users/${user.id}`, { reason: 'spam' }, { token: friend.token })).body.data.reportId;
      // The user's one vote on the friend's post: in the counters or still a pending sealed ballot
      // (fewer than k votes), wherever a tallier has moved it.
      const tally = async () =>
        (
          await one<{ n: number }>(
            `select ((select coalesce(sum(strong_left_count + left_count + neutral_count + right_count + strong_right_count), 0) from app.vote_counters where post_id = $1 and hub_id is null)
               + (select count(*) from app_private.sealed_ballots where post_id = $1 and hub_id is null))::int as n`,
            [friendPost.id],
          )
        ).n;
      expect(await tally()).toBe(1);
      const logBefore = await count('select count(*)::int as n from app.moderation_log');

      // A data export archive in the object store.
      const exportId = (await app.post('/users/me/exports', undefined, { token: user.token })).body.data.exportId;
      await app.runJobs();
      const archiveKey = (await one('select object_key from app_private.data_exports where id = $1', [exportId])).object_key;
      expect(await app.storage.head(archiveKey)).not.toBeNull();

      expect((await app.post('/users/me/deletion', undefined, { token: user.token })).status).toBe(202);
      // 30 days later (moved forward here), and a worker died after the first two steps.
      await app.owner.query(`update app_private.account_states set purge_after = now() - interval '1 second' where user_id = $1`, [
        user.id,
      ]);
      await app.owner.query('select app_private.purge_account_begin($1), app_private.purge_account_content($1)', [user.id]);
      expect(await count('select count(*)::int as n from app.posts where author_id = $1', [user.id])).toBe(0);
      expect(await count('select count(*)::int as n from app.users where id = $1', [user.id])).toBe(1);
      await app.owner.query(`update graphile_worker._private_jobs set run_at = now() where key = $1`, [`purge_account:${user.id}`]);

      worker = await processOnApp(app, 'worker');
      await worker.waitFor(() => worker?.output().includes('worker running') ?? false, 'the worker process');
      await worker.waitFor(
        async () => (await count('select count(*)::int as n from app.users where id = $1', [user.id])) === 0,
        'the purge',
      );
      await worker.waitFor(() => purgeJobDone(user.id), 'the purge job to finish');

      const snapshot = async () => ({
        user: await count('select count(*)::int as n from app.users where id = $1', [user.id]),
        state: await count('select count(*)::int as n from app_private.account_states where user_id = $1', [user.id]),
        phone: await count('select count(*)::int as n from app.phone_identities where user_id = $1', [user.id]),
        posts: await count('select count(*)::int as n from app.posts where id = any ($1::uuid[])', [[post.id, repost.id, sliderPost.id]]),
        ballots: await count('select count(*)::int as n from app_private.sealed_ballots where post_id = $1', [sliderPost.id]),
        comments: await count('select count(*)::int as n from app.comments where id = $1 or parent_id = $1 or post_id = $2', [
          comment.id,
          post.id,
        ]),
        follows: await count('select count(*)::int as n from app.follows where follower_id = $1 or followee_id = $1', [user.id]),
        receipts: await count('select count(*)::int as n from app.vote_receipts where user_id = $1', [user.id]),
        notifications: await count('select count(*)::int as n from app.notifications where recipient_id = $1 or actor_id = $1', [user.id]),
        assets: await count('select count(*)::int as n from app.assets where owner_id = $1', [user.id]),
        lonelyHub: await count('select count(*)::int as n from app.hubs where id = $1', [lonelyHub.id]),
        sharedHub: await one(
          'select (select role::text from app.hub_memberships where hub_id = $1 and user_id = $2) as admin_role, (select created_by from app.hubs where id = $1) as created_by',
          [sharedHub.id, admin.id],
        ),
        message: await one('select author_id, text from app.hub_discussion_messages where id = $1', [message.id]),
        report: await one('select target_id, snapshot ->> $2 as username, reporter_id from app.reports where id = $1', [
          reportId,
          'username',
        ]),
        log: await count('select count(*)::int as n from app.moderation_log'),
        drift:
          (await app.owner.query('select * from app_private.counter_drift()')).rows.length +
          (await app.owner.query('select * from app_private.unread_counter_drift()')).rows.length +
          (await app.owner.query('select * from app_private.search_word_drift()')).rows.length,
      });
      const after = await snapshot();
      expect(after).toEqual({
        user: 0,
        state: 0,
        phone: 0,
        posts: 0,
        ballots: 0,
        comments: 0,
        follows: 0,
        receipts: 0,
        notifications: 0,
        assets: 0,
        lonelyHub: 0,
        sharedHub: { admin_role: 'super_admin', created_by: null },
        message: { author_id: null, text: 'said by the user' },
        report: { target_id: user.id, username: user.username, reporter_id: friend.id },
        log: logBefore,
        drift: 0,
      });
      // Stored objects: the user's are gone, the image the surviving hub shows stays.
      for (const key of objectKeys) expect(await app.storage.head(key), key).toEqual(key === sharedPhotoKey ? expect.anything() : null);
      expect(await app.storage.head(archiveKey)).toBeNull();
      expect(
        await count(
          'select count(*)::int as n from app.assets a join app.hubs h on h.profile_asset_id = a.id where h.id = $1 and a.owner_id is null',
          [sharedHub.id],
        ),
      ).toBe(1);
      // Vote tallies keep the vote (they hold no user).
      expect(await tally()).toBe(1);
      // The message shows as from a former member.
      const messages = (await app.get(`/hubs/${sharedHub.id}/discussions/${discussion}/messages`, { token: friend.token })).body.data.items;
      expect(messages.find((m: { id: string }) => m.id === message.id).author).toMatchObject({ id: null, isFormerMember: true });

      // A second job for the same account: nothing changes, nothing fails.
      await app.owner.query(`select graphile_worker.add_job('purge_account', json_build_object('userId', $1::uuid))`, [user.id]);
      await worker.waitFor(() => purgeJobDone(user.id), 'the second purge job');
      expect(await snapshot()).toEqual(after);
      expect(worker.problems()).toEqual([]);

      // The phone now signs up as a new user.
      const again = await verifyPhone(app, user.phone);
      expect(again.id).not.toBe(user.id);
    },
  );
});
