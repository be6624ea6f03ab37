// Applies db/sql by comparison: each object a statement defines (a function, a policy, a trigger, a
// view, a grant, a comment, a row-security switch, the rows of a list) is compared with its definition
// in the database, and only what differs is changed. docs/database.md "How the runner applies them".
//
//   1. Functions, grants on schemas and functions, and the rows of the runner's lists, in one
//      transaction that takes no table lock: each object's statements run in a savepoint, and when
//      the object reads back as before (pg_get_functiondef, its ACL and comment; the ACLs of the
//      schema; the list's rows) the savepoint is rolled back, so an unchanged function is not even
//      rewritten (no plan invalidation anywhere).
//   2. Policies, triggers, views, their comments and row-security switches take a table lock when
//      created, so they are compared without being created: a policy's command, roles and expressions
//      against pg_policy (each expression read back through a temporary view over the table, so that
//      PostgreSQL compares its own parse of both), a trigger by pg_get_triggerdef of the same
//      statement run on a temporary copy of the table, a view by pg_get_viewdef of a temporary view of
//      the same query, a comment by its text. What differs is changed per table, in a transaction of
//      its own under a short lock_timeout, retried until the table is free (db/lock-retry.ts).
//   3. Grants on tables, views and columns (no lock), once the views exist.
//   4. Functions a file drops (`drop function if exists`, no table lock), once the triggers,
//      policies and views that called them were replaced in step 2.
//
// The runner works on the owner's direct connection (DATABASE_URL), never through a pooler: its
// temporary function, views and table copies live in savepoints of its own session and go with them.
//
// Nothing is dropped because a file stopped defining it: a removal is a statement of its own
// (`drop function if exists`, `revoke`, or a migration's `drop policy`), written a release after the
// release that stopped using the object (the expand/contract rule). Policies and triggers on our
// tables that no file defines are reported.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { type LockRetryOptions, withLockRetries } from './lock-retry.ts';
import { commentLiteral, lockedRelation, lockFreeKinds, policyParts, type Statement, type Target, targetKey } from './sql-statements.ts';

interface Unit {
  key: string;
  target: Target;
  statements: Statement[];
}

export interface SqlApplyResult {
  /** The objects changed, by key ("function app.cast_vote", "policy x on app.posts"). */
  changed: string[];
  /** Policies and triggers on our tables that no file defines (left in place). */
  orphans: string[];
}

/** Consecutive statements about one object form one unit (a function, its comment and its grants). */
function unitsOf(statements: readonly Statement[]): Unit[] {
  const units: Unit[] = [];
  for (const statement of statements) {
    const key = targetKey(statement.target);
    const last = units.at(-1);
    if (last && last.key === key) last.statements.push(statement);
    else units.push({ key, target: statement.target, statements: [statement] });
  }
  return units;
}

/** A unit that only drops a function: applied last, after what called the function was replaced. */
const dropsOnly = (unit: Unit) =>
  unit.target.kind === 'function' && unit.statements.every((statement) => /^drop\s+function\s/i.test(statement.text));

/** The identifier SQL text of a schema-qualified name from a file (already matched as [a-z_][a-z0-9_]* parts). */
const relationName = (qualified: string) => qualified.split('.')[1] as string;

