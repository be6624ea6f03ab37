// How many internal GraphQL operations run at once (server/graphql/admission.ts): one per user and
// per client address, a few in the process; the rest wait briefly, then get 429 RATE_LIMITED with
// Retry-After in the envelope. Real HTTP, real PostGraphile, real PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Admission } from '../../../server/graphql/admission.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { usersAtLevels } from '../../helpers/worlds.ts';

/** An admission that records the most operations it let run at once. */
class Watched extends Admission {
  most = 0;
  override async enter(keys: string[]): Promise<() => void> {
    const leave = await super.enter(keys);
    this.most = Math.max(this.most, this.running);
    return leave;
  }
}

const heavy = `{ ${Array.from({ length: 4 }, (_, i) => `a${i}: allUsers(first: 100, orderBy: USERNAME_ASC) { nodes { rowId followsByFollowerId(first: 5) { nodes { seq } } } }`).join(' ')} }`;

async function graphql(app: TestApp, token: string, address: string, query = heavy) {
  const response = await fetch(`${app.url}/internal/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-forwarded-for': address },
    body: JSON.stringify({ query }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

describe('internal GraphQL admission', () => {
  let patient: Watched;
  let hasty: Watched;
  let app: TestApp;
  let impatientApp: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    patient = new Watched({ perKey: 1, total: 2, waitMs: 30_000 });
    hasty = new Watched({ perKey: 1, total: 2, waitMs: 1 });
    app = await startTestApp({}, { graphqlAdmission: patient });
    impatientApp = await startTestApp({}, { graphqlAdmission: hasty });
    [alice, bob] = await usersAtLevels(app, 2, 2);
    await graphql(app, alice.token, '198.51.100.1', '{ __typename }'); // the schema is built
  });
  afterAll(async () => {
    await app.close();
    await impatientApp.close();
  });

  it('runs one operation of a user at a time: eight at once all answer, one after the other', async () => {
    patient.most = 0;
    const answers = await Promise.all(Array.from({ length: 8 }, () => graphql(app, alice.token, '198.51.100.1')));
    for (const answer of answers) expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    expect(patient.most).toBe(1);
  });

  it('runs one operation per address too, whatever the tokens, and two users at two addresses side by side', async () => {
    patient.most = 0;
    await Promise.all([
      ...Array.from({ length: 3 }, () => graphql(app, alice.token, '198.51.100.7')),
      ...Array.from({ length: 3 }, () => graphql(app, bob.token, '198.51.100.7')),
    ]);
    expect(patient.most).toBe(1);
    patient.most = 0;
    await Promise.all([
      ...Array.from({ length: 3 }, () => graphql(app, alice.token, '198.51.100.8')),
      ...Array.from({ length: 3 }, () => graphql(app, bob.token, '198.51.100.9')),
    ]);
    expect(patient.most).toBe(2);
  });

  it('answers 429 RATE_LIMITED with Retry-After to an operation that found no room in time', async () => {
    const carol = await userAtLevel(impatientApp, 2);
    await graphql(impatientApp, carol.token, '198.51.100.2', '{ __typename }');
    const answers = await Promise.all(Array.from({ length: 8 }, () => graphql(impatientApp, carol.token, '198.51.100.2')));
    const refused = answers.filter((answer) => answer.status === 429);
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const answer of refused) {
      expect(answer.retryAfter).toBe('1');
      expect(answer.body).toEqual({
        success: false,
        error: { code: 'RATE_LIMITED', message: 'Too many requests. Try again later.', details: { retryAfterSeconds: 1 } },
      });
    }
    expect(hasty.most).toBe(1);
    // Room again once they are done.
    expect((await graphql(impatientApp, carol.token, '198.51.100.2')).status).toBe(200);
  });
});
