// The internal GraphQL API (contract section 10): POST /internal/graphql over real HTTP. The admin
// token acts as app_admin, a user's access token as that user under row-level security (read-only),
// anything else is 401 in the error envelope; schema `app` only, with pg-aggregates, and no
// SQL-internal, sign-in or vote-position surface.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getIntrospectionQuery } from 'postgraphile/graphql';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createHub } from '../../helpers/hubs.ts';
import { anonymousUser, userAtLevel, verifyPhone, type TestUser } from '../../helpers/users.ts';

const adminToken = 'test-admin-token-0123456789abcdef';
const unauthorized = { success: false, error: { code: 'UNAUTHORIZED', message: 'Authentication required.', details: {} } };

let app: TestApp;
let alice: TestUser; // phone-confirmed, public profile
let bob: TestUser; // phone-confirmed, public profile
let anon: TestUser; // anonymous: no handle, so not public
beforeAll(async () => {
  app = await startTestApp({ ADMIN_API_TOKEN: adminToken });
  [alice, bob, anon] = await Promise.all([userAtLevel(app, 3), userAtLevel(app, 3), anonymousUser(app)]);
});
afterAll(() => app.close());

interface GraphqlResponse {
  status: number;
  body: any;
}

async function graphql(baseUrl: string, query: string, token?: string, variables?: Record<string, unknown>): Promise<GraphqlResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const response = await fetch(`${baseUrl}/internal/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  return { status: response.status, body: await response.json() };
}

/** Runs a query that must succeed and returns its data. */
async function data(query: string, token: string, variables?: Record<string, unknown>): Promise<any> {
  const response = await graphql(app.url, query, token, variables);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expect(response.body.errors, JSON.stringify(response.body.errors)).toBeUndefined();
  return response.body.data;
}

const ids = (nodes: { rowId?: string; userId?: string }[]) => nodes.map((n) => n.rowId ?? n.userId).sort();

describe('authentication', () => {
  it('answers no token, a bad token and a malformed header with 401 in the error envelope', async () => {
    for (const token of [undefined, 'not-a-token', `${adminToken}x`, alice.token.slice(0, -2)]) {
      const response = await graphql(app.url, '{ __typename }', token);
      expect(response.status, String(token)).toBe(401);
      expect(response.body).toEqual(unauthorized);
    }
    const malformed = await fetch(`${app.url}/internal/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Basic abc' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(malformed.status).toBe(401);
    expect(await malformed.json()).toEqual(unauthorized);
  });

  it("refuses a revoked session's access token", async () => {
    const user = await anonymousUser(app);
    expect((await graphql(app.url, '{ __typename }', user.token)).status).toBe(200);
    const logout = await app.post('/auth/logout', { refreshToken: user.refreshToken, logoutFromAllDevices: false }, { token: user.token });
    expect(logout.status).toBe(200);
    const response = await graphql(app.url, '{ __typename }', user.token);
    expect(response.status).toBe(401);
    expect(response.body).toEqual(unauthorized);
  });

  it('lives outside /api/v1', async () => {
    expect((await app.post('/internal/graphql', { query: '{ __typename }' })).body.error.code).toBe('ROUTE_NOT_FOUND');
  });

  it('turns the admin token off when ADMIN_API_TOKEN is unset; user tokens still work', async () => {
    const other = await startTestApp();
    try {
      const admin = await graphql(other.url, '{ __typename }', adminToken);
      expect(admin.status).toBe(401);
      expect(admin.body).toEqual(unauthorized);
      const user = await anonymousUser(other);
      const response = await graphql(other.url, '{ allSessions { nodes { userId } } }', user.token);
      expect(response.status).toBe(200);
      expect(ids(response.body.data.allSessions.nodes)).toEqual([user.id]);
    } finally {
      await other.close();
    }
  });
});

