// What a migration does to the locks requests need (contract part 16). Each case makes "the next
// release" by copying db/sql into a temporary folder and editing it there (test/helpers/releases.ts),
// then runs the runner on that folder (migrate(ownerUrl, { sqlDir })) over a database cloned from
// the migrated template:
//   - a changed policy on a table a long reader holds ACCESS SHARE on: the migration retries under a
//     short lock_timeout, requests on that table keep answering within 1 s, and the migration
//     completes once the reader ends;
//   - a changed function body: no lock at all on any table of app, app_private and graphile_worker
//     (the runner compares only objects whose statements or catalog rows changed since it last
//     applied them, public.sql_objects), so it completes while another session holds every one of
//     them in ACCESS EXCLUSIVE mode;
//   - a versioned migration adding a column to a table a reader holds: `npm run migrate` waits and
//     applies it once the reader ends;
//   - the give-up: with a small bound (MIGRATION_LOCK_WAIT_SECONDS for `npm run migrate`), the
//     migration fails with one line naming the table and the process that holds it, and leaves the
//     policy as it was.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../../db/migrate.ts';
import { startTestApp } from '../../helpers/app.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { startProcess } from '../../helpers/process.ts';
import { addColumnMigration, changeFunctionBody, changePolicyExpression, checkoutRoot, copyCheckout } from '../../helpers/releases.ts';
import { userAtLevel } from '../../helpers/users.ts';
import { scratchDatabase } from '../../helpers/worlds.ts';

/** The runner with a db/sql folder of its own (the "next release"'s) and its lock-retry bounds. */
const migrateWith = migrate as (
  ownerUrl: string,
  options?: { sqlDir?: string; lockRetry?: { lockTimeoutMs: number; maxWaitSeconds: number } },
) => Promise<unknown>;

const folders: string[] = [];
afterAll(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

/** A copy of db/sql to edit. */
async function nextSqlDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'opinion-next-sql-'));
  folders.push(dir);
  await cp(path.join(checkoutRoot, 'db', 'sql'), dir, { recursive: true });
  return dir;
}

/** A database cloned from the migrated template, nothing connected to it. */
const cloneDatabase = () => scratchDatabase('opinion_locks');

async function connect(url: string): Promise<{ client: pg.Client; pid: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  return { client, pid: rows[0]?.pid as number };
}

/** The migration's outcome, or 'pending' if it has not settled within `ms`. */
async function settledWithin(migration: Promise<unknown>, ms: number): Promise<'done' | 'pending' | Error> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    migration.then(
      () => 'done' as const,
      (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
    ),
    new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), ms))),
  ]);
  clearTimeout(timer);
  return outcome;
}

const policyQual = async (client: pg.Client, policy: string) =>
  (await client.query<{ qual: string }>(`select pg_get_expr(polqual, polrelid) as qual from pg_policy where polname = $1`, [policy]))
    .rows[0]?.qual;

