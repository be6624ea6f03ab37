// Anonymous slider votes: every rule of spec 2.4 and every error row of the vote table (4.5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub, storedNotifications } from '../../helpers/hubs.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let author: TestUser;
beforeAll(async () => {
  [app, author] = await appWithUsers(4);
});
afterAll(() => app.close());

describe('POST /posts/{postId}/vote', () => {
  it('records a receipt (never the position), counts globally, notifies the author without naming the voter, records activity', async () => {
    const post = await createPost(app, author, slider);
    const voter = await userAtLevel(app, 2);
    const response = await vote(app, voter, post.id, 'strong_left');
    expect(response.status).toBe(201);
    expect(response.body.data).toEqual({
      postId: post.id,
      voteReceipt: { hasVoted: true, votedAt: expect.stringMatching(/Z$/), hubVoteScope: null },
      summary: { totalVotes: 1, resultsVisible: true, leftCount: 1, neutralCount: 0, rightCount: 0 },
    });
    expect(response.text).not.toContain('strong_left');
    expect(await storedNotifications(app, author.id, 'post_voted')).toEqual([
      { type: 'post_voted', actor_id: null, hub_id: null, invitation_id: null, join_request_id: null },
    ]);
    const me = await app.get(`/posts/${post.id}/vote/me`, { token: voter.token });
    expect(me.body.data).toEqual({ hasVoted: true, votedAt: response.body.data.voteReceipt.votedAt });
    const events = await app.owner.query(`select actor_id, kind from app.activity_events where post_id = $1`, [post.id]);
    expect(events.rows).toEqual([{ actor_id: voter.id, kind: 'post_voted' }]);
    // Self-votes notify nobody.
    await vote(app, author, post.id, 'right');
    expect((await storedNotifications(app, author.id, 'post_voted')).length).toBe(1);
  });

  it('answers every error row: 401, 403 level, 404, 409 repeat, 409 not votable, 422 position', async () => {
    const post = await createPost(app, author, slider);
    const plain = await createPost(app, author);
    const voter = await userAtLevel(app, 2);
    expect((await app.post(`/posts/${post.id}/vote`, { position: 'left' })).status).toBe(401);
    const anonymous = await anonymousUser(app);
    const gated = await vote(app, anonymous, post.id);
    expect(gated.status).toBe(403);
    expect(gated.body.error.code).toBe('PROFILE_BASICS_REQUIRED');
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
      const missing = await vote(app, voter, id);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toEqual({ code: 'POST_NOT_FOUND', message: 'Post does not exist.', details: {} });
    }
    const notVotable = await vote(app, voter, plain.id);
    expect(notVotable.status).toBe(409);
    expect(notVotable.body.error).toEqual({ code: 'POST_NOT_VOTABLE', message: 'Post does not have a slider.', details: {} });
    const bad = await vote(app, voter, post.id, 'far_left');
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.fields).toHaveProperty('position');
    await vote(app, voter, post.id, 'left');
    const repeat = await vote(app, voter, post.id, 'right');
    expect(repeat.status).toBe(409);
    expect(repeat.body.error).toEqual({ code: 'VOTE_ALREADY_CAST', message: 'You already voted on this post.', details: {} });
    expect((await app.get(`/posts/${post.id}/vote/summary`, { token: voter.token })).body.data).toMatchObject({
      totalVotes: 1,
      leftCount: 1,
      rightCount: 0,
    });
  });

  it('counts in hub pools where the post is placed and the voter is an active member, at vote time only', async () => {
    const [hubA, hubB] = [await createHub(app, author), await createHub(app, author)];
    const member = await userAtLevel(app, 4);
    await addMember(app, hubA, member);
    const post = await createPost(app, author, { ...slider, visibility: 'public_hub', hubIds: [hubA.id, hubB.id] });
    const response = await vote(app, member, post.id, 'right');
    expect(response.body.data.voteReceipt.hubVoteScope).toEqual({ hubIds: [hubA.id] });
    const outsider = await userAtLevel(app, 2);
    expect((await vote(app, outsider, post.id, 'left')).body.data.voteReceipt.hubVoteScope).toBeNull();
    // Joining hub B later does not backfill the earlier vote.
    await addMember(app, hubB, member);
    const hubB_summary = await app.get(`/posts/${post.id}/vote/summary?hubId=${hubB.id}`, { token: member.token });
    expect(hubB_summary.body.data).toEqual({
      scope: { type: 'hub', hubId: hubB.id },
      totalVotes: 0,
      resultsVisible: false,
      leftCount: null,
      neutralCount: null,
      rightCount: null,
    });
    const hubA_summary = await app.get(`/posts/${post.id}/vote/summary?hubId=${hubA.id}`, { token: member.token });
    expect(hubA_summary.body.data).toMatchObject({ scope: { type: 'hub', hubId: hubA.id }, totalVotes: 1, rightCount: 1 });
    const global = await app.get(`/posts/${post.id}/vote/summary`, { token: member.token });
    expect(global.body.data).toMatchObject({ scope: { type: 'global', hubId: null }, totalVotes: 2, leftCount: 1, rightCount: 1 });
    const hubs = await app.get(`/posts/${post.id}/vote/hubs`, { token: member.token });
    expect(hubs.body.data.items.map((i: any) => [i.hubId, i.totalVotes]).sort()).toEqual(
      [
        [hubA.id, 1],
        [hubB.id, 0],
      ].sort(),
    );
    expect((await app.get(`/posts/${post.id}/vote/summary?hubId=${hubB.id}`, { token: outsider.token })).body.error.code).toBe(
      'HUB_MEMBERSHIP_REQUIRED',
    );
    // A share into a hub after the vote does not backfill either.
    const hubC = await createHub(app, member);
    await app.post(`/posts/${post.id}/share/hubs`, { hubIds: [hubC.id] }, { token: member.token });
    expect((await app.get(`/posts/${post.id}/vote/summary?hubId=${hubC.id}`, { token: member.token })).body.data.totalVotes).toBe(0);
  });

  it('lets only the author or a Hub-ready active member of a selected hub vote on private_locked_hub posts', async () => {
    const hub = await createHub(app, author);
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const post = await createPost(app, author, { ...slider, visibility: 'private_locked_hub', hubIds: [hub.id] });
    const outsider = await userAtLevel(app, 4);
    expect((await vote(app, outsider, post.id)).body.error.code).toBe('POST_NOT_FOUND');
    // A member below level 4 is no active member (spec 2.3 rule 14, part 5): the post is hidden
    // from them, so the vote answers like a missing post.
    await app.owner.query('update app.users set contacts_synced_at = null where id = $1', [member.id]);
    const notReady = await vote(app, member, post.id);
    expect(notReady.status).toBe(404);
    expect(notReady.body.error.code).toBe('POST_NOT_FOUND');
    await app.owner.query('update app.users set contacts_synced_at = now() where id = $1', [member.id]);
    expect((await vote(app, member, post.id)).status).toBe(201);
    expect((await vote(app, author, post.id)).status).toBe(201);
  });
});

