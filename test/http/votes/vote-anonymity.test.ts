// Vote anonymity (contract 7 "Vote anonymity"; issue 9 item 3): the attacks that tied voters to
// positions, each run as the attacker would, each now recovering nothing. Twenty voters vote one
// at a time, each position four times, so every step of the live tally is observable; after each
// vote the database owner copies every table with its system columns (as a backup, a replica or
// the WAL would hold them) and the tallier runs whatever is due.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BallotBox } from '../../../server/votes/ballots.ts';
import type { TestApp } from '../../helpers/app.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];

let app: TestApp;
let author: TestUser;
let observer: TestUser;
let post: { id: string };
const voters: { user: TestUser; position: string }[] = [];
/** Per vote: the author's tally delta (which position grew) and what each attack saw at that step. */
const steps: { voterId: string; grew: string; newActorIds: (string | null)[]; votesCastSeen: (number | null)[] }[] = [];

/** The live tally as the author reads it (the post card's distribution: exact, pending ballots included). */
async function distribution(): Promise<number[]> {
  const response = await app.get(`/posts/${post.id}`, { token: author.token });
  expect(response.status).toBe(200);
  const buckets: { count: number }[] = response.body.data.voteDistribution;
  return buckets.length > 0 ? buckets.map((b) => b.count) : [0, 0, 0, 0, 0];
}

/** One copy of the whole database as its owner holds it: every row of every table, with xmin. */
type Copy = Map<string, { xmin: string; row: Record<string, unknown> }[]>;
const copies: Copy[] = [];

async function copyEveryTable(): Promise<Copy> {
  const { rows: tables } = await app.owner.query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind in ('r', 'p') and n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast') order by 1`,
  );
  const copy: Copy = new Map();
  for (const { name } of tables) {
    const { rows } = await app.owner.query<{ xmin: string; row: Record<string, unknown> }>(
      `select t.xmin::text as xmin, to_jsonb(t) as row from ${name} t`,
    );
    copy.set(name, rows);
  }
  return copy;
}

const countColumns = ['strong_left_count', 'left_count', 'neutral_count', 'right_count', 'strong_right_count'];

/**
 * The database owner's attack over the copies (issue 26): whenever the post's global counters
 * change between two copies, the change is the sum of some voters' positions; which voters, the
 * copies tell: the receipts whose xmin equals the changed counter rows' xmin (a vote that wrote the
 * counters itself), or the voters whose sealed ballots (same xmin as their receipts) left in
 * that change (a tallier's batch: receipts whose ballots are no longer pending). A voter is recovered when the change names them alone, or when
 * every vote of the change is in one position. Answers the claims and the batches.
 */
function ownerAttack(): { claims: Map<string, string>; batches: string[][] } {
  const claims = new Map<string, string>();
  const batches: string[][] = [];
  const attributed = new Set<string>();
  const receiptXmin = (copy: Copy) =>
    new Map((copy.get('app.vote_receipts') ?? []).filter((r) => r.row.post_id === post.id).map((r) => [r.xmin, r.row.user_id as string]));
  const sums = (copy: Copy) => {
    const rows = (copy.get('app.vote_counters') ?? []).filter((r) => r.row.post_id === post.id && r.row.hub_id === null);
    return countColumns.map((column) => rows.reduce((sum, r) => sum + Number(r.row[column]), 0));
  };
  for (let i = 1; i < copies.length; i++) {
    const [before, after] = [copies[i - 1] as Copy, copies[i] as Copy];
    const delta = sums(after).map((n, p) => n - (sums(before)[p] as number));
    if (delta.every((n) => n === 0)) continue;
    const receipts = receiptXmin(after);
    const previousRows = new Set((before.get('app.vote_counters') ?? []).map((r) => JSON.stringify(r.row)));
    const changedXmins = (after.get('app.vote_counters') ?? [])
      .filter((r) => r.row.post_id === post.id && r.row.hub_id === null && !previousRows.has(JSON.stringify(r.row)))
      .map((r) => r.xmin);
    const byXmin = changedXmins.flatMap((x) => (receipts.has(x) ? [receipts.get(x) as string] : []));
    // Voters whose vote is in the counters by now: every receipt but those with a pending ballot
    // (same xmin), less the voters of earlier changes.
    const pending = new Set(
      (after.get('app_private.sealed_ballots') ?? []).filter((r) => r.row.post_id === post.id && r.row.hub_id === null).map((r) => r.xmin),
    );
    const counted = [...receipts]
      .filter(([xmin]) => !pending.has(xmin))
      .map(([, voter]) => voter)
      .filter((voter) => !attributed.has(voter));
    const voters = [...new Set([...byXmin, ...counted])];
    for (const voter of voters) attributed.add(voter);
    batches.push(voters);
    const moved = delta.flatMap((n, p) => (n !== 0 ? [positions[p] as string] : []));
    if (voters.length === 1 || (moved.length === 1 && voters.length > 0)) for (const voter of voters) claims.set(voter, moved[0] as string);
  }
  return { claims, batches };
}

