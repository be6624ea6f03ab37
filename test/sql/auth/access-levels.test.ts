// The access-level ladder is written twice: in TypeScript (server/http/access-levels.ts, which the
// HTTP gate and the OpenAPI document read) and in SQL (app.session_gate, which checks a session
// ahead of a one-round-trip statement, and app.require_level, which functions call on the viewer).
// For every level a viewer can have and every level an endpoint can require, both answer the same
// code, or both let the request through.
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { accessLevels, missingLevelCode, type AccessLevel, levels } from '../../../server/http/access-levels.ts';
import { errorCatalog } from '../../../server/http/catalog.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { asViewer } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { voteLevel } from '../../../server/votes/routes.ts';

let app: TestApp;
const users = new Map<number, TestUser>();
beforeAll(async () => {
  app = await startTestApp();
  for (const level of [1, 2, 3, 4] as const) users.set(level, await userAtLevel(app, level));
});
afterAll(() => app.close());

const required = accessLevels.map((step) => step.level);

/** The code a statement raises (app.fail's message), or null when it runs. */
async function raised(client: pg.ClientBase, text: string, params: unknown[]): Promise<string | null> {
  await client.query('savepoint probe');
  try {
    await client.query(text, params);
    await client.query('release savepoint probe');
    return null;
  } catch (error) {
    await client.query('rollback to savepoint probe');
    expect((error as { code?: string }).code).toBe('P0001');
    return (error as Error).message;
  }
}

it('app.session_gate answers what the TypeScript gate answers (no session is level 0 there)', async () => {
  const client = await app.owner.connect();
  try {
    await client.query('begin');
    for (const level of [null, 1, 2, 3, 4]) {
      for (const need of required) {
        const sql = await raised(client, 'select app.session_gate($1, $2)', [level, need]);
        expect(sql, `level ${level} requiring ${need}`).toBe(missingLevelCode(level ?? 0, need));
      }
    }
  } finally {
    await client.query('rollback');
    client.release();
  }
});

it('app.require_level answers what the TypeScript gate answers for a viewer at each level', async () => {
  for (const [level, user] of users) {
    expect((await app.get('/users/me/onboarding/status', { token: user.token })).body.data.accessLevel).toBe(level);
    const answers = await asViewer(app, 'app_user', user.id, async (client) => {
      const codes: (string | null)[] = [];
      for (const need of required) codes.push(await raised(client, 'select app.require_level($1)', [need]));
      return codes;
    });
    expect(answers, `a viewer at level ${level}`).toEqual(required.map((need) => missingLevelCode(level, need as AccessLevel)));
  }
});

it('lacking level 1 is 401, lacking any level above it is 403', () => {
  expect(accessLevels.map((step) => [step.level, errorCatalog[step.missing][0]])).toEqual([
    [1, 401],
    [2, 403],
    [3, 403],
    [4, 403],
  ]);
});

/** The SQL name of a level (app.access_level) from its TypeScript name: hubReady is 'hub_ready'. */
const sqlName = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

it('app.access_level names the levels server/http/access-levels.ts names, and refuses any other name', async () => {
  const { rows } = await app.owner.query<{ name: string; level: number }>(
    'select n as name, app.access_level(n) as level from unnest($1::text[]) n',
    [Object.keys(levels).map(sqlName)],
  );
  expect(rows).toEqual(Object.entries(levels).map(([name, level]) => ({ name: sqlName(name), level })));
  await expect(app.owner.query(`select app.access_level('hub-ready')`)).rejects.toMatchObject({ code: '20000' });
});

it('app.cast_vote requires the level the vote endpoint declares', async () => {
  const { rows } = await app.owner.query<{ body: string }>(`select pg_get_functiondef('app.cast_vote'::regproc) as body`);
  const gates = [...(rows[0]?.body ?? '').matchAll(/viewer_session_gate\(app\.access_level\('([a-z_]+)'\)\)/g)].map((match) => match[1]);
  expect(gates).toHaveLength(1);
  const named = Object.entries(levels).find(([name]) => sqlName(name) === gates[0]);
  expect(named?.[1]).toBe(voteLevel);
});

it('no SQL function states a level as a number: each asks app.access_level by name', async () => {
  const { rows } = await app.owner.query<{ name: string }>(
    `select p.oid::regprocedure::text as name from pg_proc p
     where p.pronamespace in ('app'::regnamespace, 'app_private'::regnamespace)
       and regexp_replace(p.prosrc, '--[^\n]*', '', 'g') ~ '(require_level|viewer_has_level|viewer_session_gate)\\(\\d|level\\)? *>= *\\d'
     order by 1`,
  );
  expect(rows).toEqual([]);
});