describe('results', () => {
  it('shows summary and distribution on cards only to voters and the author', async () => {
    const post = await createPost(app, author, slider);
    const [voter, lurker] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await vote(app, voter, post.id, 'neutral');
    const forVoter = (await app.get(`/posts/${post.id}`, { token: voter.token })).body.data;
    expect(forVoter.viewerVote.hasVoted).toBe(true);
    expect(forVoter.voteSummary).toEqual({ totalVotes: 1, resultsVisible: true, leftCount: 0, neutralCount: 1, rightCount: 0 });
    expect(forVoter.voteDistribution.map((b: any) => [b.position, b.bucket, b.count])).toEqual([
      ['strong_left', 'left', 0],
      ['left', 'left', 0],
      ['neutral', 'neutral', 1],
      ['right', 'right', 0],
      ['strong_right', 'right', 0],
    ]);
    expect((await app.get(`/posts/${post.id}`, { token: author.token })).body.data.voteSummary.totalVotes).toBe(1);
    const forLurker = (await app.get(`/posts/${post.id}`, { token: lurker.token })).body.data;
    expect(forLurker).toMatchObject({ viewerVote: { hasVoted: false, votedAt: null }, voteSummary: null, voteDistribution: null });
  });

  it('opens the distribution endpoint at 3 votes, five positions in order', async () => {
    const post = await createPost(app, author, slider);
    const voters = await Promise.all([1, 2, 3].map(() => userAtLevel(app, 2)));
    await vote(app, voters[0] as TestUser, post.id, 'strong_left');
    await vote(app, voters[1] as TestUser, post.id, 'strong_right');
    const early = await app.get(`/posts/${post.id}/vote/distribution`, { token: author.token });
    expect(early.body.data).toEqual({ totalVotes: 2, resultsVisible: false, minimumVotesToShow: 3, buckets: [] });
    await vote(app, voters[2] as TestUser, post.id, 'strong_right');
    const open = await app.get(`/posts/${post.id}/vote/distribution`, { token: author.token });
    expect(open.body.data).toMatchObject({ totalVotes: 3, resultsVisible: true, minimumVotesToShow: 3 });
    expect(open.body.data.buckets).toEqual([
      { position: 'strong_left', bucket: 'left', count: 1 },
      { position: 'left', bucket: 'left', count: 0 },
      { position: 'neutral', bucket: 'neutral', count: 0 },
      { position: 'right', bucket: 'right', count: 0 },
      { position: 'strong_right', bucket: 'right', count: 2 },
    ]);
    const plain = await createPost(app, author);
    expect((await app.get(`/posts/${plain.id}/vote/distribution`, { token: author.token })).body.error.code).toBe('POST_NOT_VOTABLE');
    expect((await app.get('/posts/00000000-0000-4000-8000-000000000000/vote/distribution', { token: author.token })).body.error.code).toBe(
      'POST_NOT_FOUND',
    );
    expect((await app.get(`/posts/${post.id}/vote/distribution`, { token: 'bad' })).status).toBe(401);
  });
});

