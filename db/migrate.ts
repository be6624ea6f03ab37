// Brings a database to the current schema, in one run under one advisory lock, without making the
// requests of a running release wait (docs/database.md "How the runner applies them"):
//   1. the graphile-worker schema (application SQL references it);
//   2. the versioned migrations (migrations/*.sql: the baseline, then what came after it), through
//      node-pg-migrate and its table public.pgmigrations, each in its own transaction under a short
//      lock_timeout, retried until the tables are free (db/lock-retry.ts); a file marked
//      `-- no transaction` (concurrent index builds) runs statement by statement outside one. A
//      database that ran the chain the baseline replaced (migrations/frozen/) first finishes that
//      chain and has the baseline recorded as applied without running it;
//   3. the current SQL (db/sql/*.sql and db/sql/*/*.sql, in the order of sqlFiles), by comparison: only the objects whose
//      definition in the database differs from the file's are changed (db/sql-apply.ts), and the level
//      of the files (sqlLevel) is recorded for GET /readyz;
//   4. the login roles' passwords.
// Migrations only expand: what the previous release uses is removed by a later release
// (test/sql/database/expand-only.test.ts).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { runner, type MigrationBuilder } from 'node-pg-migrate';
import { defaultLockRetry, type LockRetryOptions, withLockRetries } from './lock-retry.ts';
import { StartupError } from '../config.ts';
import { rolePassword, type LoginRole } from './roles.ts';
import { applySqlStatements, type SqlApplyResult } from './sql-apply.ts';
import { splitStatements, statementsOf } from './sql-statements.ts';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const migrationsDir = path.join(root, 'migrations');
const frozenDir = path.join(migrationsDir, 'frozen');
export const sqlDir = path.join(root, 'db', 'sql');

/** The migration that stands for the frozen chain (its name as node-pg-migrate records it). */
export const baselineMigration = '0000_baseline';

/**
 * The level of db/sql: raised by one in a release whose db/sql differs from the previous release's
 * (test/sql/database/expand-only.test.ts holds it). GET /readyz answers ready when the database has this level
 * or a higher one applied (a newer release migrated it: expand-only, so it still has what this build
 * needs), and the runner refuses to apply files of a lower level than the database has.
 */
export const sqlLevel = 2;

/** Taken away once from a database that ran the frozen chain, before db/sql is applied to it. */
const legacyResetFile = path.join(root, 'db', 'legacy-reset.sql');

/**
 * db/sql's files in the order they are applied, by path below db/sql without the extension: the
 * shared kernel (base, counters, worker) and one file per feature, named as the feature is
 * (server/<name>/), or a folder of files for a feature of several parts (hubs/). Each after those
 * whose functions its policies, views and triggers name (function bodies are checked when called,
 * so functions may name one of a later file).
 */
export const sqlFiles = [
  'base',
  'auth',
  'counters',
  'counters.generated',
  'hubs/hubs',
  'hubs/activity',
  'users',
  'follows',
  'uploads',
  'posts',
  'feeds',
  'votes',
  'comments',
  'discussions',
  'notifications',
  'push',
  'reports',
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

/** Each db/sql file (of `dir`, db/sql by default; `file` its path below it) with the SHA-256 of its content, in the order they are applied. */
export function shippedSqlFiles(dir = sqlDir): { file: string; sha256: string; sql: string }[] {
  return sqlFiles.map((name) => {
    const file = `${name}.sql`;
    const sql = readFileSync(path.join(dir, file), 'utf8');
    return { file, sha256: createHash('sha256').update(sql).digest('hex'), sql };
  });
}

/**
 * What a database lacks that this build needs, for GET /readyz: a migration this build ships that
 * is not applied, and db/sql when the database's applied level is below this build's. Never what
 * the database has beyond that (a newer release's migrations or level).
 */
export function missingForBuild(applied: { migrations: ReadonlySet<string>; sqlLevel: number }): string[] {
  return [
    ...shippedMigrations().filter((name) => !applied.migrations.has(name)),
    ...(applied.sqlLevel < sqlLevel ? [`db/sql level ${sqlLevel} (the database has ${applied.sqlLevel})`] : []),
  ];
}

export interface MigrateOptions {
  /** The folder of the db/sql files (a test applies an edited copy). */
  sqlDir?: string;
  lockRetry?: LockRetryOptions;
  /** Lines an operator should see (waits for locks, objects changed, orphans). */
  log?: (line: string) => void;
}

const quiet = { log: () => {}, verbose: false } as const;

/** Migrates the database of `ownerUrl` (above); returns what db/sql changed. */
export async function migrate(ownerUrl: string, options: MigrateOptions = {}): Promise<SqlApplyResult> {
  const lockRetry = { ...defaultLockRetry, ...options.lockRetry, ...(options.log ? { log: options.log } : {}) };
  await runWorkerMigrations({ connectionString: ownerUrl, logger: new Logger(() => () => {}) });
  const client = new pg.Client({ connectionString: ownerUrl, application_name: 'migrate' });
  await client.connect();
  let result: SqlApplyResult;
  try {
    // One migrator per database at a time (services starting together wait for the first).
    await client.query('select pg_advisory_lock(7241865325823964)');
    const ranFrozenChain = await runVersioned(client, ownerUrl, lockRetry);
    result = await applySqlFiles(client, ownerUrl, options.sqlDir ?? sqlDir, lockRetry, ranFrozenChain);
  } finally {
    await client.end();
  }
  await setLoginPasswords(ownerUrl);
  for (const orphan of result.orphans)
    options.log?.(`${orphan}: no db/sql file defines it any more; it stays until a migration drops it (docs/database.md)`);
  return result;
}

async function ranMigrations(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ exists: boolean }>(`select to_regclass('public.pgmigrations') is not null as exists`);
  if (!rows[0]?.exists) return [];
  const ran = await client.query<{ name: string }>('select name from public.pgmigrations order by run_on, id');
  return ran.rows.map((row) => row.name);
}