/** What a lock-free unit's object reads back as: compared before and after its statements. */
function fingerprintQuery(target: Target): { text: string; values: unknown[] } {
  switch (target.kind) {
    case 'function':
      return {
        text: `select coalesce(string_agg(p.oid::regprocedure::text || ' ' || md5(pg_get_functiondef(p.oid)) || ' ' || coalesce(p.proacl::text, '')
                 || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), ''), E'\\n' order by p.oid::regprocedure::text), '') as fingerprint
               from pg_proc p where p.pronamespace = to_regnamespace($1[1]) and p.proname = $1[2] and p.prokind in ('f', 'p')`,
        values: [target.schema, target.name],
      };
    case 'schema-acl':
      return {
        text: `select coalesce(n.nspacl::text, '')
                 || '|' || coalesce((select string_agg(c.relname || '=' || coalesce(c.relacl::text, ''), ',' order by c.relname) from pg_class c where c.relnamespace = n.oid), '')
                 || '|' || coalesce((select string_agg(p.oid::regprocedure::text || '=' || coalesce(p.proacl::text, ''), ',' order by p.oid::regprocedure::text) from pg_proc p where p.pronamespace = n.oid), '') as fingerprint
               from pg_namespace n where n.nspname = $1[1]`,
        values: [target.schema],
      };
    case 'relation-acl':
      return {
        text: `select coalesce(c.relacl::text, '') || '|' || coalesce((select string_agg(a.attname || '=' || a.attacl::text, ',' order by a.attnum)
                 from pg_attribute a where a.attrelid = c.oid and a.attacl is not null), '') as fingerprint
               from pg_class c where c.oid = to_regclass($1[1])`,
        values: [target.relation],
      };
    case 'rows':
      // The table's name is a checked identifier from our own file (sql-statements.ts).
      return {
        text: `select coalesce(md5(string_agg(t::text, ',' order by t::text)), '') as fingerprint from ${target.table} t where $1 is not null`,
        values: [],
      };
    default:
      throw new Error(`${target.kind} is not compared by fingerprint`);
  }
}

/**
 * One round trip per unit: a temporary function runs the unit's statements between two readings of
 * its fingerprint, in a subtransaction that it rolls back (a raised XSAME) when they read the same.
 */
const unitFunction = `
create or replace function pg_temp.sql_apply_unit(p_statements text[], p_fingerprint text, p_args text[])
  returns boolean
  language plpgsql
  as $f$
declare
  v_before text;
  v_after text;
  v_statement text;
begin
  begin
    execute p_fingerprint into v_before using p_args;
    foreach v_statement in array p_statements loop
      execute v_statement;
    end loop;
    execute p_fingerprint into v_after using p_args;
    if v_before is not distinct from v_after then
      raise sqlstate 'XSAME';
    end if;
  exception when sqlstate 'XSAME' then
    return false;
  end;
  return true;
end
$f$`;

/** Runs each unit and keeps it only when its object reads back differently (above). */
async function applyLockFree(client: pg.Client, units: readonly Unit[], changed: string[]): Promise<void> {
  await client.query(unitFunction);
  for (const unit of units) {
    const { text, values } = fingerprintQuery(unit.target);
    let result;
    try {
      result = await client.query<{ changed: boolean }>('select pg_temp.sql_apply_unit($1, $2, $3) as changed', [
        unit.statements.map((statement) => statement.text),
        text,
        values,
      ]);
    } catch (error) {
      (error as Error).message = `${unit.statements[0]?.where ?? unit.key} (${unit.key}): ${(error as Error).message}`;
      throw error;
    }
    if (result.rows[0]?.changed) changed.push(unit.key);
  }
}

/** Runs `probe` in a savepoint that is always rolled back (temporary objects and their locks go with it). */
async function probe<T>(client: pg.Client, body: () => Promise<T>): Promise<T> {
  await client.query('savepoint sql_apply_probe');
  try {
    return await body();
  } finally {
    await client.query('rollback to savepoint sql_apply_probe');
  }
}

/** Whether two expressions over `table` are the same to PostgreSQL (its deparse of both, through temporary views). */
async function sameExpression(client: pg.Client, table: string, file: string | null, database: string | null): Promise<boolean> {
  if (file === null || database === null) return file === database;
  return probe(client, async () => {
    try {
      await client.query(`create temporary view sql_apply_file as select (${file}) as e from ${table}`);
    } catch {
      return false; // The file's expression does not stand alone yet (a new column, say): apply it.
    }
    await client.query(`create temporary view sql_apply_database as select (${database}) as e from ${table}`);
    const { rows } = await client.query<{ same: boolean }>(
      `select pg_get_viewdef('pg_temp.sql_apply_file'::regclass) = pg_get_viewdef('pg_temp.sql_apply_database'::regclass) as same`,
    );
    return rows[0]?.same === true;
  });
}