describe('concurrency', () => {
  it('counts 200 distinct voters on one post exactly, and one vote out of 20 concurrent repeats', async () => {
    const post = await createPost(app, author, slider);
    const voters = await Promise.all(Array.from({ length: 200 }, () => userAtLevel(app, 2)));
    const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];
    const results = await Promise.all(voters.map((voter, i) => vote(app, voter, post.id, positions[i % 5])));
    expect(results.every((r) => r.status === 201)).toBe(true);
    const distribution = await app.get(`/posts/${post.id}/vote/distribution`, { token: author.token });
    expect(distribution.body.data.totalVotes).toBe(200);
    expect(distribution.body.data.buckets.map((b: any) => b.count)).toEqual([40, 40, 40, 40, 40]);

    const eager = await userAtLevel(app, 2);
    const repeats = await Promise.all(Array.from({ length: 20 }, () => vote(app, eager, post.id, 'left')));
    expect(repeats.filter((r) => r.status === 201)).toHaveLength(1);
    expect(repeats.filter((r) => r.status === 409 && r.body.error.code === 'VOTE_ALREADY_CAST')).toHaveLength(19);
    const after = await app.get(`/posts/${post.id}/vote/distribution`, { token: author.token });
    expect(after.body.data.totalVotes).toBe(201);
  }, 120_000);
});

describe('anonymity by construction', () => {
  it('has no table where a vote position sits beside a user reference', async () => {
    const { rows } = await app.owner.query(`
      select c.table_schema, c.table_name,
             bool_or(c.udt_name = 'vote_position') as has_position,
             bool_or(c.data_type = 'uuid' and (c.column_name ~ '(user|author|actor|voter|recipient|owner|member|reporter|blocker|blocked|follower|followee|invited)')) as has_user_column,
             exists (select from information_schema.table_constraints tc
                     join information_schema.constraint_column_usage ccu on ccu.constraint_name = tc.constraint_name and ccu.constraint_schema = tc.constraint_schema
                     where tc.table_schema = c.table_schema and tc.table_name = c.table_name and tc.constraint_type = 'FOREIGN KEY'
                       and ccu.table_schema = 'app' and ccu.table_name = 'users') as references_users
      from information_schema.columns c
      where c.table_schema not in ('pg_catalog', 'information_schema')
      group by c.table_schema, c.table_name`);
    // No column holds a position: the counters keep one count column per position.
    expect(rows.filter((r) => r.has_position).map((r) => r.table_name)).toEqual([]);
    const counters = rows.find((r) => r.table_name === 'vote_counters');
    expect(counters).toMatchObject({ table_schema: 'app', has_user_column: false, references_users: false });
    // And nothing stores a position as text, in notifications, jobs or events.
    const post = await createPost(app, author, slider);
    await vote(app, await userAtLevel(app, 2), post.id, 'strong_right');
    const stored = await app.owner.query(`
      select (select count(*) from app.notifications n where n::text like '%strong_right%')
           + (select count(*) from app.activity_events e where e::text like '%strong_right%')
           + (select count(*) from graphile_worker._private_jobs j where j.payload::text like '%strong_right%') as n`);
    expect(Number(stored.rows[0].n)).toBe(0);
  });

  it('keeps the vote call parameters out of the server log for the API login role', async () => {
    const { rows } = await app.owner.query(`
      select unnest(s.setconfig) as setting from pg_db_role_setting s join pg_roles r on r.oid = s.setrole where r.rolname = 'authenticator'`);
    const settings = rows.map((r) => r.setting);
    expect(settings).toEqual(
      expect.arrayContaining(['log_parameter_max_length=0', 'log_parameter_max_length_on_error=0', 'log_statement=none']),
    );
  });
});
