// The bounds of every internal GraphQL operation (contract section 10, server/graphql/bounds.ts),
// over real HTTP: the attack of issue 9 (a level-1 anonymous user token, 200 aliased allUsers
// connections, eight at once) is refused in validation, before any SQL, while REST answers; depth,
// list depth and page size are bounded; and a statement that runs too long is ended by the
// statement timeout on GraphQL's own pool, whose exhaustion leaves REST untouched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Admission } from '../../../server/graphql/admission.ts';
import { graphqlBounds } from '../../../server/graphql/bounds.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let anon: TestUser;
let alice: TestUser;
const publicUsers = 150;
beforeAll(async () => {
  // Room for every operation at once: these tests hold several of one user in flight (every GraphQL
  // connection busy); how many run at once is graphql-admission.test.ts's.
  app = await startTestApp({}, { graphqlAdmission: new Admission({ perKey: 100, total: 100, waitMs: 1_000 }) });
  [anon, alice] = await Promise.all([anonymousUser(app), userAtLevel(app, 3)]);
  await app.owner.query("insert into app.users (username, full_name) select 'bounds_' || g, 'Bounds ' || g from generate_series(1, $1) g", [
    publicUsers,
  ]);
});
afterAll(() => app.close());

/**
 * Connections the GraphQL pools handed out: one per request for its session check (the API
 * thread's pool), one more for an operation that runs (the GraphQL thread's pool; none for a
 * document refused in validation).
 */
