// GET /readyz answers 503 only when the database lacks what this build needs: a migration it ships, or
// db/sql at its level (read through app_private.applied_migrations() and applied_sql_level(), which
// only the API login role may call); a database a newer release migrated is ready for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shippedMigrations, sqlLevel } from '../../../db/migrate.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('readiness', () => {
  it('answers 503 naming a shipped migration the database lacks, 200 once it is applied', async () => {
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
    const last = shippedMigrations().at(-1) as string;
    const { rows } = await app.owner.query('delete from public.pgmigrations where name = $1 returning *', [last]);
    try {
      const response = await fetch(`${app.url}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ status: 'migrations pending', pending: [last] });
    } finally {
      await app.owner.query('insert into public.pgmigrations (id, name, run_on) values ($1, $2, $3)', [
        rows[0].id,
        rows[0].name,
        rows[0].run_on,
      ]);
    }
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
  });

  it("answers 503 while db/sql below this build's level is applied, 200 at that level or a higher one", async () => {
    const { rows } = await app.owner.query<{ level: number; sha256: string; applied_at: Date }>(
      'delete from public.sql_levels returning *',
    );
    try {
      await app.owner.query(`insert into public.sql_levels (level, sha256, applied_at) values ($1, 'older', now())`, [sqlLevel - 1]);
      const response = await fetch(`${app.url}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        status: 'migrations pending',
        pending: [`db/sql level ${sqlLevel} (the database has ${sqlLevel - 1})`],
      });
      // A newer release's migration ran (a higher level, a migration this build does not ship): still ready.
      await app.owner.query(`insert into public.sql_levels (level, sha256, applied_at) values ($1, 'newer', now())`, [sqlLevel + 1]);
      await app.owner.query(`insert into public.pgmigrations (name, run_on) values ('9999_from_a_newer_release', now())`);
      expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
    } finally {
      await app.owner.query(`delete from public.pgmigrations where name = '9999_from_a_newer_release'`);
      await app.owner.query('delete from public.sql_levels');
      for (const row of rows)
        await app.owner.query('insert into public.sql_levels (level, sha256, applied_at) values ($1, $2, $3)', [
          row.level,
          row.sha256,
          row.applied_at,
        ]);
    }
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
  });

  it('answers 503 on a database from before the db/sql level (its reader not yet there), not 500', async () => {
    await app.owner.query('alter function app_private.applied_sql_level() rename to applied_sql_level_hidden');
    try {
      const response = await fetch(`${app.url}/readyz`);
      expect(response.status).toBe(503);
      expect((await response.json()).status).toBe('migrations pending');
    } finally {
      await app.owner.query('alter function app_private.applied_sql_level_hidden() rename to applied_sql_level');
    }
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
  });

  it('lets no request role read the applied migrations', async () => {
    for (const role of ['app_anonymous', 'app_user', 'app_admin'] as const) {
      await asViewer(app, role, null, async (client) => {
        expect(await rowsOrError(client, 'select * from app_private.applied_migrations()')).toBe('42501');
        expect(await rowsOrError(client, 'select * from public.pgmigrations')).toBe('42501');
        expect(await rowsOrError(client, 'select * from app_private.applied_sql_files()')).toBe('42501');
        expect(await rowsOrError(client, 'select * from public.sql_files')).toBe('42501');
        expect(await rowsOrError(client, 'select app_private.applied_sql_level()')).toBe('42501');
        expect(await rowsOrError(client, 'select * from public.sql_levels')).toBe('42501');
      });
    }
  });
});
