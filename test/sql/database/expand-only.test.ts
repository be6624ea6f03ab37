// Migrations only expand (docs/database.md, "Removing something"): while a release migrates, the
// previous release (deploy/previous-release) keeps serving on the new schema, so this release may
// remove only what the previous release declared retired in its db/retired.txt. Removing is
// dropping, revoking, renaming, narrowing a column's type or nullability, and taking a function,
// view, policy or trigger out of db/sql (the runner leaves it in databases that have it, but a fresh
// database would lack it). And db/sql's level rises with every release whose db/sql differs, so
// GET /readyz can tell a newer schema from an older one.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shippedSqlFiles, sqlLevel } from '../../../db/migrate.ts';
import { splitStatements } from '../../../db/sql-statements.ts';
import { taskNames } from '../../../worker/runner.ts';

const root = path.join(import.meta.dirname, '..', '..', '..');
const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

/** The commit of the previous release (the last line of deploy/previous-release that is not a comment). */
const previous = readFileSync(path.join(root, 'deploy', 'previous-release'), 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'))
  .at(-1) as string;

/**
 * The worker's task names in a release's source (`files`: its paths under worker/): the keys of
 * `tasks` in each worker/tasks/<feature>/index.ts, or, in a release from before the feature
 * folders, the keys createTaskList returned in worker/runner.ts.
 */
function workerTasksOf(files: string[], read: (file: string) => string): string[] {
  const features = files.filter((file) => /^worker\/tasks\/[^/]+\/index\.ts$/.test(file));
  if (features.length === 0) {
    const body = /export function createTaskList[\s\S]*?return \{([\s\S]*?)\n {2}\};/.exec(read('worker/runner.ts'))?.[1] ?? '';
    return [...body.matchAll(/^\s+([a-z_]+):/gm)].map((m) => m[1] as string);
  }
  return features.flatMap((file) => {
    const body = /\n {2}tasks: \{([\s\S]*?)\n {2}\},?\n/.exec(read(file))?.[1] ?? '';
    return [...body.matchAll(/^ {4}([a-z_]+):/gm)].map((m) => m[1] as string);
  });
}

interface Release {
  /** db/sql files: name and content. */
  sql: { file: string; sql: string }[];
  /** Versioned migration files: name and content. */
  migrations: { file: string; sql: string }[];
  /** The identities of db/retired.txt (normalised). */
  retired: Set<string>;
  sqlLevel: number;
  /** Whether the release's TypeScript names this identifier (a whole word). */
  namesInCode: (name: string) => boolean;
}

const normalise = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .replace(/ ?\( ?/g, '(')
    .replace(/ \)/g, ')')
    .replace(/ ?, ?/g, ',')
    .trim()
    .toLowerCase();

function retiredOf(text: string): Set<string> {
  return new Set(
    text
      .split('\n')
      .map((line) => line.replace(/--.*$/, '').trim())
      .filter((line) => line && !line.startsWith('#'))
      .map(normalise),
  );
}

function previousRelease(): Release {
  const show = (file: string) => git('show', `${previous}:${file}`);
  const list = (dir: string, ...options: string[]) =>
    git('ls-tree', ...options, '--name-only', `${previous}`, `${dir}/`)
      .split('\n')
      .filter((name) => name.endsWith('.sql'));
  // reset.sql was the old runner's way to take away what no file defined; it defines nothing.
  // A file's name is its path below db/sql (a feature of several files has a folder).
  const sql = list('db/sql', '-r')
    .filter((name) => path.basename(name) !== 'reset.sql')
    .map((name) => ({ file: path.posix.relative('db/sql', name), sql: show(name) }));
  const migrations = list('migrations').map((name) => ({ file: path.basename(name), sql: show(name) }));
  let retired = new Set<string>();
  try {
    retired = retiredOf(show('db/retired.txt'));
  } catch {
    // A release before db/retired.txt declared nothing retired.
  }
  const level = /export const sqlLevel = (\d+)/.exec(show('db/migrate.ts'))?.[1];
  const namesInCode = (name: string) => {
    try {
      git('grep', '-q', '-w', name, previous, '--', '*.ts');
      return true;
    } catch {
      return false; // git grep exits 1 when nothing matches.
    }
  };
  return { sql, migrations, retired, sqlLevel: level === undefined ? 0 : Number(level), namesInCode };
}

function currentRelease(): Release {
  const dir = path.join(root, 'migrations');
  return {
    sql: shippedSqlFiles().map(({ file, sql }) => ({ file, sql })),
    migrations: readdirSync(dir)
      .filter((name) => name.endsWith('.sql'))
      .map((file) => ({ file, sql: readFileSync(path.join(dir, file), 'utf8') })),
    retired: retiredOf(readFileSync(path.join(root, 'db', 'retired.txt'), 'utf8')),
    sqlLevel,
    namesInCode: () => true,
  };
}

/** The statements of files (a migration's part after `-- Up Migration`), normalised. */
const statementsOf = (files: Release['sql']) =>
  files.flatMap(({ sql }) => {
    const up = sql.search(/^\s*--[\s-]*up\s+migration/im);
    return splitStatements(up >= 0 ? sql.slice(up) : sql).map(({ text }) => normalise(text));
  });

/** What db/sql statements define, by identity: functions (by their `comment on function`, which names the argument types), views, policies, triggers. */
function definedBy(statements: string[]): Set<string> {
  const defined = new Set<string>();
  for (const statement of statements) {
    let m: RegExpExecArray | null;
    if ((m = /^comment on function ([a-z0-9_.]+\([^)]*\)) is /.exec(statement))) defined.add(`function ${m[1]}`);
    else if ((m = /^create or replace view ([a-z0-9_.]+)/.exec(statement))) defined.add(`view ${m[1]}`);
    else if ((m = /^create policy ([a-z0-9_]+) on ([a-z0-9_.]+)/.exec(statement))) defined.add(`policy ${m[1]} on ${m[2]}`);
    else if ((m = /^create trigger ([a-z0-9_]+) .*? on ([a-z0-9_.]+) /.exec(statement))) defined.add(`trigger ${m[1]} on ${m[2]}`);
  }
  return defined;
}