async function sameComment(client: pg.Client, current: string | null | undefined, statement: Statement): Promise<boolean> {
  const { rows } = await client.query<{ same: boolean }>(
    `select $1::text is not distinct from ${commentLiteral(statement.text)}::text as same`,
    [current ?? null],
  );
  return rows[0]?.same === true;
}

const commands: Record<string, string> = { r: 'select', a: 'insert', w: 'update', d: 'delete', '*': 'all' };

/**
 * The statements that bring one table-locking unit to its file's definition, or [] when the
 * database already has it. Runs inside a transaction (temporary objects are rolled back).
 */
async function tableUnitChanges(client: pg.Client, unit: Unit): Promise<string[]> {
  const target = unit.target;
  const main = unit.statements[0] as Statement;
  const comments = unit.statements.filter((statement) => /-comment$/.test(statement.target.kind));
  const texts = (list: Statement[]) => list.map((statement) => statement.text);
  if (target.kind === 'policy' || target.kind === 'policy-comment') {
    const { rows } = await client.query<{
      permissive: boolean;
      cmd: string;
      roles: string[];
      using: string | null;
      check: string | null;
      comment: string | null;
    }>(
      `select p.polpermissive as permissive, p.polcmd as cmd,
              array(select case when r = 0 then 'public' else r::regrole::text end from unnest(p.polroles) r order by 1) as roles,
              pg_get_expr(p.polqual, p.polrelid) as using, pg_get_expr(p.polwithcheck, p.polrelid) as check, obj_description(p.oid, 'pg_policy') as comment
         from pg_policy p where p.polname = $1 and p.polrelid = to_regclass($2)`,
      [target.name, target.table],
    );
    const current = rows[0];
    if (target.kind === 'policy') {
      const file = policyParts(main.text);
      const same =
        current !== undefined &&
        current.permissive === file.permissive &&
        commands[current.cmd] === file.command &&
        current.roles.join(',') === file.roles.join(',') &&
        (await sameExpression(client, target.table, file.using, current.using)) &&
        (await sameExpression(client, target.table, file.check, current.check));
      if (!same) return [`drop policy if exists ${target.name} on ${target.table}`, ...texts(unit.statements)];
    }
    const changedComments = [];
    for (const comment of comments) if (!(await sameComment(client, current?.comment, comment))) changedComments.push(comment);
    return texts(changedComments);
  }
  if (target.kind === 'trigger' || target.kind === 'trigger-comment') {
    const { rows } = await client.query<{ definition: string; enabled: string; comment: string | null }>(
      `select pg_get_triggerdef(t.oid) as definition, t.tgenabled as enabled, obj_description(t.oid, 'pg_trigger') as comment
         from pg_trigger t where t.tgname = $1 and t.tgrelid = to_regclass($2) and not t.tgisinternal`,
      [target.name, target.table],
    );
    const current = rows[0];
    if (target.kind === 'trigger') {
      const relname = relationName(target.table);
      const normalise = (definition: string) => definition.replace(/ ON (?:[a-z_][a-z0-9_]*\.)?([a-z_][a-z0-9_]*) /, ' ON $1 ');
      const wanted = await probe(client, async () => {
        await client.query(`create temporary table ${relname} (like ${target.table})`);
        const onShadow = main.text.replace(
          new RegExp(`(\\s)on\\s+${target.table.replace('.', '\\.')}(\\s)`, 'i'),
          `$1on pg_temp.${relname}$2`,
        );
        await client.query(onShadow);
        const shadow = await client.query<{ definition: string }>(
          `select pg_get_triggerdef(t.oid) as definition from pg_trigger t where t.tgname = $1 and t.tgrelid = 'pg_temp.${relname}'::regclass`,
          [target.name],
        );
        return shadow.rows[0]?.definition;
      });
      const same =
        current !== undefined && current.enabled === 'O' && wanted !== undefined && normalise(current.definition) === normalise(wanted);
      if (!same) return [`drop trigger if exists ${target.name} on ${target.table}`, ...texts(unit.statements)];
    }
    const changedComments = [];
    for (const comment of comments) if (!(await sameComment(client, current?.comment, comment))) changedComments.push(comment);
    return texts(changedComments);
  }
  if (target.kind === 'view' || target.kind === 'view-comment') {
    const { rows } = await client.query<{ definition: string; options: string[] | null; comment: string | null }>(
      `select pg_get_viewdef(c.oid) as definition, c.reloptions as options, obj_description(c.oid, 'pg_class') as comment
         from pg_class c where c.oid = to_regclass($1) and c.relkind = 'v'`,
      [target.view],
    );
    const current = rows[0];
    if (target.kind === 'view') {
      const relname = relationName(target.view);
      const wanted = await probe(client, async () => {
        const rest = main.text.replace(/^\s*create\s+or\s+replace\s+view\s+[a-z_][a-z0-9_.]*/i, '');
        await client.query(`create temporary view ${relname}${rest}`);
        const shadow = await client.query<{ definition: string; options: string[] | null }>(
          `select pg_get_viewdef(c.oid) as definition, c.reloptions as options from pg_class c where c.oid = 'pg_temp.${relname}'::regclass`,
        );
        return shadow.rows[0];
      });
      const same =
        current !== undefined &&
        wanted !== undefined &&
        current.definition === wanted.definition &&
        String(current.options) === String(wanted.options);
      if (!same) return texts(unit.statements);
    }
    const changedComments = [];
    for (const comment of comments) if (!(await sameComment(client, current?.comment, comment))) changedComments.push(comment);
    return texts(changedComments);
  }
  if (target.kind === 'row-security') {
    const { rows } = await client.query<{ enabled: boolean; forced: boolean }>(
      'select c.relrowsecurity as enabled, c.relforcerowsecurity as forced from pg_class c where c.oid = to_regclass($1)',
      [target.table],
    );
    const on = target.force ? rows[0]?.forced : rows[0]?.enabled;
    return on ? [] : texts(unit.statements);
  }
  throw new Error(`${target.kind} is not a table-locking target`);
}

