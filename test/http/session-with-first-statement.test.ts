// Endpoints whose session check travels with their first statement (sessionWithFirstStatement:
// the vote and the onboarding status): the same 401/403/422 answers in the same order as every
// other endpoint, nothing written when the session is refused, and connections left clean.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { asViewer, rowsOrError } from '../helpers/sql.ts';
import { createPost, slider, vote } from '../helpers/posts.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../helpers/users.ts';

let app: TestApp;
let author: TestUser;
beforeAll(async () => {
  app = await startTestApp();
  author = await userAtLevel(app, 4);
});
afterAll(() => app.close());

async function loggedOut(level: 1 | 2 | 3 | 4): Promise<TestUser> {
  const user = level === 1 ? await anonymousUser(app) : await userAtLevel(app, level);
  const logout = await app.post('/auth/logout', { refreshToken: user.refreshToken, logoutFromAllDevices: false }, { token: user.token });
  expect(logout.status).toBe(200);
  return user;
}

async function voteWrites(postId: string): Promise<unknown> {
  const { rows } = await app.owner.query(
    `select (select count(*) from app.vote_receipts where post_id = $1) as receipts,
            (select count(*) from app.vote_scope_receipts where post_id = $1) as scope_receipts,
            (select coalesce(sum(strong_left_count + left_count + neutral_count + right_count + strong_right_count), 0)
               from app.vote_counters where post_id = $1)::int as counted,
            (select count(*) from app.notifications where post_id = $1) as notifications,
            (select count(*) from app.activity_events where post_id = $1) as events`,
    [postId],
  );
  return rows[0];
}

describe('a refused session on a one-round-trip endpoint', () => {
  it('answers 401 on a vote and writes nothing, whatever the body or post id', async () => {
    const post = await createPost(app, author, slider);
    const before = await voteWrites(post.id);
    const revoked = await loggedOut(2);
    for (const [postId, position] of [[post.id, 'left'], [post.id, 'far_left'], ['nope', 'left']] as const) {
      const response = await vote(app, revoked, postId, position);
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('UNAUTHORIZED');
    }
    expect(await voteWrites(post.id)).toEqual(before);
  });

  it('answers 401 on the onboarding status', async () => {
    const revoked = await loggedOut(1);
    const response = await app.get('/users/me/onboarding/status', { token: revoked.token });
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('UNAUTHORIZED');
  });

  it('leaves every pooled connection usable: refused requests roll back before the connection is reused', async () => {
    const revoked = await loggedOut(2);
    const post = await createPost(app, author, slider);
    // More refusals than the API pool has connections (20), at once.
    const refused = await Promise.all(Array.from({ length: 30 }, () => vote(app, revoked, post.id)));
    expect(refused.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 401));
    const voters = await Promise.all(Array.from({ length: 25 }, () => userAtLevel(app, 2)));
    const accepted = await Promise.all(voters.map((voter) => vote(app, voter, post.id)));
    expect(accepted.map((r) => r.status)).toEqual(Array.from({ length: 25 }, () => 201));
    expect(await voteWrites(post.id)).toMatchObject({ receipts: 25, counted: 25 });
    const status = await Promise.all(voters.map((voter) => app.get('/users/me/onboarding/status', { token: voter.token })));
    expect(status.map((r) => r.body.data.accessLevel)).toEqual(Array.from({ length: 25 }, () => 2));
  });
});

describe('the level gate with the first statement', () => {
  it('answers 403 for the first missing level before the request shape (422) and writes nothing', async () => {
    const post = await createPost(app, author, slider);
    const before = await voteWrites(post.id);
    const level1 = await anonymousUser(app);
    for (const position of ['left', 'far_left']) {
      const response = await vote(app, level1, post.id, position);
      expect(response.status).toBe(403);
      expect(response.body.error.code).toBe('PROFILE_BASICS_REQUIRED');
    }
    expect(await voteWrites(post.id)).toEqual(before);
    const level2 = await userAtLevel(app, 2);
    const bad = await vote(app, level2, post.id, 'far_left');
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.fields).toHaveProperty('position');
    expect((await vote(app, level2, post.id)).status).toBe(201);
  });
});

describe('app.session_gate in SQL', () => {
  it('passes a level at or above the required one and raises the catalogued codes otherwise', async () => {
    const user = await userAtLevel(app, 2);
    await asViewer(app, 'app_user', user.id, async (client) => {
      const gate = (level: number | null, required: number) =>
        rowsOrError(client, 'select app.session_gate($1, $2) as level', [level, required]).then((result) =>
          typeof result === 'string' ? result : (result[0] as { level: number }).level,
        );
      expect(await gate(2, 2)).toBe(2);
      expect(await gate(4, 1)).toBe(4);
      await client.query('savepoint codes');
      const codes: string[] = [];
      for (const [level, required] of [[null, 1], [1, 2], [1, 4], [2, 3], [2, 4], [3, 4]] as const) {
        const failure = await client.query('select app.session_gate($1, $2)', [level, required]).then(
          () => 'passed',
          (error: { code?: string; message: string }) => `${error.code} ${error.message}`,
        );
        await client.query('rollback to savepoint codes');
        codes.push(failure);
      }
      expect(codes).toEqual([
        'P0001 UNAUTHORIZED',
        'P0001 PROFILE_BASICS_REQUIRED',
        'P0001 PROFILE_BASICS_REQUIRED',
        'P0001 PHONE_VERIFICATION_REQUIRED',
        'P0001 PHONE_VERIFICATION_REQUIRED',
        'P0001 HUB_READINESS_REQUIRED',
      ]);
    });
  });
});