/** What one statement takes away, by identity (empty when it only adds or changes). */
export function removedBy(statement: string): string[] {
  const rules: [RegExp, (m: RegExpExecArray) => string][] = [
    [
      /^drop (table|view|materialized view|index|type|sequence|schema)(?: concurrently)?(?: if exists)? ([a-z0-9_.]+)/,
      (m) => `${m[1]} ${m[2]}`,
    ],
    [/^drop function(?: if exists)? ([a-z0-9_.]+\([^)]*\))/, (m) => `function ${m[1]}`],
    [/^drop (policy|trigger)(?: if exists)? ([a-z0-9_]+) on ([a-z0-9_.]+)/, (m) => `${m[1]} ${m[2]} on ${m[3]}`],
    [
      /^alter table(?: if exists)?(?: only)? ([a-z0-9_.]+) drop(?: column)?(?: if exists)? (?!constraint )([a-z0-9_]+)/,
      (m) => `column ${m[1]}.${m[2]}`,
    ],
    [
      /^alter table(?: if exists)?(?: only)? ([a-z0-9_.]+) alter(?: column)? ([a-z0-9_]+) (?:set data type|type|set not null)/,
      (m) => `column ${m[1]}.${m[2]}`,
    ],
    [
      /^alter table(?: if exists)?(?: only)? ([a-z0-9_.]+) rename(?: column)? ([a-z0-9_]+) to /,
      (m) => (m[2] === 'to' ? `table ${m[1]}` : `column ${m[1]}.${m[2]}`),
    ],
    [/^alter (table|view|index|function) ([a-z0-9_.]+(?:\([^)]*\))?) rename to /, (m) => `${m[1]} ${m[2]}`],
    [/^revoke (.+?) on (.+?) from ([a-z0-9_, ]+)$/, (m) => `grant ${m[1]} on ${m[2]} to ${m[3]}`],
  ];
  for (const [pattern, identity] of rules) {
    const m = pattern.exec(statement);
    if (m) return [identity(m)];
  }
  return [];
}