/** Policies and triggers on tables of our schemas that no statement defines. */
async function orphansOf(client: pg.Client, units: readonly Unit[]): Promise<string[]> {
  const defined = new Set(units.map((unit) => unit.key));
  const { rows } = await client.query<{ key: string }>(
    `select format('policy %s on %s', p.polname, p.polrelid::regclass) as key from pg_policy p
       join pg_class c on c.oid = p.polrelid where c.relnamespace::regnamespace::text in ('app', 'app_private', 'graphile_worker')
     union all
     select format('trigger %s on %s', t.tgname, t.tgrelid::regclass) from pg_trigger t
       join pg_class c on c.oid = t.tgrelid where c.relnamespace::regnamespace::text in ('app', 'app_private') and not t.tgisinternal
     order by 1`,
  );
  return rows.map((row) => row.key).filter((key) => !defined.has(key));
}

/**
 * What each object was when the runner last applied it (public.sql_objects): the hash of the
 * statements that define it and its catalog rows as stored (pg_proc, pg_policy, pg_trigger,
 * pg_rewrite, pg_description, ACLs: read without locking any table, unlike the deparse functions).
 * An object whose statements and rows are both as recorded is not compared again, so a run that
 * changes one function's body reads no table at all; one changed by hand since (its rows differ) is
 * compared and put back.
 */
