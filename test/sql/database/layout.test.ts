// The two ways a database reaches the current schema end in the same place, db/schema.sql: a fresh
// one (the baseline, later migrations, then db/sql; the template every test file clones, checked by
// schema-file.test.ts) and one that ran the frozen chain (migrations/frozen/, the migrations the
// baseline replaced), whole or in part, before this runner took over. And db/sql is applied by
// comparison: applied again it changes nothing, it puts back what was changed by hand, and it leaves
// (and reports) a policy or trigger that no file defines, since removing one is a later release's
// migration.
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { runner } from 'node-pg-migrate';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  baselineMigration,
  frozenMigrations,
  migrate,
  shippedMigrations,
  shippedSqlFiles,
  sqlDir,
  sqlFiles,
  sqlLevel,
} from '../../../db/migrate.ts';
import { acrossMajors, currentSchema, schemaFileMajor, schemaFilePath } from '../../../db/schema/schema-file.ts';
import { databaseUrl } from '../../helpers/global-setup.ts';

let admin: pg.Client;
let major: number;
const created: string[] = [];
beforeAll(async () => {
  admin = new pg.Client({ connectionString: inject('adminUrl') });
  await admin.connect();
  const { rows } = await admin.query<{ major: number }>(`select current_setting('server_version_num')::int / 10000 as major`);
  major = rows[0]?.major ?? 0;
});
afterAll(async () => {
  for (const database of created) await admin.query(`drop database if exists ${database} with (force)`);
  await admin.end();
});

async function newDatabase(template?: string): Promise<string> {
  const database = `opinion_layout_${randomBytes(6).toString('hex')}`;
  created.push(database);
  await admin.query(`create database ${database}${template ? ` template ${template}` : ''}`);
  return databaseUrl(inject('adminUrl'), database);
}

/** What the deployed code before the baseline did: graphile-worker's schema, then the frozen chain (its first `count` files). */
async function runFrozenChain(url: string, count?: number): Promise<void> {
  await runWorkerMigrations({ connectionString: url, logger: new Logger(() => () => {}) });
  await runner({
    databaseUrl: url,
    dir: path.join(import.meta.dirname, '..', '..', '..', 'migrations', 'frozen'),
    direction: 'up',
    migrationsTable: 'pgmigrations',
    checkOrder: true,
    log: () => {},
    ...(count === undefined ? {} : { count }),
  });
}

/** The dump of `url` compared with db/schema.sql the way schema-file.test.ts compares it. */
async function expectCurrentSchema(url: string, why: string): Promise<void> {
  const produced = await currentSchema(url, major);
  const committed = await readFile(schemaFilePath, 'utf8');
  if (major === schemaFileMajor) expect(produced, why).toBe(committed);
  else expect(acrossMajors(produced), why).toBe(acrossMajors(committed));
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('a database that ran the frozen chain', () => {
  it('whole: the runner records the baseline without running it, applies db/sql, and the schema is the current one', async () => {
    const url = await newDatabase();
    await runFrozenChain(url);
    await migrate(url);
    const names = (await query<{ name: string }>(url, 'select name from public.pgmigrations order by id')).map((row) => row.name);
    // The baseline (0000, first of migrations/) recorded after the frozen chain, then the migrations after it.
    expect(names).toEqual([...frozenMigrations(), ...shippedMigrations()]);
    await expectCurrentSchema(url, 'the frozen chain and then the runner must give db/schema.sql');
  });

  it('in part: the runner finishes the frozen chain first', async () => {
    const url = await newDatabase();
    const half = Math.floor(frozenMigrations().length / 2);
    await runFrozenChain(url, half);
    await migrate(url);
    const names = (await query<{ name: string }>(url, 'select name from public.pgmigrations order by id')).map((row) => row.name);
    // The baseline (0000, first of migrations/) recorded after the frozen chain, then the migrations after it.
    expect(names).toEqual([...frozenMigrations(), ...shippedMigrations()]);
    await expectCurrentSchema(url, 'part of the frozen chain and then the runner must give db/schema.sql');
  });
});

it('the baseline is the first versioned migration', () => {
  expect(shippedMigrations()[0]).toBe(baselineMigration);
});

describe('db/sql', () => {
  it('is applied in the order sqlFiles gives, which names every file of the folder once', () => {
    const present = readdirSync(sqlDir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.sql'))
      .map((file) => file.slice(0, -'.sql'.length))
      .sort();
    expect([...sqlFiles].sort()).toEqual(present);
    expect(new Set(sqlFiles).size).toBe(sqlFiles.length);
  });

  it('is recorded file by file with its content hash', async () => {
    const url = await newDatabase(inject('templateDatabase'));
    const rows = await query<{ file: string; sha256: string }>(url, 'select file, sha256 from public.sql_files order by file');
    expect(rows).toEqual(
      shippedSqlFiles()
        .map(({ file, sha256 }) => ({ file, sha256 }))
        .sort((a, b) => (a.file < b.file ? -1 : 1)),
    );
    expect(await query(url, 'select level from public.sql_levels')).toEqual([{ level: sqlLevel }]);
  });

  it('is not applied over a database that a newer release migrated', async () => {
    const url = await newDatabase(inject('templateDatabase'));
    await query(url, `insert into public.sql_levels (level, sha256, applied_at) values (${sqlLevel + 1}, 'newer', now())`);
    await expect(migrate(url)).rejects.toThrow(`this release's db/sql is level ${sqlLevel}, but the database has level ${sqlLevel + 1}`);
    await query(
      url,
      `delete from public.sql_levels where level > ${sqlLevel}; insert into public.pgmigrations (name, run_on) values ('9999_newer', now())`,
    );
    await expect(migrate(url)).rejects.toThrow('migration 9999_newer ran, but this release does not ship it');
  });

  it('applied again, changes only what differs from its files, and reports what no file defines', async () => {
    const url = await newDatabase(inject('templateDatabase'));
    expect(await migrate(url)).toEqual({ changed: [], orphans: [] });
    // Changes made by hand, and objects no file defines.
    await query(
      url,
      `create or replace function app_private.iso(p_at timestamptz) returns text language sql immutable set search_path = pg_catalog as $$ select 'by hand' $$;
       alter policy hubs_select_signed_in on app.hubs using (true);
       revoke select (username) on app.users from app_anonymous;
       comment on trigger _300_name_words_insert on app.users is 'by hand';
       drop trigger _300_name_words_update on app.users;
       create policy stray on app.posts for select to app_admin using (true);
       create trigger stray after insert on app.follows for each row execute function app_private.record_badge_changes();`,
    );
    const result = await migrate(url);
    expect(result.changed.sort()).toEqual(
      [
        'function app_private.iso',
        'grants on app.users',
        'policy hubs_select_signed_in on app.hubs',
        'trigger _300_name_words_insert on app.users',
        'trigger _300_name_words_update on app.users',
      ].sort(),
    );
    expect(result.orphans).toEqual(['policy stray on app.posts', 'trigger stray on app.follows']);
    await query(url, 'drop policy stray on app.posts; drop trigger stray on app.follows');
    await expectCurrentSchema(url, 'db/sql applied again must give db/schema.sql');
  });
});
