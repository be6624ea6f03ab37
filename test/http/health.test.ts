// GET /readyz compares the migrations and db/sql files this checkout ships with those applied to the
// database, read through app_private.applied_migrations() and applied_sql_files(), which only the API
// login role may call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shippedMigrations } from '../../db/migrate.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { asViewer, rowsOrError } from '../helpers/sql.ts';

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
      await app.owner.query('insert into public.pgmigrations (id, name, run_on) values ($1, $2, $3)', [rows[0].id, rows[0].name, rows[0].run_on]);
    }
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
  });

  it('answers 503 naming a db/sql file whose content differs from the one applied, 200 once it is applied', async () => {
    const { rows } = await app.owner.query(`update public.sql_files set sha256 = 'older' where file = 'votes.sql' returning (select sha256 from public.sql_files where file = 'votes.sql') as was`);
    try {
      const response = await fetch(`${app.url}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ status: 'migrations pending', pending: ['db/sql/votes.sql'] });
    } finally {
      await app.owner.query(`update public.sql_files set sha256 = $1 where file = 'votes.sql'`, [rows[0].was]);
    }
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
  });

  it('answers 503 naming a db/sql file applied but no longer shipped (the runner would apply the files again)', async () => {
    await app.owner.query(`insert into public.sql_files (file, sha256, applied_at) values ('retired.sql', 'x', now())`);
    try {
      const response = await fetch(`${app.url}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ status: 'migrations pending', pending: ['db/sql/retired.sql'] });
    } finally {
      await app.owner.query(`delete from public.sql_files where file = 'retired.sql'`);
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
      });
    }
  });
});