async function postVotedActors(): Promise<(string | null)[]> {
  const response = await app.get('/notifications?limit=50', { token: author.token });
  expect(response.status).toBe(200);
  return response.body.data.items.filter((n: any) => n.type === 'post_voted').map((n: any) => n.actor?.id ?? null);
}

beforeAll(async () => {
  [app, author, observer] = await appWithUsers(3, 2);
  post = await createPost(app, author, slider);
  for (let i = 0; i < 20; i++) voters.push({ user: await userAtLevel(app, 2), position: positions[i % 5] as string });
  let before = await distribution();
  let seenActors = 0;
  copies.push(await copyEveryTable());
  for (const { user } of voters) {
    const profileBefore = await app.get(`/users/by-username/${user.username}`, { token: observer.token });
    // Sent as the app's retry layer sends it: with an Idempotency-Key, so the copies hold its kept answer.
    const position = voters.find((v) => v.user === user)?.position;
    expect(
      (await app.post(`/posts/${post.id}/vote`, { position }, { token: user.token, headers: { 'Idempotency-Key': randomUUID() } })).status,
    ).toBe(201);
    // Whatever tally is due runs now: the copy below sees the database as soon after each vote as can be.
    await app.runJobs();
    copies.push(await copyEveryTable());
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
    const stored = await app.owner.query(
      `select count(*)::int as n from app.notifications where type = 'post_voted' and actor_id is not null`,
    );
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

  it('the database owner copying every table after each vote pairs no voter with a position (issue 26)', async () => {
    const { claims, batches } = ownerAttack();
    // The attack had its signal: the counters moved, in batches the copies name...
    expect(batches.length, JSON.stringify(batches)).toBeGreaterThan(0);
    // ...each of at least k voters (BALLOT_BATCH, default 5), never one vote's transaction...
    expect(
      batches.map((b) => b.length).every((n) => n >= app.config.ballotBatch),
      JSON.stringify(batches),
    ).toBe(true);
    expect(batches.flat().length).toBe(20);
    // ...and, every batch holding several positions, not one voter is paired with a position.
    expect(claims.size).toBe(0);
    // No row of any copy names a position in the clear (jobs, notifications, events, ballots).
    for (const copy of copies) {
      for (const [table, rows] of copy) {
        for (const r of rows) expect(JSON.stringify(r.row), table).not.toMatch(/"(strong_left|left|neutral|right|strong_right)"/);
      }
    }
    // The sums stay exact: four votes in each position, in the counters once tallied.
    expect(await distribution()).toEqual([4, 4, 4, 4, 4]);
    const { rows } = await app.owner.query(
      `select sum(strong_left_count)::int a, sum(left_count)::int b, sum(neutral_count)::int c, sum(right_count)::int d, sum(strong_right_count)::int e
       from app.vote_counters where post_id = $1 and hub_id is null`,
      [post.id],
    );
    expect(Object.values(rows[0])).toEqual([4, 4, 4, 4, 4]);
  });

  it('the kept answers of the votes (Idempotency-Key) give the owner neither a tally after each vote nor a position', async () => {
    const voterIds = new Set(voters.map((v) => v.user.id));
    const candidates = positions.map((position) =>
      createHash('sha256')
        .update(`POST\n/api/v1/posts/${post.id}/vote\n${JSON.stringify({ position })}`)
        .digest('hex'),
    );
    let seen = 0;
    for (const copy of copies) {
      for (const { row } of copy.get('app_private.idempotent_answers') ?? []) {
        if (!voterIds.has(row.user_id as string)) continue;
        seen += 1;
        // A vote's answer shows the tally just after the vote: kept in the clear, two answers in a row give a position.
        const body = Buffer.from(String(row.body).slice(2), 'hex');
        expect(() => JSON.parse(body.toString('utf8'))).toThrow();
        for (const text of ['Count', 'totalVotes', 'position', post.id, ...positions]) expect(body.includes(text)).toBe(false);
        // The fingerprint is no plain hash of one of the five possible requests.
        expect(candidates).not.toContain(String(row.fingerprint).slice(2));
        expect(Object.keys(row).sort()).toEqual([
          'body',
          'created_at',
          'expires_at',
          'fingerprint',
          'headers',
          'key_digest',
          'status',
          'user_id',
        ]);
      }
    }
    // The attack had every vote's kept answer to work on.
    expect(new Set((copies.at(-1)?.get('app_private.idempotent_answers') ?? []).map((r) => r.row.user_id)).size).toBe(20);
    expect(seen).toBeGreaterThanOrEqual(20);
  });

  it('a sealed ballot does not open without the ballot key, nor for another post or scope', async () => {
    const post2 = await createPost(app, author, slider);
    const sealedVoters = await Promise.all(Array.from({ length: 4 }, () => userAtLevel(app, 2)));
    for (const voter of sealedVoters) expect((await vote(app, voter, post2.id, 'left')).status).toBe(201);
    const { rows } = await app.owner.query<{ key_id: string; nonce: Buffer; ciphertext: Buffer }>(
      'select key_id, nonce, ciphertext from app_private.sealed_ballots where post_id = $1 and hub_id is null',
      [post2.id],
    );
    // Four pending ballots (fewer than k), all one position, yet four different ciphertexts of one length.
    expect(rows).toHaveLength(4);
    expect(new Set(rows.map((r) => r.ciphertext.toString('hex'))).size).toBe(4);
    expect(new Set(rows.map((r) => r.nonce.toString('hex'))).size).toBe(4);
    expect(new Set(rows.map((r) => r.ciphertext.length))).toEqual(new Set([17]));
    const sealed = (r: (typeof rows)[number]) => Buffer.concat([r.nonce, r.ciphertext]);
    // Without the key: another key opens nothing, and neither does guessing (no tag matches).
    const stranger = new BallotBox([{ id: rows[0]?.key_id as string, key: randomBytes(32) }]);
    for (const r of rows) expect(() => stranger.open(post2.id, null, r.key_id, sealed(r))).toThrow(/does not open/);
    // With the key (database and key together: what docs/vote-anonymity.md says they can do), they open,
    // but only as ballots of their own post and scope.
    const box = app.services.ballots;
    for (const r of rows) expect(box.open(post2.id, null, r.key_id, sealed(r))).toBe(1);
    for (const r of rows) expect(() => box.open(post.id, null, r.key_id, sealed(r))).toThrow(/does not open/);
    for (const r of rows) expect(() => box.open(post2.id, post2.id, r.key_id, sealed(r))).toThrow(/does not open/);
    // Nor does the API's memory of the ballots it sealed (kept by post and scope) let a copied ballot count elsewhere.
    for (const r of rows) {
      const stored = `${r.key_id}:${sealed(r).toString('base64')}`;
      expect(box.openStored(post2.id, null, stored)).toBe(1);
      expect(() => box.openStored(post.id, null, stored)).toThrow(/does not open/);
    }
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