let sessionChecks = 0;
beforeAll(() => {
  app.pools.graphql.on('acquire', () => (sessionChecks += 1));
});
/** The GraphQL thread has built the admin schema too (it follows the first request's). */
async function bothSchemasBuilt(): Promise<void> {
  while ((await app.services.graphql.poolStats()).built.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
}
const statementsRun = async () => sessionChecks + (await app.services.graphql.poolStats()).checkouts;

async function graphql(token: string, query: string, variables?: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const response = await fetch(`${app.url}/internal/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: await response.json() };
}

/** A request refused in validation: 400, errors, and no `data` at all (nothing was executed). */
function expectRefused(response: { status: number; body: any }, message: RegExp): void {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  expect(response.body).not.toHaveProperty('data');
  expect(response.body.errors.map((e: { message: string }) => e.message).join('\n')).toMatch(message);
}

describe('the attack of issue 9', () => {
  it('refuses 200 aliased allUsers connections, eight at once, while REST answers', async () => {
    const abusive = `{ ${Array.from({ length: 200 }, (_, i) => `u${i}: allUsers { nodes { rowId username fullName bio } }`).join(' ')} }`;
    const [rest, ...attacks] = await Promise.all([
      app.get('/users/me/profile', { token: alice.token }),
      ...Array.from({ length: 8 }, () => graphql(anon.token, abusive)),
    ]);
    for (const attack of attacks) expectRefused(attack, /Aliases limit of 10 exceeded, found 200/);
    expect(rest.status).toBe(200);
    expect(rest.body.data.id).toBe(alice.id);
  });

  it('refuses deep nesting and more than two nested lists', async () => {
    const deep =
      '{ allPosts(first: 1) { nodes { postBySourcePostId { postBySourcePostId { postBySourcePostId { postBySourcePostId { rowId } } } } } } }';
    expectRefused(await graphql(anon.token, deep), /exceeds operation depth limits/);
    const lists =
      '{ allUsers(first: 1) { nodes { followsByFollowerId(first: 1) { nodes { userByFolloweeId { followsByFollowerId(first: 1) { nodes { seq } } } } } } } }';
    expectRefused(await graphql(anon.token, lists), /exceeds operation depth limits/);
  });
});

describe('the estimated cost of an operation', () => {
  const heaviest = (aliases: number, nested: number, orderBy = 'FOLLOWS_BY_FOLLOWEE_ID_COUNT_DESC') =>
    `{ ${Array.from(
      { length: aliases },
      (_, i) =>
        `a${i}: allUsers(first: 100, orderBy: ${orderBy}) { nodes { rowId followsByFollowerId(first: ${nested}) { nodes { seq } } } }`,
    ).join(' ')} }`;

  it('refuses the attack (10 aliases x 100 users sorted by an aggregate, nested 100) in validation, before any SQL runs', async () => {
    await graphql(alice.token, '{ __typename }'); // the schema is built
    await bothSchemasBuilt(); // the admin one next, after the first request: its introspection counts too
    let before = await statementsRun();
    const answers = await Promise.all(Array.from({ length: 8 }, () => graphql(alice.token, heaviest(10, 100))));
    for (const answer of answers) expectRefused(answer, /Operation cost limit of 2500 exceeded, estimated 126010/);
    expect((await statementsRun()) - before).toBe(8);
    // An operation that runs takes a second connection.
    before = await statementsRun();
    expect((await graphql(alice.token, heaviest(1, 1, 'USERNAME_ASC'))).body.errors).toBeUndefined();
    expect((await statementsRun()) - before).toBe(2);
    // The same 400 answer as the depth and alias bounds.
    const aliases = await graphql(
      alice.token,
      `{ ${Array.from({ length: 11 }, (_, i) => `u${i}: allUsers(first: 1) { nodes { rowId } }`).join(' ')} }`,
    );
    expect({ status: answers[0]?.status, keys: Object.keys(answers[0]?.body ?? {}) }).toEqual({
      status: aliases.status,
      keys: Object.keys(aliases.body),
    });
  });

  it('counts rows by the pages written (a variable counts as 100), and whole-collection work by its own weight', async () => {
    // 100 users x (1 + 23 follows) = 2400: allowed; x (1 + 25) = 2600: refused.
    expect((await graphql(alice.token, heaviest(1, 23, 'USERNAME_ASC'))).body.errors).toBeUndefined();
    expectRefused(await graphql(alice.token, heaviest(1, 25, 'USERNAME_ASC')), /estimated 2600/);
    // An order by an aggregate of related rows reads every related row: refused whatever the page.
    expectRefused(await graphql(alice.token, heaviest(1, 0)), /estimated 2601/);
    expectRefused(
      await graphql(alice.token, '{ allUsers(first: 1, orderBy: [USERNAME_ASC, FOLLOWS_BY_FOLLOWER_ID_COUNT_DESC]) { nodes { rowId } } }'),
      /estimated 2502/,
    );
    // A page given by a variable counts as the bound, whatever the variable says.
    const variable = 'query ($n: Int) { allUsers(first: $n) { nodes { followsByFollowerId(first: $n) { nodes { seq } } } } }';
    expectRefused(await graphql(alice.token, variable, { n: 1 }), /estimated 10100/);
    // Counting or aggregating a whole collection costs 1000 per connection; fragments count too.
    const counts =
      '{ a: allUsers { totalCount aggregates { distinctCount { rowId } } nodes { rowId } } b: allUsers { ...f } } fragment f on UserConnection { totalCount }';
    expect((await graphql(alice.token, counts)).body.errors).toBeUndefined();
    expectRefused(await graphql(alice.token, counts.replace('b: allUsers', 'c: allUsers { totalCount } b: allUsers')), /estimated 3100/);
    expect((await graphql(alice.token, '{ allUsers(first: 20) { totalCount nodes { rowId } } }')).body.errors).toBeUndefined();
  });
});

describe('connection pages', () => {
  it('read 100 rows when no page size is given, and say there are more', async () => {
    const { body } = await graphql(anon.token, '{ allUsers { totalCount nodes { rowId } pageInfo { hasNextPage } } }');
    expect(body.errors).toBeUndefined();
    expect(body.data.allUsers.totalCount).toBeGreaterThan(publicUsers);
    expect(body.data.allUsers.nodes).toHaveLength(graphqlBounds.maxPageSize);
    expect(body.data.allUsers.pageInfo.hasNextPage).toBe(true);
  });

  it('refuse first or last above 100, literal or variable, without reading', async () => {
    for (const [query, variables] of [
      ['{ allUsers(first: 101) { nodes { rowId } } }', undefined],
      ['{ allUsers(last: 101) { nodes { rowId } } }', undefined],
      ['query ($n: Int) { allUsers(first: $n) { nodes { rowId } } }', { n: 1000 }],
    ] as const) {
      const { body } = await graphql(anon.token, query, variables);
      expect(body.data, query).toEqual({ allUsers: null });
      expect(body.errors?.[0]?.extensions, query).toEqual({ code: 'PAGE_SIZE_EXCEEDED' });
    }
  });

  it('honour sizes within the bound, a missing variable, and nested connections', async () => {
    const last = await graphql(anon.token, '{ allUsers(last: 5) { nodes { rowId } } }');
    expect(last.body.data.allUsers.nodes).toHaveLength(5);
    const unset = await graphql(anon.token, 'query ($n: Int) { allUsers(first: $n) { nodes { rowId } } }', {});
    expect(unset.body.data.allUsers.nodes).toHaveLength(graphqlBounds.maxPageSize);
    // Each nested count costs 1000 (the cost bound): two of them fit.
    const nested = await graphql(
      anon.token,
      '{ allUsers(first: 2) { nodes { followsByFollowerId(first: 2) { totalCount nodes { seq } } } } }',
    );
    expect(nested.body.errors).toBeUndefined();
    expect(nested.body.data.allUsers.nodes).toHaveLength(2);
  });

  it('bound groupedAggregates to 100 groups', async () => {
    const { body } = await graphql(anon.token, '{ allUsers { groupedAggregates(groupBy: [USERNAME]) { keys } } }');
    expect(body.errors).toBeUndefined();
    expect(body.data.allUsers.groupedAggregates).toHaveLength(graphqlBounds.maxPageSize);
  });
});

describe('the statement timeout and the pool of its own', () => {
  it('ends statements that run too long, while every GraphQL connection is busy and REST answers', async () => {
    // Warm the user schema, then make every read of app.reports wait on a lock.
    await graphql(alice.token, '{ allReports(first: 1) { totalCount } }');
    const locker = new pg.Client({ connectionString: app.ownerUrl });
    await locker.connect();
    try {
      await locker.query('begin; lock table app.reports in access exclusive mode');
      const graphqlConnections = (await app.services.graphql.poolStats()).max;
      const stuck = Array.from({ length: graphqlConnections }, () => graphql(alice.token, '{ allReports(first: 1) { totalCount } }'));
      await expect
        .poll(
          async () =>
            (
              await app.owner.query<{ n: number }>(
                "select count(*)::int as n from pg_stat_activity where datname = current_database() and usename = 'authenticator' and wait_event_type = 'Lock'",
              )
            ).rows[0]?.n,
          { timeout: 30_000, interval: 100 },
        )
        .toBe(graphqlConnections);
      // Every GraphQL connection waits; REST has its own pool.
      const rest = await app.get('/users/me/profile', { token: alice.token });
      expect(rest.status).toBe(200);
      for (const response of await Promise.all(stuck)) {
        expect(response.body.data).toEqual({ allReports: null });
        expect(response.body.errors?.[0]?.extensions).toEqual({ sqlstate: '57014' });
      }
    } finally {
      await locker.query('rollback').catch(() => undefined);
      await locker.end();
    }
  });
});