function rawCatalogQuery(target: Target): { text: string; values: unknown[] } {
  switch (target.kind) {
    case 'function':
      return {
        text: `select coalesce(string_agg(md5(p::text) || coalesce(d.description, ''), ',' order by p.oid), '') as raw
                 from pg_proc p left join pg_description d on d.objoid = p.oid and d.classoid = 'pg_proc'::regclass and d.objsubid = 0
                where p.pronamespace = to_regnamespace($1) and p.proname = $2`,
        values: [target.schema, target.name],
      };
    case 'schema-acl':
    case 'relation-acl': {
      const { text, values } = fingerprintQuery(target);
      return { text: text.replaceAll('$1[1]', '$1'), values };
    }
    case 'rows':
      return { text: `select '' as raw`, values: [] };
    case 'policy':
    case 'policy-comment':
      return tableObjectRow('pg_policy', 'polname', 'polrelid', target.name, target.table);
    case 'trigger':
    case 'trigger-comment':
      return tableObjectRow('pg_trigger', 'tgname', 'tgrelid', target.name, target.table);
    case 'view':
    case 'view-comment':
      return {
        text: `select coalesce((select md5(r.ev_action::text) || coalesce(c.reloptions::text, '') || coalesce(d.description, '')
                 from pg_class c join pg_rewrite r on r.ev_class = c.oid
                 left join pg_description d on d.objoid = c.oid and d.classoid = 'pg_class'::regclass and d.objsubid = 0
                where c.oid = to_regclass($1)), '') as raw`,
        values: [target.view],
      };
    case 'row-security':
      return {
        text: `select coalesce((select c.relrowsecurity::text || c.relforcerowsecurity::text from pg_class c where c.oid = to_regclass($1)), '') as raw`,
        values: [target.table],
      };
  }
}

/** The stored row and comment of an object that belongs to a table (a policy, a trigger), by name. */
function tableObjectRow(catalog: 'pg_policy' | 'pg_trigger', nameColumn: string, tableColumn: string, name: string, table: string) {
  return {
    text: `select coalesce((select md5(o::text) || coalesce(d.description, '') from ${catalog} o
             left join pg_description d on d.objoid = o.oid and d.classoid = '${catalog}'::regclass
            where o.${nameColumn} = $1 and o.${tableColumn} = to_regclass($2)), '') as raw`,
    values: [name, table],
  };
}

interface Memo {
  statements: string;
  catalog: string;
}

/** Each unit's memo key (its key, numbered when one object has several units) and the hash of its statements. */
function memoKeys(units: readonly Unit[]): { unit: Unit; key: string; statements: string }[] {
  const seen = new Map<string, number>();
  return units.map((unit) => {
    const n = (seen.get(unit.key) ?? 0) + 1;
    seen.set(unit.key, n);
    const statements = createHash('sha256')
      .update(unit.statements.map((statement) => statement.text).join('\n;\n'))
      .digest('hex');
    return { unit, key: n === 1 ? unit.key : `${unit.key} #${n}`, statements };
  });
}

/** The rows of many targets in one statement (one round trip however many objects db/sql has). */
async function rawCatalogs(client: pg.Client, targets: readonly Target[]): Promise<string[]> {
  if (targets.length === 0) return [];
  const values: unknown[] = [];
  const parts = targets.map((target, i) => {
    const query = rawCatalogQuery(target);
    const base = values.length;
    values.push(...query.values);
    const text = query.text.replace(/\$(\d+)/g, (_, n: string) => `$${base + Number(n)}`);
    return `select ${i} as i, (${text}) as raw`;
  });
  const { rows } = await client.query<{ i: number; raw: string | null }>(parts.join('\nunion all\n'), values);
  const raws: string[] = new Array<string>(targets.length).fill('');
  for (const row of rows) raws[row.i] = row.raw ?? '';
  return raws;
}

/**
 * Brings the database's db/sql objects to the statements' definitions, changing only what differs
 * (above). `client` is the owner's connection, outside a transaction; `url` its connection string (the
 * lock watcher's connection).
 */