describe('a migration beside the requests', () => {
  it(
    'waits behind a reader of the table whose policy it changes, while requests on that table answer within 1 s',
    { timeout: 180_000 },
    async () => {
      const app = await startTestApp();
      const { client: reader, pid: readerPid } = await connect(app.ownerUrl);
      const { client: watcher, pid: watcherPid } = await connect(app.ownerUrl);
      let migration: Promise<unknown> | undefined;
      try {
        const author = await userAtLevel(app, 3);
        const viewer = await userAtLevel(app, 2);
        const post = await createPost(app, author, slider);
        const sqlDir = await nextSqlDir();
        changePolicyExpression(sqlDir, 'posts.sql', 'posts_select_visible');
        expect(await policyQual(watcher, 'posts_select_visible')).not.toMatch(/^\(?true AND/);

        // A backup-like reader: ACCESS SHARE on app.posts, held until it commits.
        await reader.query('begin');
        await reader.query('lock table app.posts in access share mode');
        const running = migrateWith(app.ownerUrl, { sqlDir });
        migration = running;
        running.catch(() => undefined);

        // While it holds: requests reading posts answer, each within 1 s, until the migration has been
        // seen waiting for app.posts (its tries show as waiting locks, sampled every 20 ms), and for 3 s
        // more.
        let firstWait: number | undefined;
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            const { rows } = await watcher.query<{ waiting: boolean }>(
              `select exists (select from pg_locks where relation = 'app.posts'::regclass and not granted and pid <> all ($1)) as waiting`,
              [[readerPid, watcherPid]],
            );
            if (rows[0]?.waiting) firstWait ??= Date.now();
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        })();
        const latencies: number[] = [];
        const started = Date.now();
        while (firstWait === undefined ? Date.now() - started < 120_000 : Date.now() - firstWait < 3000) {
          for (const pathname of [`/posts/${post.id}`, '/posts?limit=20']) {
            const requested = performance.now();
            const response = await fetch(`${app.url}/api/v1${pathname}`, {
              headers: { authorization: `Bearer ${viewer.token}` },
              signal: AbortSignal.timeout(1000),
            }).catch((error: Error) => {
              throw new Error(`GET ${pathname} did not answer within 1 s while the migration waited for the reader (${error.name})`);
            });
            expect(response.status, pathname).toBe(200);
            await response.arrayBuffer();
            latencies.push(performance.now() - requested);
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        sampling = false;
        await sampler;
        expect(firstWait, 'the migration tried to lock app.posts while the reader held it').toBeDefined();
        expect(Math.max(...latencies)).toBeLessThan(1000);
        expect(await settledWithin(running, 0), 'the migration waits for the reader').toBe('pending');

        await reader.query('commit');
        expect(await settledWithin(running, 90_000)).toBe('done');
        expect(await policyQual(watcher, 'posts_select_visible')).toMatch(/^\(?true AND/);
        const after = await app.get(`/posts/${post.id}`, { token: viewer.token });
        expect(after.status).toBe(200);
      } finally {
        await reader.query('rollback').catch(() => undefined);
        if (migration) await settledWithin(migration, 60_000);
        await reader.end();
        await watcher.end();
        await app.close();
      }
    },
  );

  it('changes one function body without taking or asking for any lock on any table', { timeout: 180_000 }, async () => {
    const database = await cloneDatabase();
    const { client: holder, pid: holderPid } = await connect(database.ownerUrl);
    const { client: watcher, pid: watcherPid } = await connect(database.ownerUrl);
    let migration: Promise<unknown> | undefined;
    try {
      const sqlDir = await nextSqlDir();
      changeFunctionBody(sqlDir, 'posts.sql', 'app.can_see_post', 'changed by the lock test');
      // Every table of app, app_private and graphile_worker (but graphile-worker's own migration
      // record, which its migrate reads) held in ACCESS EXCLUSIVE mode: the migration must not ask for
      // any lock on any of them, not even to read one (it compares only what changed).
      const { rows: tables } = await holder.query<{ name: string }>(
        `select format('%I.%I', schemaname, tablename) as name from pg_tables
          where schemaname in ('app', 'app_private', 'graphile_worker') and (schemaname, tablename) <> ('graphile_worker', 'migrations')`,
      );
      await holder.query('begin');
      await holder.query(`lock table ${tables.map((row) => row.name).join(', ')} in access exclusive mode`);

      const running = migrateWith(database.ownerUrl, { sqlDir });
      migration = running;
      running.catch(() => undefined);
      const seen = new Set<string>();
      let outcome: 'done' | 'pending' | Error = 'pending';
      const deadline = Date.now() + 120_000;
      while (outcome === 'pending' && seen.size === 0 && Date.now() < deadline) {
        const { rows } = await watcher.query<{ lock: string }>(
          `select format('%s %s on %I.%I', l.mode, case when l.granted then 'held' else 'waited for' end, n.nspname, c.relname) as lock
           from pg_locks l join pg_class c on c.oid = l.relation join pg_namespace n on n.oid = c.relnamespace
           where l.locktype = 'relation' and l.pid <> all ($1) and c.relkind in ('r', 'p', 'v')
             and l.database = (select oid from pg_database where datname = current_database())
             and n.nspname in ('app', 'app_private', 'graphile_worker') and (n.nspname, c.relname) <> ('graphile_worker', 'migrations')`,
          [[holderPid, watcherPid]],
        );
        for (const row of rows) seen.add(row.lock);
        outcome = await settledWithin(running, 10);
      }
      expect([...seen], 'table locks the migration took or asked for').toEqual([]);
      expect(outcome).toBe('done');
      const { rows } = await watcher.query<{ src: string }>(
        `select prosrc as src from pg_proc where oid = 'app.can_see_post(uuid)'::regprocedure`,
      );
      expect(rows[0]?.src).toContain('changed by the lock test');
    } finally {
      await holder.query('rollback').catch(() => undefined);
      if (migration) await settledWithin(migration, 60_000);
      await holder.end();
      await watcher.end();
      await database.drop();
    }
  });

  it('gives up after its bound with one line naming the table and the process holding it', { timeout: 180_000 }, async () => {
    const database = await cloneDatabase();
    const { client: holder, pid: holderPid } = await connect(database.ownerUrl);
    const { client: watcher } = await connect(database.ownerUrl);
    let migration: Promise<unknown> | undefined;
    try {
      const sqlDir = await nextSqlDir();
      changePolicyExpression(sqlDir, 'posts.sql', 'posts_select_visible');
      const before = await policyQual(watcher, 'posts_select_visible');
      await holder.query('begin');
      await holder.query('lock table app.posts in access share mode');
      const started = Date.now();
      const running = migrateWith(database.ownerUrl, { sqlDir, lockRetry: { lockTimeoutMs: 200, maxWaitSeconds: 2 } });
      migration = running;
      running.catch(() => undefined);
      const outcome = await settledWithin(running, 120_000);
      const seconds = (Date.now() - started) / 1000;
      if (!(outcome instanceof Error))
        throw new Error(`the migration did not give up within 120 s (a 2 s bound once it waits) (${outcome})`);
      expect(outcome.message).not.toContain('\n');
      expect(outcome.message).toContain('app.posts');
      expect(outcome.message).toContain(String(holderPid));
      expect(seconds).toBeGreaterThanOrEqual(2);
      // A failed try leaves the database as it was.
      expect(await policyQual(watcher, 'posts_select_visible')).toBe(before);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      if (migration) await settledWithin(migration, 60_000);
      await holder.end();
      await watcher.end();
      await database.drop();
    }
  });

  it(
    'npm run migrate gives up after MIGRATION_LOCK_WAIT_SECONDS: exit code 1 and one line naming the table and the holder',
    { timeout: 180_000 },
    async () => {
      const database = await cloneDatabase();
      const { client: holder, pid: holderPid } = await connect(database.ownerUrl);
      const { client: watcher } = await connect(database.ownerUrl);
      try {
        const tree = await mkdtemp(path.join(os.tmpdir(), 'opinion-next-release-'));
        folders.push(tree);
        await copyCheckout(tree);
        changePolicyExpression(path.join(tree, 'db', 'sql'), 'posts.sql', 'posts_select_visible');
        const before = await policyQual(watcher, 'posts_select_visible');
        await holder.query('begin');
        await holder.query('lock table app.posts in access share mode');
        const started = Date.now();
        const migration = startProcess(
          process.execPath,
          [path.join(tree, 'db', 'cli', 'migrate.ts')],
          {
            DATABASE_URL: database.ownerUrl,
            MIGRATION_LOCK_WAIT_SECONDS: '2',
            MIGRATION_LOCK_TIMEOUT_MS: '100',
          },
          { cwd: tree },
        );
        const code = await Promise.race([
          migration.exited,
          new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 120_000)),
        ]);
        if (code === 'running') {
          migration.child.kill('SIGKILL');
          throw new Error(`npm run migrate did not give up within 120 s (a 2 s bound once it waits); output:\n${migration.output()}`);
        }
        expect(code, migration.output()).toBe(1);
        expect((Date.now() - started) / 1000).toBeGreaterThanOrEqual(2);
        const lines = migration.output().trim().split('\n');
        expect(
          lines.filter((line) => /^\s+at /.test(line)),
          'no stack trace',
        ).toEqual([]);
        const last = lines.at(-1) as string;
        expect(last).toContain('app.posts');
        expect(last).toContain(String(holderPid));
        expect(await policyQual(watcher, 'posts_select_visible')).toBe(before);
      } finally {
        await holder.query('rollback').catch(() => undefined);
        await holder.end();
        await watcher.end();
        await database.drop();
      }
    },
  );

  it(
    'npm run migrate waits behind a reader for a migration that adds a column to its table, and applies it once the reader ends',
    { timeout: 180_000 },
    async () => {
      const database = await cloneDatabase();
      const { client: reader, pid: readerPid } = await connect(database.ownerUrl);
      const { client: watcher, pid: watcherPid } = await connect(database.ownerUrl);
      let migration: ReturnType<typeof startProcess> | undefined;
      try {
        const tree = await mkdtemp(path.join(os.tmpdir(), 'opinion-next-release-'));
        folders.push(tree);
        await copyCheckout(tree);
        addColumnMigration(tree, 'app.posts', 'next_release_note');
        await reader.query('begin');
        await reader.query('lock table app.posts in access share mode');
        migration = startProcess(
          process.execPath,
          [path.join(tree, 'db', 'cli', 'migrate.ts')],
          { DATABASE_URL: database.ownerUrl },
          { cwd: tree },
        );
        // It tries (a waiting lock on app.posts), and keeps trying while the reader holds.
        await migration.waitFor(
          async () =>
            (
              await watcher.query<{ waiting: boolean }>(
                `select exists (select from pg_locks where relation = 'app.posts'::regclass and not granted and pid <> all ($1)) as waiting`,
                [[readerPid, watcherPid]],
              )
            ).rows[0]?.waiting === true,
          'the migration to try for app.posts',
          120_000,
        );
        await new Promise((resolve) => setTimeout(resolve, 2000));
        expect(migration.child.exitCode, migration.output()).toBeNull();
        await reader.query('commit');
        expect(await migration.exited, migration.output()).toBe(0);
        const { rows } = await watcher.query(
          `select from pg_attribute where attrelid = 'app.posts'::regclass and attname = 'next_release_note'`,
        );
        expect(rows).toHaveLength(1);
      } finally {
        await reader.query('rollback').catch(() => undefined);
        if (migration && migration.child.exitCode === null) {
          migration.child.kill('SIGKILL');
          await migration.exited;
        }
        await reader.end();
        await watcher.end();
        await database.drop();
      }
    },
  );
});
