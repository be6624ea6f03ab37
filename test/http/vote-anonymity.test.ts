// Vote anonymity (contract 7 "Vote anonymity"; issue 9 item 3): the three attacks that tied voters
// to positions, each run as the attacker would, each now recovering nothing. Twenty voters vote one
// at a time, each position four times, so every step of the live tally is observable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createPost, slider, vote } from '../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../helpers/users.ts';

const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];

let app: TestApp;
let author: TestUser;
let observer: TestUser;
let post: { id: string };
const voters: { user: TestUser; position: string }[] = [];
/** Per vote: the author's tally delta (which position grew) and what each attack saw at that step. */
const steps: { voterId: string; grew: string; newActorIds: (string | null)[]; votesCastSeen: (number | null)[] }[] = [];

async function distribution(): Promise<number[]> {
  const response = await app.get(`/posts/${post.id}/vote/summary`, { token: author.token });
  expect(response.status).toBe(200);
  const counts = await app.owner.query<{ votes: string }>(
    `select sum(strong_left_count) a, sum(left_count) b, sum(neutral_count) c, sum(right_count) d, sum(strong_right_count) e
     from app.vote_counters where post_id = $1 and hub_id is null`,
    [post.id],
  );
  return Object.values(counts.rows[0] ?? {}).map((v) => Number(v ?? 0));
}

async function postVotedActors(): Promise<(string | null)[]> {
  const response = await app.get('/notifications?limit=50', { token: author.token });
  expect(response.status).toBe(200);
  return response.body.data.items.filter((n: any) => n.type === 'post_voted').map((n: any) => n.actor?.id ?? null);
}

beforeAll(async () => {
  app = await startTestApp();
  author = await userAtLevel(app, 3);
  observer = await userAtLevel(app, 2);
  post = await createPost(app, author, slider);
  for (let i = 0; i < 20; i++) voters.push({ user: await userAtLevel(app, 2), position: positions[i % 5] as string });
  let before = await distribution();
  let seenActors = 0;
  for (const { user } of voters) {
    const profileBefore = await app.get(`/users/by-username/${user.username}`, { token: observer.token });
    expect((await vote(app, user, post.id, voters.find((v) => v.user === user)?.position)).status).toBe(201);
    const after = await distribution();
    const grew = positions[after.findIndex((n, i) => n !== before[i])] as string;
    before = after;
    const actors = await postVotedActors();
    const profileAfter = await app.get(`/users/by-username/${user.username}`, { token: observer.token });
    steps.push({
      voterId: user.id,
      grew,
      newActorIds: actors.slice(0, actors.length - seenActors),
      votesCastSeen: [profileBefore.body.data.stats.votesCast, profileAfter.body.data.stats.votesCast],
    });
    seenActors = actors.length;
  }
}, 120_000);
afterAll(() => app.close());

describe('vote anonymity: the attacks of issue 9, each recovering nothing', () => {
  it('the author reading post_voted beside the live tally learns that someone voted, never who', async () => {
    // The tally did move with each vote (the attack had its signal)...
    expect(steps.map((s) => s.grew)).toEqual(voters.map((v) => v.position));
    // ...and each vote gave the author one notification, with no actor to pair it with.
    const recovered = new Map<string, string>();
    for (const step of steps) {
      expect(step.newActorIds).toEqual([null]);
      for (const actor of step.newActorIds) if (actor !== null) recovered.set(actor, step.grew);
    }
    expect(recovered.size).toBe(0);
    const stored = await app.owner.query(`select count(*)::int as n from app.notifications where type = 'post_voted' and actor_id is not null`);
    expect(stored.rows[0].n).toBe(0);
  });

  it('polling stats.votesCast of a public profile beside the tally finds no counter that moves', async () => {
    const recovered = steps.filter((s) => s.votesCastSeen[0] !== s.votesCastSeen[1]);
    expect(recovered).toEqual([]);
    expect(steps.every((s) => s.votesCastSeen.every((n) => n === null))).toBe(true);
    // The owner still reads their own count.
    const voter = voters[0]?.user as TestUser;
    const own = await app.get('/users/me/profile', { token: voter.token });
    expect(own.body.data.stats.votesCast).toBe(1);
    const byName = await app.get(`/users/by-username/${voter.username}`, { token: voter.token });
    expect(byName.body.data.stats.votesCast).toBe(1);
  });

  it('the database owner joining counter row versions to receipts (c.xmin = r.xmin) reads no position', async () => {
    const { rows } = await app.owner.query<{ user_id: string; counts: string[] }>(
      `select r.user_id, array[c.strong_left_count, c.left_count, c.neutral_count, c.right_count, c.strong_right_count]::text[] as counts
       from app.vote_receipts r
       join app.vote_counters c on c.xmin = r.xmin
       where r.post_id = $1`,
      [post.id],
    );
    // Votes landed in slots and rewrote them (the join pairs receipts with rows)...
    expect(rows.length).toBeGreaterThan(0);
    // ...but a row names a position only if it counts votes in one position alone; seeded rows
    // never do, so not one voter is paired with a position.
    const recovered = rows.filter((row) => row.counts.filter((n) => Number(n) !== 0).length === 1);
    expect(recovered).toEqual([]);
    // Nor does reading the row as the difference from seeds: rows hold noise far above the vote count.
    expect(rows.every((row) => row.counts.some((n) => Math.abs(Number(n)) > 1000))).toBe(true);
    // The sums are exact: four votes in each position.
    expect(await distribution()).toEqual([4, 4, 4, 4, 4]);
    const slots = await app.owner.query(`select count(*)::int as n from app.vote_counters where post_id = $1 and hub_id is null`, [post.id]);
    expect(slots.rows[0].n).toBe(16);
  });

  it("the voter's data export and a report's snapshot of the post name no position", async () => {
    const { user, position } = voters[0] as { user: TestUser; position: string };
    const requested = await app.post('/users/me/exports', undefined, { token: user.token });
    expect(requested.status).toBe(202);
    await app.runJobs();
    const ready = await app.get(`/users/me/exports/${requested.body.data.exportId}`, { token: user.token });
    const text = await (await fetch(ready.body.data.url)).text();
    expect(JSON.parse(text).votes).toEqual([{ postId: post.id, votedAt: expect.any(String) }]);
    expect(text).not.toMatch(/position/i);
    for (const name of positions) expect(text, position).not.toContain(`"${name}"`);

    expect((await app.post(`/reports/posts/${post.id}`, { reason: 'other' }, { token: observer.token })).status).toBe(201);
    const snapshot = JSON.stringify((await app.owner.query('select snapshot from app.reports where target_id = $1', [post.id])).rows);
    for (const name of positions) expect(snapshot).not.toContain(`"${name}"`);
    expect(snapshot).not.toMatch(/count|tally/i);
  });
});
