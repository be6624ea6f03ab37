// Sealed ballots and the tallier (contract 7 "Vote anonymity", migrations/frozen/0290): reads are exact
// and immediate with pending ballots, the tallier folds batches of at least k and never fewer, and
// a ballot is counted exactly once whatever tallier runs overlap or repeat. (A tallier killed
// mid-batch, and 1,000 concurrent votes: test/process/votes/tallier-crash.test.ts.)
import type { AddressInfo } from 'node:net';
import type { JobHelpers } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub } from '../../helpers/hubs.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { tallyBallots } from '../../../worker/tasks/votes/tally-ballots.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];
let app: TestApp;
let author: TestUser;

beforeAll(async () => {
  [app, author] = await appWithUsers(4);
});
afterAll(() => app.close());

async function pending(postId: string, hubId: string | null = null): Promise<number> {
  const { rows } = await app.owner.query(
    'select count(*)::int as n from app_private.sealed_ballots where post_id = $1 and hub_id is not distinct from $2',
    [postId, hubId],
  );
  return rows[0].n;
}

async function counters(postId: string, hubId: string | null = null): Promise<number[]> {
  const { rows } = await app.owner.query(
    `select coalesce(sum(strong_left_count), 0)::int a, coalesce(sum(left_count), 0)::int b, coalesce(sum(neutral_count), 0)::int c,
            coalesce(sum(right_count), 0)::int d, coalesce(sum(strong_right_count), 0)::int e
     from app.vote_counters where post_id = $1 and hub_id is not distinct from $2`,
    [postId, hubId],
  );
  return Object.values(rows[0]).map(Number);
}

/** The tallier task itself, run on a worker connection of its own (as graphile-worker runs it). */
function runTally(postId: string, hubId: string | null = null, batch = app.config.ballotBatch): Promise<void> {
  const helpers = {
    withPgClient: async <T>(fn: (client: import('pg').PoolClient) => Promise<T>) => {
      const client = await app.pools.worker.connect();
      try {
        return await fn(client);
      } finally {
        client.release();
      }
    },
  } as unknown as JobHelpers;
  return tallyBallots(app.services.ballots, batch)({ postId, hubId }, helpers) as Promise<void>;
}

async function voters(n: number, level: 2 | 4 = 2): Promise<TestUser[]> {
  return Promise.all(Array.from({ length: n }, () => userAtLevel(app, level)));
}