/**
 * node-pg-migrate's loader for our .sql files: the part after `-- Up Migration`, under the runner's
 * lock_timeout; a file with the line `-- no transaction` (concurrent index builds, which cannot run
 * in a transaction and take no lock that blocks requests) runs statement by statement outside one,
 * without a lock_timeout (its waits hold no request).
 */
function sqlLoader(lockTimeoutMs: number) {
  return async (filePaths: string[]) =>
    filePaths.map((filePath) => {
      const content = readFileSync(filePath, 'utf8');
      const upStart = content.search(/^\s*--[\s-]*up\s+migration/im);
      const up = upStart >= 0 ? content.slice(upStart) : content;
      const noTransaction = /^--\s*no transaction\s*$/im.test(up);
      return {
        id: filePath,
        filePaths: [filePath],
        actions: {
          up: (pgm: MigrationBuilder) => {
            if (noTransaction) {
              pgm.noTransaction();
              pgm.sql('set lock_timeout = 0');
              for (const { text } of splitStatements(up)) pgm.sql(text);
              pgm.sql('reset lock_timeout');
            } else {
              pgm.sql(`set local lock_timeout = ${Number(lockTimeoutMs)}`);
              pgm.sql(up);
            }
          },
          down: false as const,
        },
      };
    });
}

/** Runs the versioned migrations; true when the database came from the frozen chain in this run. */
async function runVersioned(client: pg.Client, ownerUrl: string, lockRetry: LockRetryOptions): Promise<boolean> {
  const options = { dbClient: client, noLock: true, direction: 'up', migrationsTable: 'pgmigrations', ...quiet } as const;
  let ran = await ranMigrations(client);
  const frozen = frozenMigrations();
  let ranFrozenChain = false;
  if (!ran.includes(baselineMigration) && ran.some((name) => frozen.includes(name))) {
    // A database of the frozen chain: its remaining migrations, then the baseline as applied.
    await runner({ ...options, dir: frozenDir, checkOrder: true });
    await client.query('insert into public.pgmigrations (name, run_on) values ($1, now())', [baselineMigration]);
    ran = await ranMigrations(client);
    ranFrozenChain = true;
  }
  // The versioned chain in order: what ran of it must be its first files (the frozen names before
  // it are not in this folder, so node-pg-migrate's own order check cannot be used). A database that
  // ran migrations this checkout does not ship was migrated by a newer release: refuse.
  const shipped = shippedMigrations();
  const ranHere = ran.filter((name) => !frozen.includes(name));
  ranHere.forEach((name, i) => {
    if (shipped[i] !== name) {
      throw new StartupError(
        shipped[i] === undefined
          ? `migration ${name} ran, but this release does not ship it: a newer release migrated this database; run that release's migrate (a release never migrates a newer schema)`
          : `migration ${name} ran, but the migrations folder has ${shipped[i]} in its place`,
      );
    }
  });
  const pending = shipped.slice(ranHere.length);
  for (const name of pending) {
    await withLockRetries(
      client,
      ownerUrl,
      `migration ${name}`,
      async () => {
        await runner({
          ...options,
          dir: migrationsDir,
          checkOrder: false,
          count: 1,
          migrationLoaderStrategies: [{ extensions: ['.sql'], loader: sqlLoader(lockRetry.lockTimeoutMs) }],
        });
      },
      lockRetry,
      { transaction: false },
    );
  }
  return ranFrozenChain;
}

async function applySqlFiles(
  client: pg.Client,
  ownerUrl: string,
  dir: string,
  lockRetry: LockRetryOptions,
  ranFrozenChain: boolean,
): Promise<SqlApplyResult> {
  await client.query(
    `create table if not exists public.sql_files (file text primary key, sha256 text not null, applied_at timestamptz not null)`,
  );
  await client.query(
    `create table if not exists public.sql_levels (level int primary key, sha256 text not null, applied_at timestamptz not null)`,
  );
  const applied = (await client.query<{ level: number | null }>('select max(level) as level from public.sql_levels')).rows[0]?.level ?? 0;
  if (applied > sqlLevel) {
    throw new StartupError(
      `this release's db/sql is level ${sqlLevel}, but the database has level ${applied}: a newer release migrated it; run that release's migrate (a release never migrates a newer schema)`,
    );
  }
  const files = shippedSqlFiles(dir);
  if (ranFrozenChain) {
    // A database of the frozen chain holds policies, triggers and grants that no release has defined
    // since: taken away once (this upgrade is from a release long gone; no process of it serves).
    await client.query('begin');
    await client.query(readFileSync(legacyResetFile, 'utf8'));
    await client.query('commit');
  }
  const result = await applySqlStatements(client, ownerUrl, statementsOf(files), lockRetry);
  const sha256 = createHash('sha256')
    .update(files.map((file) => `${file.file} ${file.sha256}\n`).join(''))
    .digest('hex');
  await client.query('begin');
  await client.query('delete from public.sql_files');
  for (const { file, sha256: fileSha } of files) {
    await client.query('insert into public.sql_files (file, sha256, applied_at) values ($1, $2, now())', [file, fileSha]);
  }
  await client.query(
    'insert into public.sql_levels (level, sha256, applied_at) values ($1, $2, now()) on conflict (level) do update set sha256 = excluded.sha256, applied_at = excluded.applied_at',
    [sqlLevel, sha256],
  );
  await client.query('commit');
  return result;
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