describe('a user token: that user under row-level security', () => {
  it("sees only the user's own sessions", async () => {
    const result = await data('{ allSessions { totalCount nodes { rowId userId revokedAt } } }', alice.token);
    expect(result.allSessions.totalCount).toBeGreaterThan(0);
    for (const session of result.allSessions.nodes) expect(session.userId).toBe(alice.id);
    const { rows } = await app.owner.query<{ id: string }>('select id from app.sessions where user_id = $1', [alice.id]);
    expect(ids(result.allSessions.nodes)).toEqual(rows.map((r) => r.id).sort());
  });

  it("never sees another user's phone identity or sessions", async () => {
    const phones = await data('{ allPhoneIdentities { nodes { userId phoneE164 } } }', alice.token);
    expect(phones.allPhoneIdentities.nodes).toEqual([{ userId: alice.id, phoneE164: alice.phone?.e164 }]);
    const bobsPhone = await data('query ($id: UUID!) { phoneIdentityByUserId(userId: $id) { phoneE164 } }', alice.token, { id: bob.id });
    expect(bobsPhone.phoneIdentityByUserId).toBeNull();
    const bobsSessions = await data('query ($id: UUID!) { allSessions(condition: { userId: $id }) { totalCount } }', alice.token, {
      id: bob.id,
    });
    expect(bobsSessions.allSessions.totalCount).toBe(0);
  });

  it('sees public profiles and itself, not anonymous users', async () => {
    const result = await data('{ allUsers { nodes { rowId username } } }', anon.token);
    const seen = ids(result.allUsers.nodes);
    expect(seen).toEqual(expect.arrayContaining([alice.id, bob.id, anon.id]));
    const other = await anonymousUser(app);
    const again = ids((await data('{ allUsers { nodes { rowId } } }', anon.token)).allUsers.nodes);
    expect(again).not.toContain(other.id);
    expect(again).toContain(anon.id);
  });

  it('has no field for a column its role may not read (the admin schema has it)', async () => {
    const query = '{ allUsers { nodes { rowId termsVersion } } }';
    const response = await graphql(app.url, query, alice.token);
    expect(response.status).toBe(400);
    expect(response.body.data).toBeUndefined();
    expect(response.body.errors?.[0]?.message).toMatch(/Cannot query field "termsVersion"/);
    const { rows } = await app.owner.query<{ terms_version: string | null }>('select terms_version from app.users where id = $1', [
      alice.id,
    ]);
    expect((await data(query, adminToken)).allUsers.nodes).toContainEqual({ rowId: alice.id, termsVersion: rows[0]?.terms_version });
  });

  it('reads the allow-listed onboarding status of the viewer', async () => {
    const result = await data('{ onboardingStatus { nodes { accessLevel phoneConfirmed } } }', alice.token);
    expect(result.onboardingStatus.nodes).toEqual([{ accessLevel: 3, phoneConfirmed: true }]);
  });
});

describe('the admin token: app_admin', () => {
  it('sees every user (users_select_admin), anonymous ones included', async () => {
    const result = await data('{ allUsers { totalCount nodes { rowId } } }', adminToken);
    const { rows } = await app.owner.query<{ n: number }>('select count(*)::int as n from app.users');
    expect(result.allUsers.totalCount).toBe(rows[0]?.n);
    expect(ids(result.allUsers.nodes)).toEqual(expect.arrayContaining([alice.id, bob.id, anon.id]));
  });

  it('gets no phone numbers and no sessions (no grants, so no fields)', async () => {
    for (const field of ['allPhoneIdentities', 'allSessions']) {
      const response = await graphql(app.url, `{ ${field} { nodes { userId } } }`, adminToken);
      expect(response.status, field).toBe(400);
      expect(response.body.data, field).toBeUndefined();
      expect(response.body.errors?.[0]?.message, field).toMatch(new RegExp(`Cannot query field "${field}"`));
    }
  });

  it('answers the standard introspection query', async () => {
    const result = await data(getIntrospectionQuery(), adminToken);
    expect(result.__schema.queryType.name).toBe('Query');
    expect(result.__schema.types.length).toBeGreaterThan(50);
  });

  it("writes what app_admin's grants allow, and a user token writes nothing", async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner);
    const mutation =
      'mutation ($id: UUID!) { updateHubByRowId(input: { rowId: $id, hubPatch: { isRecommended: true } }) { hub { rowId isRecommended } } }';
    // A user token's schema has no mutations at all (and its transaction is read-only besides).
    const asUser = await graphql(app.url, mutation, owner.token, { id: hub.id });
    expect(asUser.status).toBe(400);
    expect(asUser.body.errors?.[0]?.message).toBe('This schema has no mutation operations.');
    const { rows: before } = await app.owner.query('select is_recommended from app.hubs where id = $1', [hub.id]);
    expect(before[0]?.is_recommended).toBe(false);
    const asAdmin = await data(mutation, adminToken, { id: hub.id });
    expect(asAdmin.updateHubByRowId.hub).toEqual({ rowId: hub.id, isRecommended: true });
    const { rows } = await app.owner.query('select is_recommended from app.hubs where id = $1', [hub.id]);
    expect(rows[0]?.is_recommended).toBe(true);
  });
});

interface SchemaNames {
  queryFields: string[];
  mutationFields: string[];
  typeNames: string[];
  fieldNames: string[];
}