describe('reads with pending ballots', () => {
  it('are exact and immediate in every view, before and after the tallier folds them', async () => {
    const hub = await createHub(app, author);
    const post = await createPost(app, author, { ...slider, visibility: 'public_hub', hubIds: [hub.id] });
    const group = await voters(4, 4);
    for (const member of group) await addMember(app, hub, member);
    const cast = ['strong_left', 'left', 'right', 'right'];
    const answers = [];
    for (const [i, member] of group.entries()) answers.push(await vote(app, member, post.id, cast[i]));
    // The 201 shows the tally with the voter's own vote, though the database never saw it in the clear.
    expect(answers.map((a) => a.body.data.summary.totalVotes)).toEqual([1, 2, 3, 4]);
    expect(answers[3]?.body.data.summary).toEqual({ totalVotes: 4, resultsVisible: true, leftCount: 2, neutralCount: 0, rightCount: 2 });
    // Four ballots per scope pending (fewer than k): the counters hold none of them.
    await app.runJobs();
    expect([await pending(post.id), await pending(post.id, hub.id)]).toEqual([4, 4]);
    expect(await counters(post.id)).toEqual([0, 0, 0, 0, 0]);

    const expectEverywhere = async (counts: number[]) => {
      const total = counts.reduce((a, b) => a + b, 0);
      const buckets = {
        totalVotes: total,
        resultsVisible: true,
        leftCount: counts[0]! + counts[1]!,
        neutralCount: counts[2],
        rightCount: counts[3]! + counts[4]!,
      };
      const token = author.token;
      expect((await app.get(`/posts/${post.id}/vote/summary`, { token })).body.data).toEqual({
        scope: { type: 'global', hubId: null },
        ...buckets,
      });
      expect((await app.get(`/posts/${post.id}/vote/summary?hubId=${hub.id}`, { token })).body.data).toEqual({
        scope: { type: 'hub', hubId: hub.id },
        ...buckets,
      });
      expect((await app.get(`/posts/${post.id}/vote/distribution`, { token })).body.data.buckets.map((b: any) => b.count)).toEqual(counts);
      expect((await app.get(`/posts/${post.id}/vote/hubs`, { token })).body.data.items).toMatchObject([{ hubId: hub.id, ...buckets }]);
      const card = (await app.get(`/posts/${post.id}`, { token })).body.data;
      expect(card.voteSummary).toEqual(buckets);
      expect(card.voteDistribution.map((b: any) => b.count)).toEqual(counts);
      const hubFeed = (await app.get(`/hubs/${hub.id}/feed`, { token })).body.data.items.find((c: any) => c.id === post.id);
      expect(hubFeed.voteSummary).toEqual(buckets);
      const home = (await app.get('/posts', { token })).body.data.items.find((c: any) => c.id === post.id);
      expect(home.voteSummary).toEqual(buckets);
    };
    await expectEverywhere([1, 1, 0, 2, 0]);

    // The fifth vote makes a batch in both scopes: the tallier folds each, and every read stays the same.
    const fifth = (await voters(1, 4))[0] as TestUser;
    await addMember(app, hub, fifth);
    await vote(app, fifth, post.id, 'neutral');
    await expectEverywhere([1, 1, 1, 2, 0]);
    await app.runJobs();
    expect([await pending(post.id), await pending(post.id, hub.id)]).toEqual([0, 0]);
    expect(await counters(post.id)).toEqual([1, 1, 1, 2, 0]);
    expect(await counters(post.id, hub.id)).toEqual([1, 1, 1, 2, 0]);
    await expectEverywhere([1, 1, 1, 2, 0]);
  });

  it('keep the zero-vote and 3-vote rules', async () => {
    const post = await createPost(app, author, slider);
    const token = author.token;
    expect((await app.get(`/posts/${post.id}/vote/summary`, { token })).body.data).toMatchObject({
      totalVotes: 0,
      resultsVisible: false,
      leftCount: null,
    });
    const [a, b, c] = await voters(3);
    await vote(app, a as TestUser, post.id, 'left');
    await vote(app, b as TestUser, post.id, 'left');
    expect((await app.get(`/posts/${post.id}/vote/distribution`, { token })).body.data).toEqual({
      totalVotes: 2,
      resultsVisible: false,
      minimumVotesToShow: 3,
      buckets: [],
    });
    await vote(app, c as TestUser, post.id, 'strong_right');
    const three = (await app.get(`/posts/${post.id}/vote/distribution`, { token })).body.data;
    expect(three.resultsVisible).toBe(true);
    expect(three.buckets.map((x: any) => x.count)).toEqual([0, 2, 0, 0, 1]);
  });

  it('seal for a hub placement the API had not seen (a share after earlier votes): counted there at once', async () => {
    const post = await createPost(app, author, slider);
    const [early, late] = await voters(2, 4);
    await vote(app, early as TestUser, post.id, 'left'); // sealed for the global scope only
    const hub = await createHub(app, author);
    await addMember(app, hub, late as TestUser);
    expect((await app.post(`/posts/${post.id}/share/hubs`, { hubIds: [hub.id] }, { token: author.token })).status).toBe(201);
    const answer = await vote(app, late as TestUser, post.id, 'right');
    expect(answer.body.data.voteReceipt.hubVoteScope).toEqual({ hubIds: [hub.id] });
    expect(await pending(post.id, hub.id)).toBe(1);
    expect((await app.get(`/posts/${post.id}/vote/summary?hubId=${hub.id}`, { token: author.token })).body.data).toMatchObject({
      totalVotes: 1,
      rightCount: 1,
    });
  });

  it('seal at once for the hubs of a voter the API knows from an earlier vote (one round trip), and again for one it does not', async () => {
    const hub = await createHub(app, author);
    const [known, fresh] = await voters(2, 4);
    await addMember(app, hub, known as TestUser);
    await addMember(app, hub, fresh as TestUser);
    const publicPost = await createPost(app, author, slider);
    expect((await vote(app, known as TestUser, publicPost.id, 'left')).status).toBe(201); // teaches the API its hubs
    const resealed = await reseals();
    const hubPost = await createPost(app, author, { ...slider, visibility: 'public_hub', hubIds: [hub.id] });
    const first = await vote(app, known as TestUser, hubPost.id, 'right');
    expect(first.body.data.voteReceipt.hubVoteScope).toEqual({ hubIds: [hub.id] });
    expect(await reseals()).toBe(resealed);
    // A voter the API has not seen vote yet, on a post whose hubs it learned only from ballots it did
    // not need to reseal: cast_vote names the hub, the vote is sealed again for it.
    const other = await createPost(app, author, { ...slider, visibility: 'public_hub', hubIds: [hub.id] });
    const second = await vote(app, fresh as TestUser, other.id, 'strong_left');
    expect(second.body.data.voteReceipt.hubVoteScope).toEqual({ hubIds: [hub.id] });
    expect(await reseals()).toBe(resealed + 1);
    expect(await pending(hubPost.id, hub.id)).toBe(1);
    expect(await pending(other.id, hub.id)).toBe(1);
    expect((await app.get(`/posts/${other.id}/vote/summary?hubId=${hub.id}`, { token: author.token })).body.data).toMatchObject({
      totalVotes: 1,
      leftCount: 1,
    });
  });
});