/**
 * A function the previous release cannot call: its db/sql grants it to no role and its TypeScript
 * never names it, so only the schema's own SQL calls it (trigger functions among them), and on the
 * new schema that SQL is this release's.
 */
function unreachable(previous: Release, before: string[], identity: string): boolean {
  const m = /^function ([a-z0-9_]+)\.([a-z0-9_]+)\(/.exec(identity);
  if (!m) return false;
  const granted = before.some((statement) => statement.startsWith('grant ') && statement.includes(` on function ${m[1]}.${m[2]}(`));
  return !granted && !previous.namesInCode(m[2] as string);
}

/**
 * The triggers a new migration renames, as `trigger <old> on <table>` to `trigger <new> on <table>`:
 * rows ('app.table', 'old', 'new') of a statement that runs `alter trigger %I on %s rename to %I`.
 */
function renamedTriggers(statements: string[]): Map<string, string> {
  const renamed = new Map<string, string>();
  for (const statement of statements.filter((text) => text.includes('alter trigger %i on %s rename to %i')))
    for (const m of statement.matchAll(/\('([a-z0-9_]+\.[a-z0-9_]+)','([a-z0-9_]+)','([a-z0-9_]+)'\)/g))
      renamed.set(`trigger ${m[2]} on ${m[1]}`, `trigger ${m[3]} on ${m[1]}`);
  return renamed;
}

/**
 * What `current` removes that `previous` did not declare retired, each as a line naming the object
 * and where: empty when the release only expands. Two removals need no retired release first
 * (docs/database.md): a function the previous release cannot call (unreachable), and a trigger a
 * new migration renames to a name db/sql now defines.
 */
export function contractions(previous: Release, current: Release): string[] {
  const problems: string[] = [];
  const before = statementsOf(previous.sql);
  const after = statementsOf(current.sql);
  const removed = new Map<string, string>();
  const now = definedBy(after);
  for (const identity of definedBy(before)) if (!now.has(identity)) removed.set(identity, 'no longer defined by db/sql');
  const known = new Set(before);
  for (const statement of after.filter((text) => !known.has(text)))
    for (const identity of removedBy(statement)) removed.set(identity, 'removed by db/sql');
  const landed = new Set(previous.migrations.map(({ file }) => file));
  const renamed = new Map<string, string>();
  for (const migration of current.migrations.filter(({ file }) => !landed.has(file))) {
    for (const statement of statementsOf([migration]))
      for (const identity of removedBy(statement)) removed.set(normalise(identity), `removed by migrations/${migration.file}`);
    for (const [from, to] of renamedTriggers(statementsOf([migration]))) renamed.set(from, to);
  }
  for (const [identity, how] of removed) {
    const renamedTo = renamed.get(identity);
    if (renamedTo !== undefined && now.has(renamedTo)) continue;
    if (unreachable(previous, before, identity)) continue;
    if (!previous.retired.has(normalise(identity)))
      problems.push(`${identity}: ${how}, but the previous release did not list it in db/retired.txt (it may still use it)`);
  }
  return problems;
}

/** The db/sql statements of a release, as a Release with the given files. */
const release = (sql: Record<string, string>, migrations: Record<string, string> = {}, retired = '', level = 1): Release => ({
  sql: Object.entries(sql).map(([file, text]) => ({ file, sql: text })),
  migrations: Object.entries(migrations).map(([file, text]) => ({ file, sql: text })),
  retired: retiredOf(retired),
  sqlLevel: level,
  namesInCode: () => true,
});

describe('this release against the previous one', () => {
  it('names a previous release present in the repository history', () => {
    expect(previous, 'deploy/previous-release must name a commit').toMatch(/^[0-9a-f]{40}$/);
    expect(
      () => git('cat-file', '-e', `${previous}^{commit}`),
      `the previous release ${previous} is not in this clone's history`,
    ).not.toThrow();
  });

  it('removes only what the previous release declared retired', () => {
    expect(contractions(previousRelease(), currentRelease())).toEqual([]);
  });

  it('raises the db/sql level when db/sql changed, and never lowers it', () => {
    const before = previousRelease();
    const current = currentRelease();
    // File by file, whatever order each release lists its files in (git's, or the runner's).
    const byFile = (files: Release['sql']) =>
      JSON.stringify([...files].sort((a, b) => a.file.localeCompare(b.file)).map((file) => [file.file, statementsOf([file])]));
    const changed = byFile(before.sql) !== byFile(current.sql);
    if (changed)
      expect(current.sqlLevel, 'db/sql differs from the previous release: raise sqlLevel in db/migrate.ts').toBeGreaterThan(
        before.sqlLevel,
      );
    else expect(current.sqlLevel).toBeGreaterThanOrEqual(before.sqlLevel);
  });

  it('runs every worker task the previous release queues (a job queued by one release runs on the other)', () => {
    const before = workerTasksOf(git('ls-tree', '-r', '--name-only', previous, 'worker').split('\n'), (file) =>
      git('show', `${previous}:${file}`),
    );
    const now = new Set(taskNames);
    expect(before.length, "the previous release's task list was not found").toBeGreaterThan(5);
    const retired = previousRelease().retired;
    expect(
      before.filter((task) => !now.has(task) && !retired.has(`task ${task}`)),
      'a task the previous release queues is gone: keep it until a release after it was listed as retired',
    ).toEqual([]);
  });

  it("reads this release's worker tasks from its source as it will once this is the previous release", () => {
    const files = git('ls-files', '--cached', '--others', '--exclude-standard', 'worker').split('\n');
    const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
    expect(workerTasksOf(files, read).sort()).toEqual([...taskNames].sort());
  });

  it('uses nothing it lists as retired', () => {
    const current = currentRelease();
    const code = ['server', 'worker', 'db']
      .flatMap((dir) => git('ls-files', dir).split('\n'))
      .filter((file) => /\.ts$/.test(file))
      .map((file) => readFileSync(path.join(root, file), 'utf8'))
      .join('\n');
    const sql = statementsOf(current.sql);
    for (const identity of current.retired) {
      const m = /^(function|view|table) ([a-z0-9_]+)\.([a-z0-9_]+)/.exec(identity);
      if (!m) continue; // columns, indexes, policies, triggers and grants: named too generally to search for.
      const name = m[3] as string;
      const own = new RegExp(
        `^(create or replace (function|view)|comment on (function|view)|grant .* on( function)?|revoke .* on( function)?|alter (function|view)) ${m[2]}\\.${name}\\b`,
      );
      const users = sql.filter((statement) => statement.includes(name) && !own.test(statement));
      expect(users, `${identity} is listed as retired but db/sql still uses it`).toEqual([]);
      expect(new RegExp(`\\b${name}\\b`).test(code), `${identity} is listed as retired but TypeScript still names it`).toBe(false);
    }
  });
});

describe('the check finds each kind of removal (planted)', () => {
  const base = release({
    'a.sql': `create or replace function app.f(p uuid) returns int language sql as $$ select 1 $$;
comment on function app.f(uuid) is 'f';
create policy p on app.t for select to app_user using (true);
create trigger tr after insert on app.t for each row execute function app.g();
grant select (a, b) on app.t to app_user;`,
  });

  it('finds nothing when a release only adds', () => {
    const next = release(
      { 'a.sql': `${base.sql[0]?.sql}\ncreate policy q on app.t for select to app_admin using (true);` },
      { '0400_add.sql': '-- Up Migration\nalter table app.t add column c text;' },
    );
    expect(contractions(base, next)).toEqual([]);
  });

  it('finds a function, policy or trigger taken out of db/sql', () => {
    expect(contractions(base, release({ 'a.sql': '' }))).toEqual([
      'function app.f(uuid): no longer defined by db/sql, but the previous release did not list it in db/retired.txt (it may still use it)',
      'policy p on app.t: no longer defined by db/sql, but the previous release did not list it in db/retired.txt (it may still use it)',
      'trigger tr on app.t: no longer defined by db/sql, but the previous release did not list it in db/retired.txt (it may still use it)',
    ]);
  });

  it('finds drops, renames, narrowed columns and revokes in a new migration, and accepts what was declared retired', () => {
    const migration = `-- Up Migration
alter table app.t drop column old_flag;
alter table app.t alter column a type int;
alter table app.t alter column b set not null;
alter table app.t rename column c to d;
drop index if exists app.t_a;
drop table app.gone;
revoke select (a) on app.t from app_user;
alter table app.t drop constraint t_check;`;
    const next = release({ 'a.sql': base.sql[0]?.sql as string }, { '0400_contract.sql': migration });
    expect(contractions(base, next).map((line) => line.split(':')[0])).toEqual([
      'column app.t.old_flag',
      'column app.t.a',
      'column app.t.b',
      'column app.t.c',
      'index app.t_a',
      'table app.gone',
      'grant select(a) on app.t to app_user',
    ]);
    const declared = release(
      { 'a.sql': base.sql[0]?.sql as string },
      {},
      'column app.t.old_flag\ncolumn app.t.a\ncolumn app.t.b\ncolumn app.t.c\nindex app.t_a\ntable app.gone\ngrant select (a) on app.t to app_user -- no longer read',
    );
    expect(contractions(declared, next)).toEqual([]);
  });

  it('accepts a function the previous release cannot call, and a trigger a new migration renames to one db/sql defines', () => {
    const previous = {
      ...release({
        'a.sql': `create or replace function app_private.count_t() returns trigger language plpgsql as $$ begin return null; end $$;
comment on function app_private.count_t() is 'counts';
create or replace function app_private.granted() returns int language sql as $$ select 1 $$;
comment on function app_private.granted() is 'granted';
grant execute on function app_private.granted() to app_worker;
create or replace function app_private.named() returns int language sql as $$ select 2 $$;
comment on function app_private.named() is 'named by TypeScript';
create trigger t_counted after insert on app.t for each row execute function app_private.count_t();
create trigger t_other after insert on app.t for each row execute function app_private.count_t();`,
      }),
      namesInCode: (name: string) => name === 'named',
    };
    const rename = `-- Up Migration
do $$ declare v record; begin
  for v in select * from (values ('app.t', 't_counted', '_500_count'), ('app.t', 't_other', '_600_gone')) r (tbl, old_name, new_name) loop
    execute format('alter trigger %I on %s rename to %I', v.old_name, v.tbl, v.new_name);
  end loop;
end $$;`;
    const next = release(
      {
        'a.sql': `create or replace function app_private.count_rows() returns trigger language plpgsql as $$ begin return null; end $$;
comment on function app_private.count_rows() is 'counts';
create trigger _500_count after insert on app.t for each row execute function app_private.count_rows();
drop function if exists app_private.count_t();`,
      },
      { '0440_rename.sql': rename },
    );
    // t_other is renamed to a trigger db/sql does not define: a removal.
    expect(contractions(previous, next).map((line) => line.split(':')[0])).toEqual([
      'function app_private.granted()',
      'function app_private.named()',
      'trigger t_other on app.t',
    ]);
  });

  it('finds a drop function or revoke added to db/sql', () => {
    const next = release({
      'a.sql': `${base.sql[0]?.sql}\ndrop function if exists app.f(uuid);\nrevoke execute on function app.h(int) from app_user;`,
    });
    expect(contractions(base, next).map((line) => line.split(':')[0])).toEqual([
      'function app.f(uuid)',
      'grant execute on function app.h(int) to app_user',
    ]);
  });
});