describe('the schemas (user and admin)', () => {
  const schemas: Record<'user' | 'admin', SchemaNames> = {} as never;
  beforeAll(async () => {
    for (const [name, token] of [
      ['user', alice.token],
      ['admin', adminToken],
    ] as const) {
      const result = await data(
        '{ __schema { queryType { fields { name } } mutationType { fields { name } } types { name fields { name } enumValues { name } } } }',
        token,
      );
      schemas[name] = {
        queryFields: result.__schema.queryType.fields.map((f: any) => f.name),
        mutationFields: result.__schema.mutationType?.fields.map((f: any) => f.name) ?? [],
        typeNames: result.__schema.types.map((t: any) => t.name),
        fieldNames: result.__schema.types.flatMap((t: any) => (t.fields ?? []).map((f: any) => f.name)),
      };
    }
  });

  it('hold no app_private table', async () => {
    const { rows } = await app.owner.query<{ name: string }>("select tablename as name from pg_tables where schemaname = 'app_private'");
    expect(rows.length).toBeGreaterThan(3);
    const pascal = (name: string) => name.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
    for (const { queryFields, typeNames } of Object.values(schemas)) {
      for (const { name } of rows) {
        expect(queryFields, name).not.toContain(`all${pascal(name)}`);
        expect(typeNames, name).not.toContain(pascal(name).replace(/s$/, ''));
      }
    }
    expect(schemas.user.queryFields).toEqual(expect.arrayContaining(['allUsers', 'allSessions', 'allHubs', 'allPosts']));
    expect(schemas.admin.queryFields).toEqual(expect.arrayContaining(['allUsers', 'allHubs', 'allPosts']));
  });

  it('omit SQL-internal helpers, sign-in functions and the REST halves of writes', () => {
    const omitted = [
      'fail',
      'requireLevel',
      'viewerId',
      'viewerSessionId',
      'viewerHasLevel',
      'sessionAccessLevel',
      'userAccessLevel',
      'notificationVisibleTo',
      'canSeePost',
      'isActiveMember',
      'viewerBlockList',
      'requestOtp',
      'verifyOtp',
      'anonymousSession',
      'idpSession',
      'refreshSession',
      'consumeRateLimit',
      'logout',
      'sessionUser',
      'createUploadIntent',
      'completeUpload',
      'castVote',
      'voteTally',
      'profileSocial',
      'completeProfileBasics',
      'createInviteLink',
    ];
    for (const { queryFields, mutationFields, fieldNames } of Object.values(schemas)) {
      for (const name of omitted) {
        expect(queryFields, name).not.toContain(name);
        expect(mutationFields, name).not.toContain(name);
        expect(fieldNames, name).not.toContain(name);
      }
    }
    expect(schemas.user.queryFields).toContain('onboardingStatus');
  });

  it("have mutations only in the admin schema, where app_admin's grants allow", () => {
    expect(schemas.user.mutationFields).toEqual([]);
    expect(schemas.admin.mutationFields.sort()).toEqual([
      'addDefaultFeedUser',
      'dismissReport',
      'removeDefaultFeedUser',
      'removeHub',
      'removePost',
      'reopenReport',
      'resolveReport',
      'restorePost',
      'suspendUser',
      'unsuspendUser',
      'updateHub',
      'updateHubByCustomLink',
      'updateHubByRowId',
    ]);
  });

  it('never expose a vote position', () => {
    for (const { queryFields, typeNames, fieldNames } of Object.values(schemas)) {
      expect(queryFields).not.toContain('allVoteCounters');
      expect(typeNames).not.toContain('VotePosition');
      expect(typeNames.filter((name) => /counter/i.test(name))).toEqual([]);
      expect(fieldNames).not.toContain('position');
    }
  });
});

describe('pg-aggregates', () => {
  it('aggregates under the same row-level security', async () => {
    const query = '{ allUsers { totalCount aggregates { distinctCount { rowId } } } }';
    const admin = await data(query, adminToken);
    expect(Number(admin.allUsers.aggregates.distinctCount.rowId)).toBe(admin.allUsers.totalCount);
    const user = await data(query, alice.token);
    expect(Number(user.allUsers.aggregates.distinctCount.rowId)).toBe(user.allUsers.totalCount);
    expect(user.allUsers.totalCount).toBeLessThan(admin.allUsers.totalCount);

    const sessions = await data('{ allSessions { groupedAggregates(groupBy: [USER_ID]) { keys distinctCount { rowId } } } }', alice.token);
    expect(sessions.allSessions.groupedAggregates).toEqual([{ keys: [alice.id], distinctCount: { rowId: expect.anything() } }]);
  });

  it('a phone verified later shows up for its owner only', async () => {
    const user = await anonymousUser(app);
    const upgraded = await verifyPhone(app, undefined, user.token);
    const own = await data('{ allPhoneIdentities { totalCount aggregates { distinctCount { userId } } } }', upgraded.token);
    expect(own.allPhoneIdentities.totalCount).toBe(1);
    expect(Number(own.allPhoneIdentities.aggregates.distinctCount.userId)).toBe(1);
  });
});