export async function applySqlStatements(
  client: pg.Client,
  url: string,
  statements: readonly Statement[],
  options: LockRetryOptions,
): Promise<SqlApplyResult> {
  const all = unitsOf(statements);
  await client.query(
    'create table if not exists public.sql_objects (key text primary key, statements text not null, catalog text not null)',
  );
  const memo = new Map(
    (await client.query<Memo & { key: string }>('select key, statements, catalog from public.sql_objects')).rows.map((row) => [
      row.key,
      row,
    ]),
  );
  const keyed = memoKeys(all);
  // Only what changed in its file or in the database since the runner last applied it is compared.
  const pending = new Set<Unit>();
  const before = await rawCatalogs(
    client,
    keyed.map(({ unit }) => unit.target),
  );
  keyed.forEach(({ unit, key, statements }, i) => {
    const recorded = memo.get(key);
    if (!recorded || recorded.statements !== statements || recorded.catalog !== before[i]) pending.add(unit);
  });
  const units = all.filter((unit) => pending.has(unit));
  const drops = units.filter(dropsOnly);
  const firstPhase = units.filter((unit) => lockFreeKinds.has(unit.target.kind) && unit.target.kind !== 'relation-acl' && !dropsOnly(unit));
  const relationGrants = units.filter((unit) => unit.target.kind === 'relation-acl');
  const tableUnits = units.filter((unit) => !lockFreeKinds.has(unit.target.kind));

  /** A phase in a transaction of its own, retried whole on a lock timeout: what it changed. A phase with nothing to do opens none. */
  const phase = async (what: string, pendingUnits: readonly Unit[], body: (changed: string[]) => Promise<void>): Promise<string[]> => {
    if (pendingUnits.length === 0) return [];
    let changed: string[] = [];
    await withLockRetries(
      client,
      url,
      what,
      async () => {
        changed = [];
        await body(changed);
      },
      options,
    );
    return changed;
  };

  // 1. Functions, schema grants and lists: one transaction, no table lock. Function bodies are
  // checked when called, not when created: a body may name a function a later file creates (as
  // pg_dump restores them).
  const changed = await phase('functions and grants of db/sql', firstPhase, async (found) => {
    await client.query('set local check_function_bodies = off');
    await applyLockFree(client, firstPhase, found);
  });

  // 2. What locks a table: compared first (AccessShare at most), then changed table by table.
  const byRelation = new Map<string, string[]>();
  changed.push(
    ...(await phase('comparing policies, triggers and views of db/sql', tableUnits, async (found) => {
      byRelation.clear();
      for (const unit of tableUnits) {
        const statements = await tableUnitChanges(client, unit);
        if (statements.length === 0) continue;
        const relation = lockedRelation(unit.target) as string;
        byRelation.set(relation, [...(byRelation.get(relation) ?? []), ...statements]);
        found.push(unit.key);
      }
    })),
  );
  for (const [relation, statements] of byRelation) {
    await withLockRetries(
      client,
      url,
      `policies, triggers and views of ${relation}`,
      async () => {
        for (const text of statements) await client.query(text);
      },
      options,
    );
  }

  // 3. Grants on tables, views and columns (no lock; after the views exist).
  changed.push(
    ...(await phase('table and column grants of db/sql', relationGrants, (found) => applyLockFree(client, relationGrants, found))),
  );

  // 4. Functions dropped (no table lock), once the triggers, policies and views that called them
  // are replaced.
  changed.push(...(await phase('functions dropped by db/sql', drops, (found) => applyLockFree(client, drops, found))));

  // What each compared object is now, for the next run.
  if (units.length > 0) {
    const recorded = keyed.filter(({ unit }) => pending.has(unit));
    const after = await rawCatalogs(
      client,
      recorded.map(({ unit }) => unit.target),
    );
    await client.query(
      `insert into public.sql_objects (key, statements, catalog)
       select * from unnest($1::text[], $2::text[], $3::text[])
       on conflict (key) do update set statements = excluded.statements, catalog = excluded.catalog`,
      [recorded.map(({ key }) => key), recorded.map(({ statements }) => statements), after],
    );
  }
  return { changed, orphans: await orphansOf(client, all) };
}