/** votes_resealed_total of the app's metrics (the Prometheus text the metrics port serves). */
async function reseals(): Promise<number> {
  const server = app.services.metrics.app().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const text = await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text();
    const line = text.split('\n').find((l) => /^votes_resealed_total[{ ]/.test(l));
    expect(line, 'votes_resealed_total in /metrics').toBeDefined();
    const value = Number(line?.split(' ').at(-1));
    expect(Number.isInteger(value), line).toBe(true);
    return value;
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('the tallier', () => {
  it('never tallies fewer than k ballots, whoever asks', async () => {
    const post = await createPost(app, author, slider);
    for (const voter of await voters(app.config.ballotBatch - 1)) await vote(app, voter, post.id, 'left');
    await runTally(post.id);
    await app.owner.query(`select graphile_worker.add_job('tally_ballots', json_build_object('postId', $1::uuid, 'hubId', null))`, [
      post.id,
    ]);
    await app.runJobs();
    expect(await pending(post.id)).toBe(app.config.ballotBatch - 1);
    expect(await counters(post.id)).toEqual([0, 0, 0, 0, 0]);
    // Nor does the database take a smaller batch from anyone, nor a sum that is not one vote per ballot.
    const { rows } = await app.owner.query('select id from app_private.sealed_ballots where post_id = $1', [post.id]);
    const ids = rows.map((r) => r.id);
    await expect(app.owner.query(`select app_private.tally_ballots($1, null, $2, '{0,4,0,0,0}', 5)`, [post.id, ids])).rejects.toThrow(
      /at least 5/,
    );
    await expect(app.owner.query(`select app_private.tally_ballots($1, null, $2, '{0,3,0,0,0}', 2)`, [post.id, ids])).rejects.toThrow(
      /at least 2/,
    );
    await expect(
      app.owner.query(`select app_private.tally_ballots($1, null, $2, '{0,1,0,0,0}', 1)`, [post.id, ids.slice(0, 1)]),
    ).rejects.toThrow(/at least 2/);
    expect(await pending(post.id)).toBe(app.config.ballotBatch - 1);
  });

  it('counts each ballot exactly once under overlapping and repeated runs', async () => {
    const post = await createPost(app, author, slider);
    const group = await voters(23);
    await Promise.all(group.map((voter, i) => vote(app, voter, post.id, positions[i % 5])));
    expect(await pending(post.id)).toBe(23);
    // Five talliers at once on the same post and scope, then again: one folds all 23, the others find nothing.
    await Promise.all(Array.from({ length: 5 }, () => runTally(post.id)));
    await Promise.all(Array.from({ length: 3 }, () => runTally(post.id)));
    await app.runJobs();
    expect(await pending(post.id)).toBe(0);
    expect(await counters(post.id)).toEqual([5, 5, 5, 4, 4]);
    // A batch already folded cannot be folded again (a repeat of a committed run).
    const { rows } = await app.owner.query('select gen_random_uuid() as id from generate_series(1, 5)');
    await expect(
      app.owner.query(`select app_private.tally_ballots($1, null, $2, '{1,1,1,1,1}', 5)`, [post.id, rows.map((r) => r.id)]),
    ).rejects.toThrow(/0 of 5 ballots/);
    expect(await counters(post.id)).toEqual([5, 5, 5, 4, 4]);
    expect(
      (await app.get(`/posts/${post.id}/vote/distribution`, { token: author.token })).body.data.buckets.map((b: any) => b.count),
    ).toEqual([5, 5, 5, 4, 4]);
  });

  it('is queued by the vote that completes a batch, with a payload naming the post and scope only', async () => {
    const post = await createPost(app, author, slider);
    const group = await voters(app.config.ballotBatch);
    const queued = async () =>
      (
        await app.owner.query(
          `select payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
                               where t.identifier = 'tally_ballots' and j.payload ->> 'postId' = $1`,
          [post.id],
        )
      ).rows.map((r) => r.payload);
    for (const voter of group.slice(0, -1)) await vote(app, voter, post.id, 'neutral');
    expect(await queued()).toEqual([]);
    await vote(app, group.at(-1) as TestUser, post.id, 'neutral');
    expect(await queued()).toEqual([{ postId: post.id, hubId: null }]);
    await app.runJobs();
    expect(await pending(post.id)).toBe(0);
    expect(await counters(post.id)).toEqual([0, 0, app.config.ballotBatch, 0, 0]);
  });

  it('the sweep queues a scope holding a batch that no vote queued', async () => {
    const post = await createPost(app, author, slider);
    for (const voter of await voters(app.config.ballotBatch)) await vote(app, voter, post.id, 'right');
    await app.owner.query(`delete from graphile_worker._private_jobs where key = $1`, [`tally_ballots:${post.id}:global`]);
    expect(await pending(post.id)).toBe(app.config.ballotBatch);
    await app.owner.query(`select graphile_worker.add_job('tally_sweep', '{}')`);
    await app.runJobs(); // the sweep queues the tally...
    await app.runJobs(); // ...which folds the batch
    expect(await pending(post.id)).toBe(0);
    expect(await counters(post.id)).toEqual([0, 0, 0, app.config.ballotBatch, 0]);
  });
});
