// Endpoints whose session check travels with their first statement (sessionCheckWithFirstStatement:
// the vote and the onboarding status): the same 401/403/422 answers in the same order as every
// other endpoint, nothing written when the session is refused, and connections left clean. The
// vote's check is inside app.cast_vote (db/sql/votes.sql), the status's inside
// app.onboarding_status_gated (db/sql/users.sql), and both requests are one round trip: the
// opening, the statement and `commit` pipelined in one write (db/request-transaction.ts), nothing of
// which outlives the transaction on the connection.
import pg from 'pg';
import { survivesServerLoss } from '../../../db/pools.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleUrl } from '../../../db/roles.ts';
import { RequestTransaction, withLiterals } from '../../../db/request-transaction.ts';
import { anonymousViewer, userViewer } from '../../../db/viewer.ts';
import type { TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let author: TestUser;
beforeAll(async () => {
  [app, author] = await appWithUsers(4);
});
afterAll(() => app.close());

/** One pipelined connection as the API's login. Its server may go while the client is still
 * closing (app.close drops the database with force), as test/helpers/app.ts's owner pool says. */
function authenticatorPool(): pg.Pool {
  return survivesServerLoss(new pg.Pool({ connectionString: roleUrl(app.ownerUrl, 'authenticator'), max: 1, pipeline: true }));
}

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
               from app.vote_counters where post_id = $1 and hub_id is null)::int
              + (select count(*) from app_private.sealed_ballots where post_id = $1 and hub_id is null)::int as counted,
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
    for (const [postId, position] of [
      [post.id, 'left'],
      [post.id, 'far_left'],
      ['nope', 'left'],
    ] as const) {
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
      for (const [level, required] of [
        [null, 1],
        [1, 2],
        [1, 4],
        [2, 3],
        [2, 4],
        [3, 4],
      ] as const) {
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

describe('one write, one round trip: the whole request transaction on one connection', () => {
  const castVote = 'select voted_at, hub_ids, global_tally from app.cast_vote($1, $2, $3, $4, $5, $6)';
  /** The sealed vote's parameters, as the API sends them for a post placed in no hub. */
  const sealed = (postId: string) => [
    postId,
    app.services.ballots.keyId,
    app.services.ballots.seal(postId, null, 'left').toString('hex'),
    '{}',
    '{}',
    '5',
  ];

  async function sessionOf(user: TestUser): Promise<string> {
    const { rows } = await app.owner.query<{ id: string }>(
      'select id from app.sessions where user_id = $1 order by created_at desc limit 1',
      [user.id],
    );
    return (rows[0] as { id: string }).id;
  }

  /** A request's transaction on a pool of one connection (as the API pool: pipelined), and its error code. */
  async function run(pool: pg.Pool, user: TestUser | null, level: number, text: string, params: string[], statementGateLevel?: number) {
    const tx = new RequestTransaction(pool, anonymousViewer);
    if (user) tx.deferSession(userViewer(user.id, await sessionOf(user)), level);
    return tx.queryAndCommit(text, params, statementGateLevel).then(
      (result) => result.rows,
      (error: { message: string }) => error.message,
    );
  }

  it('cast_vote checks its own session first (401, then 403, then 404), and a refusal writes nothing', async () => {
    const pool = authenticatorPool();
    try {
      const post = await createPost(app, author, slider);
      const before = await voteWrites(post.id);
      const revoked = await loggedOut(2);
      const level1 = await anonymousUser(app);
      const missing = '00000000-0000-4000-8000-000000000000';
      expect(await run(pool, revoked, 2, castVote, sealed(post.id), 2)).toBe('UNAUTHORIZED');
      expect(await run(pool, revoked, 2, castVote, sealed(missing), 2)).toBe('UNAUTHORIZED');
      expect(await run(pool, level1, 2, castVote, sealed(post.id), 2)).toBe('PROFILE_BASICS_REQUIRED');
      const voter = await userAtLevel(app, 2);
      expect(await run(pool, voter, 2, castVote, sealed(missing), 2)).toBe('POST_NOT_FOUND');
      expect(await voteWrites(post.id)).toEqual(before);
      // The same connection, after those failures: the vote counts once.
      expect(await run(pool, voter, 2, castVote, sealed(post.id), 2)).toMatchObject([{ hub_ids: [] }]);
      expect(await voteWrites(post.id)).toMatchObject({ receipts: 1, counted: 1, notifications: 1, events: 1 });
    } finally {
      await pool.end();
    }
  });

  it('holds the commit when asked: the statement runs, the caller adds its own and commits or rolls back', async () => {
    const post = await createPost(app, author, slider);
    const before = await voteWrites(post.id);
    const voter = await userAtLevel(app, 2);
    for (const commit of [false, true]) {
      const tx = new RequestTransaction(app.pools.api, anonymousViewer);
      tx.deferSession(userViewer(voter.id, await sessionOf(voter)), 2);
      tx.holdCommit();
      expect((await tx.queryAndCommit(castVote, sealed(post.id), 2)).rows).toMatchObject([{ hub_ids: [] }]);
      // Still open: the caller's statement sees the vote in the same transaction.
      const { rows } = await tx.query<{ n: number }>('select count(*)::int as n from app.vote_receipts where post_id = $1', [post.id]);
      expect(rows).toEqual([{ n: 1 }]);
      await tx.finish(commit);
      expect(await voteWrites(post.id)).toEqual(commit ? expect.objectContaining({ receipts: 1, counted: 1 }) : before);
    }
  });

  it("runs the onboarding status's own gate on its read, in place of the deferred check", async () => {
    const gated = 'select access_level from app.onboarding_status_gated($1)';
    const open = async (user: TestUser, level: number) => {
      const tx = new RequestTransaction(app.pools.api, anonymousViewer);
      tx.deferSession(userViewer(user.id, await sessionOf(user)), level);
      return tx;
    };
    // The deferred check is left out (the statement carries it), so the statement's gate is what refuses.
    const revoked = await loggedOut(1);
    await expect((await open(revoked, 1)).queryAndCommit(gated, [1], 1)).rejects.toThrow('UNAUTHORIZED');
    const basic = await userAtLevel(app, 1);
    await expect((await open(basic, 2)).queryAndCommit(gated, [2], 2)).rejects.toThrow('PROFILE_BASICS_REQUIRED');
    expect((await (await open(author, 1)).queryAndCommit(gated, [1], 1)).rows).toEqual([{ access_level: 4 }]);
    // Without a level, no gate: the writes' answers read it after their own check.
    const ungated = await asViewer(
      app,
      'app_user',
      revoked.id,
      async (client) => (await client.query('select access_level from app.onboarding_status_gated(null)')).rows,
    );
    expect(ungated).toEqual([{ access_level: 1 }]);
  });

  it('refuses to leave out the gate for a statement that checks a lower level than the request needs', async () => {
    const tx = new RequestTransaction(app.pools.api, anonymousViewer);
    tx.deferSession(userViewer(author.id, await sessionOf(author)), 3);
    await expect(tx.queryAndCommit('select 1', ['x'], 2)).rejects.toThrow('statement gates at level 2, the request needs 3');
  });

  it('commits or rolls back: no setting, role, bound or prepared statement outlives its request on the connection', async () => {
    const pool = authenticatorPool();
    try {
      const probe =
        "select current_user::text as role, current_setting('app.user_id', true) as user_id, current_setting('app.session_id', true) as session_id";
      const revoked = await loggedOut(1);
      // A refused gate first, on a fresh connection: the statement behind it changes nothing. (A
      // statement without parameters goes out with the opening and commit as one simple-query text.)
      expect(await run(pool, revoked, 1, 'select * from app.onboarding_status()', [])).toBe('UNAUTHORIZED');
      expect(await run(pool, author, 1, 'select access_level from app.onboarding_status()', [])).toEqual([{ access_level: 4 }]);
      // The statement itself failing, in that one text: the commit behind it did not run, and the
      // transaction is rolled back before the connection is used again.
      expect(await run(pool, author, 1, "select app.fail('POST_NOT_FOUND')", [])).toBe('POST_NOT_FOUND');
      expect(await run(pool, author, 1, 'select access_level from app.onboarding_status_gated(1)', [])).toEqual([{ access_level: 4 }]);
      expect(await run(pool, revoked, 1, 'select access_level from app.onboarding_status_gated(1)', [], 1)).toBe('UNAUTHORIZED');
      const bounded = `${probe}, current_setting('statement_timeout') as statement_timeout, current_setting('lock_timeout') as lock_timeout`;
      expect(await run(pool, author, 1, bounded, [])).toEqual([
        { role: 'app_user', user_id: author.id, session_id: await sessionOf(author), statement_timeout: '5s', lock_timeout: '2s' },
      ]);
      expect(await run(pool, null, 0, probe, [])).toEqual([{ role: 'app_anonymous', user_id: '', session_id: '' }]);
      const { rows } = await pool.query(
        `select current_user::text as role, current_setting('app.user_id', true) as user_id, current_setting('statement_timeout') as statement_timeout,
                (select count(*) from pg_prepared_statements)::int as prepared`,
      );
      expect(rows).toEqual([{ role: 'authenticator', user_id: '', statement_timeout: '0', prepared: 0 }]);
    } finally {
      await pool.end();
    }
  });
});

describe('a one-statement transaction as one message: its values written in as literals', () => {
  it('writes plain values in and leaves every other statement to bind parameters', () => {
    expect(withLiterals({ text: 'select $1, $2, $10, $3', values: ['a', 2, null, true, 5, 6, 7, 8, 9, 'ten'] })).toBe(
      "select 'a', '2', 'ten', null",
    );
    expect(withLiterals({ text: 'select 1' })).toBe('select 1');
    // Bytes, dates, arrays and objects stay bind parameters; so does a text where $n may be quoted.
    expect(withLiterals({ text: 'select $1', values: [Buffer.from('x')] })).toBeUndefined();
    expect(withLiterals({ text: 'select $1', values: [new Date()] })).toBeUndefined();
    expect(withLiterals({ text: 'select $1', values: [['a']] })).toBeUndefined();
    expect(withLiterals({ text: "select '$1', $1", values: ['a'] })).toBeUndefined();
    expect(withLiterals({ text: 'select $$x$$, $1', values: ['a'] })).toBeUndefined();
    expect(withLiterals({ text: 'select $2', values: ['a'] })).toBeUndefined();
  });

  it('reads every value as the server reads it bound: quotes, backslashes, unicode, numbers and types by place', async () => {
    const values = ["it's", 'back\\slash \\x41', "'); drop table app.users; --", 'ünïcødé 🗳️', '42', 7, -1.5, true, null];
    const text = `select $1::text as a, $2::text as b, $3::text as c, $4::text as d, $5::int + 1 as e, $6 + 1 as f,
                  $7::numeric as g, $8::boolean as h, $9::uuid is null as i`;
    const written = withLiterals({ text, values });
    expect(written).toBeDefined();
    const viaText = (await app.owner.query(written as string)).rows;
    expect(viaText).toEqual((await app.owner.query(text, values)).rows);
    expect(viaText[0]).toMatchObject({ a: "it's", b: 'back\\slash \\x41', c: "'); drop table app.users; --", e: 43, h: true, i: true });
  });

  it("keeps the transaction's statement bound inside the one text", async () => {
    const pool = authenticatorPool();
    try {
      const tx = new RequestTransaction(pool, anonymousViewer, { statementTimeoutMs: 300, lockTimeoutMs: 300 });
      const started = Date.now();
      const failure = await tx.queryAndCommit('select pg_sleep($1)', [3]).catch((error: { code?: string }) => error.code);
      expect(failure).toBe('57014');
      expect(Date.now() - started).toBeLessThan(2500);
      expect((await pool.query("select current_setting('statement_timeout') as t")).rows).toEqual([{ t: '0' }]);
    } finally {
      await pool.end();
    }
  });

  it('sends the vote as one message, and a refusal inside it leaves the connection clean', async () => {
    const pool = authenticatorPool();
    try {
      const post = await createPost(app, author, slider);
      const voter = await userAtLevel(app, 2);
      const { rows } = await app.owner.query<{ id: string }>(
        'select id from app.sessions where user_id = $1 order by created_at desc limit 1',
        [voter.id],
      );
      const sessionId = (rows[0] as { id: string }).id;
      const params = [
        post.id,
        app.services.ballots.keyId,
        app.services.ballots.seal(post.id, null, 'left').toString('hex'),
        '{}',
        '{}',
        '5',
      ];
      const castVote = 'select voted_at, hub_ids from app.cast_vote($1, $2, $3, $4, $5, $6)';
      expect(withLiterals({ text: castVote, values: params })).toBeDefined();
      // Every message the pool's connections are given, as the text they carry.
      const sent: string[] = [];
      pool.on('acquire', (client: pg.PoolClient & { counted?: boolean }) => {
        if (client.counted) return;
        client.counted = true;
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as { query: unknown }).query = (...args: unknown[]) => {
          const [config] = args;
          sent.push(typeof config === 'string' ? config : (config as { text: string }).text);
          return query(...args);
        };
      });
      const vote = () => {
        const tx = new RequestTransaction(pool, anonymousViewer);
        tx.deferSession(userViewer(voter.id, sessionId), 2);
        return tx.queryAndCommit(castVote, params, 2).then(
          (result) => result.rows,
          (error: { message: string }) => error.message,
        );
      };
      expect(await vote()).toMatchObject([{ hub_ids: [] }]);
      // One text: the opening, the vote with its values written in, and commit.
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(
        /^begin; set local role = 'app_user';.* select voted_at, hub_ids from app\.cast_vote\('[0-9a-f-]{36}', .*; commit$/s,
      );
      expect(await vote()).toBe('VOTE_ALREADY_CAST');
      // The refused one: its text, then the rollback before the connection went back.
      expect(sent.slice(1).map((text) => text.slice(-8))).toEqual(['; commit', 'rollback']);
      expect(await voteWrites(post.id)).toMatchObject({ receipts: 1, counted: 1 });
      const { rows: state } = await pool.query("select current_user::text as role, current_setting('app.user_id', true) as user_id");
      expect(state).toEqual([{ role: 'authenticator', user_id: '' }]);
    } finally {
      await pool.end();
    }
  });
});
