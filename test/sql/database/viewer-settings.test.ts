// The viewer's settings are written once in TypeScript (db/viewer.ts viewerSettings: the role and
// the settings beginAs, the one-Sync batch and internal GraphQL apply) and read once in SQL
// (app.viewer_id, app.viewer_session_id, app.viewer_session_gate): a transaction begun as a viewer
// is that viewer to the SQL rules, and a name changed on one side only fails here.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { anonymousViewer, beginAs, sessionGate, userViewer, viewerSettings } from '../../../db/viewer.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { userAtLevel } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

async function asViewer<T extends pg.QueryResultRow>(statements: string[]): Promise<T[]> {
  const client = new pg.Client({ connectionString: app.ownerUrl });
  await client.connect();
  try {
    const results = (await client.query(statements.join(' '))) as unknown as pg.QueryResult<T>[];
    await client.query('rollback');
    return results.at(-1)!.rows;
  } finally {
    await client.end();
  }
}

it('sets exactly the role and the two identity settings the SQL reads', () => {
  expect(viewerSettings(userViewer('u', 's')).map(([name]) => name)).toEqual(['role', 'app.user_id', 'app.session_id']);
});

it('a transaction begun as a user is that user and session to the SQL, and passes its session gate', async () => {
  const user = await userAtLevel(app, 2);
  const { rows } = await app.owner.query<{ id: string }>('select id from app.sessions where user_id = $1 limit 1', [user.id]);
  const viewer = userViewer(user.id, rows[0]!.id);
  const seen = await asViewer<{ role: string; user_id: string; session_id: string; level: number }>([
    beginAs(viewer),
    sessionGate(2),
    'select current_user as role, app.viewer_id() as user_id, app.viewer_session_id() as session_id, app.viewer_session_gate(2) as level;',
  ]);
  expect(seen).toEqual([{ role: 'app_user', user_id: user.id, session_id: rows[0]!.id, level: 2 }]);
});

it('an anonymous transaction has no viewer, and a session that is not live fails the gate', async () => {
  const seen = await asViewer<{ role: string; user_id: string | null }>([
    beginAs(anonymousViewer),
    'select current_user as role, app.viewer_id() as user_id;',
  ]);
  expect(seen).toEqual([{ role: 'app_anonymous', user_id: null }]);
  await expect(asViewer([beginAs(userViewer(randomUUID(), randomUUID())), sessionGate(2)])).rejects.toThrow('UNAUTHORIZED');
});

it('sets every setting for the transaction only, as statements with nothing to plan, and writes no other name', async () => {
  const viewer = userViewer(randomUUID(), randomUUID());
  const opening = beginAs(viewer, [['statement_timeout', '5000']]);
  expect(opening).toBe(
    `begin; set local role = 'app_user'; set local app.user_id = '${viewer.userId}'; set local app.session_id = '${viewer.sessionId}'; set local statement_timeout = '5000';`,
  );
  const client = new pg.Client({ connectionString: app.ownerUrl });
  await client.connect();
  try {
    const state =
      "select current_user::text as role, coalesce(current_setting('app.user_id', true), '') as user_id, current_setting('statement_timeout') as timeout";
    const before = (await client.query(state)).rows;
    const inside = (await client.query(`${opening} ${state}; commit`)) as unknown as pg.QueryResult[];
    expect(inside.at(-2)?.rows).toEqual([{ role: 'app_user', user_id: viewer.userId, timeout: '5s' }]);
    expect((await client.query(state)).rows).toEqual(before);
  } finally {
    await client.end();
  }
  expect(() => beginAs(viewer, [["statement_timeout = 0; set role 'owner'; --", '1']])).toThrow('not a setting name');
});
