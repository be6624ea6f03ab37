// Brings a database to the current schema, in one run under one advisory lock:
//   1. the graphile-worker schema (application SQL references it);
//   2. the versioned migrations (migrations/*.sql: the baseline, then what came after it), through
//      node-pg-migrate and its table public.pgmigrations. A database that ran the chain the baseline
//      replaced (migrations/frozen/) first finishes that chain and has the baseline recorded as
//      applied without running it: the baseline is what that chain left, so both reach one state;
//   3. the current SQL (db/sql/*.sql, in the order of sqlFiles): when any file's SHA-256 differs
//      from the one recorded in public.sql_files, every file is applied again, in order, in one
//      transaction (a file may drop what a later one builds on, so all of them run, and a database
//      ends equal to a fresh one), and the hashes are recorded;
//   4. the login roles' passwords.
// docs/database.md says which object lives where and how to change each kind.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { runner } from 'node-pg-migrate';
import { rolePassword, type LoginRole } from './roles.ts';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const migrationsDir = path.join(root, 'migrations');
const frozenDir = path.join(migrationsDir, 'frozen');
export const sqlDir = path.join(root, 'db', 'sql');

/** The migration that stands for the frozen chain (its name as node-pg-migrate records it). */
export const baselineMigration = '0000_baseline';

/**
 * db/sql's files in the order they are applied. `reset` first: it drops what the files own
 * (policies, triggers, privileges), so a policy or grant taken out of a file is gone after the
 * next migrate, as on a fresh database. Then the domains, each after those whose functions its
 * policies, views and triggers name.
 */
export const sqlFiles = [
  'reset',
  'base',
  'sessions',
  'counters',
  'hubs',
  'users',
  'uploads',
  'posts',
  'activity',
  'feeds',
  'votes',
  'comments',
  'discussions',
  'notifications',
  'push',
  'moderation',
  'accounts',
  'worker',
] as const;

/** The .sql files of a folder, by name without the extension, sorted. */
const sqlNamesIn = (dir: string) =>
  readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.sql'))
    .map((entry) => entry.name.slice(0, -'.sql'.length))
    .sort();

/** The names of the versioned migrations this checkout ships (as node-pg-migrate records them: no extension). */
export function shippedMigrations(): string[] {
  return sqlNamesIn(migrationsDir);
}

/** The migrations the baseline replaced (kept for databases that ran them). */
export function frozenMigrations(): string[] {
  return sqlNamesIn(frozenDir);
}

/** Each db/sql file with the SHA-256 of its content, in the order they are applied. */
export function shippedSqlFiles(): { file: string; sha256: string; sql: string }[] {
  return sqlFiles.map((name) => {
    const file = `${name}.sql`;
    const sql = readFileSync(path.join(sqlDir, file), 'utf8');
    return { file, sha256: createHash('sha256').update(sql).digest('hex'), sql };
  });
}

/**
 * The db/sql files a database has not applied as they are: a shipped file whose applied hash
 * differs or is missing, and an applied file no longer shipped. Empty: nothing to apply. Read by the
 * runner (applySqlFiles) and by GET /readyz.
 */
export function pendingSqlFiles(applied: ReadonlyMap<string, string>, shipped: readonly { file: string; sha256: string }[]): string[] {
  const names = new Set(shipped.map(({ file }) => file));
  return [
    ...shipped.filter(({ file, sha256 }) => applied.get(file) !== sha256).map(({ file }) => file),
    ...[...applied.keys()].filter((file) => !names.has(file)),
  ];
}

const quiet = { log: () => {}, verbose: false } as const;

export async function migrate(ownerUrl: string): Promise<void> {
  await runWorkerMigrations({ connectionString: ownerUrl, logger: new Logger(() => () => {}) });
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    // One migrator per database at a time (services starting together wait for the first).
    await client.query('select pg_advisory_lock(7241865325823964)');
    await runVersioned(client);
    await applySqlFiles(client);
  } finally {
    await client.end();
  }
  await setLoginPasswords(ownerUrl);
}

async function ranMigrations(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ exists: boolean }>(`select to_regclass('public.pgmigrations') is not null as exists`);
  if (!rows[0]?.exists) return [];
  const ran = await client.query<{ name: string }>('select name from public.pgmigrations order by run_on, id');
  return ran.rows.map((row) => row.name);
}

async function runVersioned(client: pg.Client): Promise<void> {
  const options = { dbClient: client, noLock: true, direction: 'up', migrationsTable: 'pgmigrations', ...quiet } as const;
  let ran = await ranMigrations(client);
  const frozen = frozenMigrations();
  if (!ran.includes(baselineMigration) && ran.some((name) => frozen.includes(name))) {
    // A database of the frozen chain: its remaining migrations, then the baseline as applied.
    await runner({ ...options, dir: frozenDir, checkOrder: true });
    await client.query('insert into public.pgmigrations (name, run_on) values ($1, now())', [baselineMigration]);
    ran = await ranMigrations(client);
  }
  // The versioned chain in order: what ran of it must be its first files (the frozen names before
  // it are not in this folder, so node-pg-migrate's own order check cannot be used).
  const shipped = shippedMigrations();
  const ranHere = ran.filter((name) => !frozen.includes(name));
  ranHere.forEach((name, i) => {
    if (shipped[i] !== name) throw new Error(`migration ${name} ran, but the migrations folder has ${shipped[i] ?? 'no file'} in its place`);
  });
  await runner({ ...options, dir: migrationsDir, checkOrder: false });
}

async function applySqlFiles(client: pg.Client): Promise<void> {
  await client.query(
    `create table if not exists public.sql_files (file text primary key, sha256 text not null, applied_at timestamptz not null)`,
  );
  const files = shippedSqlFiles();
  const { rows } = await client.query<{ file: string; sha256: string }>('select file, sha256 from public.sql_files');
  const applied = new Map(rows.map((row) => [row.file, row.sha256]));
  if (pendingSqlFiles(applied, files).length === 0) return;
  await client.query('begin');
  try {
    // Function bodies are checked when called, not when created: a body may name a function a
    // later file creates (as pg_dump restores them).
    await client.query('set local check_function_bodies = off');
    for (const { file, sql } of files) {
      try {
        await client.query(sql);
      } catch (error) {
        (error as Error).message = `db/sql/${file}: ${(error as Error).message}`;
        throw error;
      }
    }
    await client.query('delete from public.sql_files');
    for (const { file, sha256 } of files) {
      await client.query('insert into public.sql_files (file, sha256, applied_at) values ($1, $2, now())', [file, sha256]);
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}

/**
 * Roles belong to the whole cluster, so processes migrating different databases of one server (two
 * services, a CLI beside `npm start`, parallel tests) may set the same password at once; PostgreSQL
 * then refuses the later catalog update ("tuple concurrently updated", XX000). Every writer sets the
 * same value, so trying again is correct.
 */
async function setLoginPasswords(ownerUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    for (const role of ['authenticator', 'app_worker'] satisfies LoginRole[]) {
      const statement = `alter role ${role} password ${client.escapeLiteral(rolePassword(ownerUrl, role))}`;
      for (let attempt = 1; ; attempt += 1) {
        try {
          await client.query(statement);
          break;
        } catch (error) {
          if (attempt === 5 || (error as { code?: string }).code !== 'XX000') throw error;
          await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
        }
      }
    }
  } finally {
    await client.end();
  }
}
