// Lints over the migrated catalog (the kind Supabase's splinter runs), so a new migration cannot
// bring back what they forbid: a security-definer function without its own search_path (it would
// resolve names through the caller's), two indexes that are the same index, two permissive
// policies that apply to one role and command on a table (PostgreSQL ORs them, so a reader has to
// find both to know the rule), and an error code the SQL raises that the API's catalog does not
// know (it would reach the client as a 500). Each lint is also shown to find what it forbids.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalog } from '../../../server/http/catalog.ts';
import { constraintCodes } from '../../../server/http/database-errors.ts';
import { scratchDatabase, type ScratchDatabase } from '../../helpers/worlds.ts';

const ourSchemas = ['app', 'app_private'];
let clone: ScratchDatabase;
let db: pg.Client;
beforeAll(async () => {
  // A clone of the template: connecting to the template itself would stop other files cloning it.
  clone = await scratchDatabase('opinion_lints');
  db = new pg.Client({ connectionString: clone.ownerUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await clone?.drop();
});

/** Security-definer functions whose search_path is unset or names a schema other than pg_catalog and ours. */
async function definersWithoutSafeSearchPath(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ fn: string; search_path: string | null }>(
    `select p.oid::regprocedure::text as fn,
            (select substr(c, length('search_path=') + 1) from unnest(p.proconfig) c where c like 'search_path=%') as search_path
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where p.prosecdef and n.nspname = any ($1) order by 1`,
    [ourSchemas],
  );
  const trusted = new Set(['pg_catalog', '', '""', ...ourSchemas]);
  return rows
    .filter((row) => row.search_path === null || !row.search_path.split(/,\s*/).every((name) => trusted.has(name)))
    .map((row) => `${row.fn}: ${row.search_path ?? 'no search_path'}`);
}

/** Every code-shaped literal a function of ours can raise, with the functions that raise it. */
async function raisedCodes(client: pg.Client): Promise<Map<string, Set<string>>> {
  const { rows } = await client.query<{ fn: string; src: string }>(
    `select p.oid::regprocedure::text as fn, p.prosrc as src
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = any ($1) and p.prolang in (select oid from pg_language where lanname in ('sql', 'plpgsql'))`,
    [ourSchemas],
  );
  const raised = new Map<string, Set<string>>();
  const note = (code: string, fn: string) => raised.set(code, (raised.get(code) ?? new Set()).add(fn));
  for (const { fn, src } of rows) {
    // app.fail(<expression>): every code-shaped literal in the argument, a `case` included.
    for (const match of src.matchAll(/app\.fail\s*\(/g)) {
      let depth = 1;
      let end = match.index + match[0].length;
      for (; end < src.length && depth > 0; end += 1) depth += src[end] === '(' ? 1 : src[end] === ')' ? -1 : 0;
      for (const [, code] of src.slice(match.index, end).matchAll(/'([A-Z][A-Z0-9_]+)'/g)) note(code!, fn);
    }
    // raise exception using errcode = 'P0001', message = '<CODE>' (how app.fail and the write limit raise)
    for (const [, code] of src.matchAll(/errcode\s*=\s*'P0001'\s*,\s*message\s*=\s*'([A-Z][A-Z0-9_]+)'/gi)) note(code!, fn);
  }
  return raised;
}

async function codesOutsideTheCatalog(client: pg.Client): Promise<string[]> {
  return [...(await raisedCodes(client))]
    .filter(([code]) => !Object.hasOwn(errorCatalog, code))
    .map(([code, fns]) => `${code} (${[...fns].join(', ')})`);
}

/** Indexes of one table with the same columns, operator classes, collations, options, expressions and predicate. */
async function duplicateIndexes(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ indexes: string[] }>(
    `select array_agg(i.indexrelid::regclass::text order by i.indexrelid::regclass::text) as indexes
     from pg_index i join pg_class t on t.oid = i.indrelid join pg_namespace n on n.oid = t.relnamespace
     where n.nspname = any ($1)
     group by i.indrelid, i.indkey::text, i.indclass::text, i.indcollation::text, i.indoption::text,
              coalesce(pg_get_expr(i.indexprs, i.indrelid), ''), coalesce(pg_get_expr(i.indpred, i.indrelid), '')
     having count(*) > 1`,
    [ourSchemas],
  );
  return rows.map((row) => row.indexes.join(' = '));
}

/** Functions, policies, triggers and views of ours without a `comment on` (why it exists, who uses it). */
async function uncommentedObjects(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ object: string }>(
    `select 'function ' || p.oid::regprocedure::text as object from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname = any ($1) and obj_description(p.oid, 'pg_proc') is null
     union all
     select 'policy ' || p.polname || ' on ' || p.polrelid::regclass::text from pg_policy p
       join pg_class c on c.oid = p.polrelid join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = any ($1) and obj_description(p.oid, 'pg_policy') is null
     union all
     select 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass::text from pg_trigger t
       join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = any ($1) and not t.tgisinternal and obj_description(t.oid, 'pg_trigger') is null
     union all
     select 'view ' || c.oid::regclass::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = any ($1) and c.relkind = 'v' and obj_description(c.oid, 'pg_class') is null
     order by 1`,
    [ourSchemas],
  );
  return rows.map((row) => row.object);
}

/** Functions of ours whose bodies are the same text (whitespace aside): one rule written twice. */
async function functionsSharingABody(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ fns: string[] }>(
    `select array_agg(p.oid::regprocedure::text order by p.oid::regprocedure::text) as fns
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = any ($1) and p.prolang in (select oid from pg_language where lanname in ('sql', 'plpgsql'))
     group by btrim(regexp_replace(p.prosrc, '\\s+', ' ', 'g'))
     having count(*) > 1`,
    [ourSchemas],
  );
  return rows.map((row) => row.fns.join(' = '));
}

/** Table, role and command that more than one permissive policy applies to (PUBLIC means every role, ALL every command). */
async function overlappingPermissivePolicies(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ target: string; policies: string[] }>(
    `with roles as (select oid, rolname from pg_roles where rolname in ('app_anonymous', 'app_user', 'app_admin', 'app_worker', 'authenticator')),
     expanded as (
       select p.polrelid::regclass::text as tbl, p.polname::text as polname, r.rolname, c.cmd
       from pg_policy p
       join pg_class t on t.oid = p.polrelid join pg_namespace n on n.oid = t.relnamespace
       join roles r on 0 = any (p.polroles) or r.oid = any (p.polroles)
       cross join lateral unnest(case p.polcmd when '*' then array['r', 'a', 'w', 'd'] else array[p.polcmd::text] end) as c (cmd)
       where n.nspname = any ($1) and p.polpermissive)
     select tbl || ' ' || rolname || ' ' || case cmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' else 'delete' end as target,
            array_agg(polname order by polname) as policies
     from expanded group by tbl, rolname, cmd having count(*) > 1 order by 1`,
    [ourSchemas],
  );
  return rows.map((row) => `${row.target}: ${row.policies.join(', ')}`);
}

describe('the migrated schema', () => {
  it('sets a search_path of pg_catalog and our schemas on every security definer function', async () => {
    const { rows } = await db.query(
      `select count(*)::int as n from pg_proc p join pg_namespace n on n.oid = p.pronamespace where p.prosecdef and n.nspname = any ($1)`,
      [ourSchemas],
    );
    expect(rows[0].n).toBeGreaterThan(100);
    expect(await definersWithoutSafeSearchPath(db)).toEqual([]);
  });

  it('raises only error codes the API catalog knows', async () => {
    const raised = await raisedCodes(db);
    // The level ladder's codes come out of a `case`, and the write limit raises without app.fail.
    for (const code of ['UNAUTHORIZED', 'PROFILE_BASICS_REQUIRED', 'HUB_READINESS_REQUIRED', 'RATE_LIMITED', 'VOTE_NOT_ALLOWED'])
      expect([...raised.keys()]).toContain(code);
    expect(await codesOutsideTheCatalog(db), 'add the code to server/http/catalog.ts (and the contract), or raise one it knows').toEqual(
      [],
    );
  });

  it('has the unique constraints and indexes the API maps to codes', async () => {
    // A unique violation names the constraint, or the unique index that enforces it.
    const { rows } = await db.query<{ name: string }>(
      `select conname::text as name from pg_constraint where conname = any ($1) and contype = 'u'
       union select c.relname::text from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = any ($1) and i.indisunique
       order by 1`,
      [Object.keys(constraintCodes)],
    );
    expect(rows.map((row) => row.name)).toEqual(Object.keys(constraintCodes).sort());
  });

  it('has no two indexes of a table that are the same index', async () => {
    expect(await duplicateIndexes(db)).toEqual([]);
  });

  it('has a comment on every function, policy, trigger and view (why it exists, which path or task uses it)', async () => {
    expect(await uncommentedObjects(db), 'add a `comment on` beside the object in its db/sql file').toEqual([]);
  });

  it('has no two functions with the same body', async () => {
    expect(await functionsSharingABody(db)).toEqual([]);
  });

  it('has no two permissive policies for one role and command on a table', async () => {
    expect(await overlappingPermissivePolicies(db)).toEqual([]);
  });
});

describe('each lint', () => {
  // Planted in a transaction that is rolled back.
  async function planted<T>(sql: string, lint: (client: pg.Client) => Promise<T>): Promise<T> {
    await db.query('begin');
    try {
      await db.query(sql);
      return await lint(db);
    } finally {
      await db.query('rollback');
    }
  }

  it('finds what it forbids', async () => {
    expect(
      await planted(
        `create function app.lint_probe() returns int language sql security definer as 'select 1'`,
        definersWithoutSafeSearchPath,
      ),
    ).toEqual(['app.lint_probe(): no search_path']);
    expect(
      await planted(
        `create function app.lint_probe() returns int language sql security definer set search_path = public as 'select 1'`,
        definersWithoutSafeSearchPath,
      ),
    ).toEqual(['app.lint_probe(): public']);
    expect(
      await planted(
        `create function app.lint_probe() returns void language plpgsql as $$ begin perform app.fail(case when random() < 0.5 then 'HUB_NOT_FOUND' else 'NOT_A_CODE' end); end $$`,
        codesOutsideTheCatalog,
      ),
    ).toEqual(['NOT_A_CODE (app.lint_probe())']);
    expect(
      await planted(
        `create function app.lint_probe(p_at timestamptz) returns text language sql immutable as $$
      select to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$`,
        functionsSharingABody,
      ),
    ).toEqual(['app.lint_probe(timestamp with time zone) = app_private.iso(timestamp with time zone)']);
    expect(await planted(`create function app.lint_probe() returns int language sql as 'select 2'`, uncommentedObjects)).toEqual([
      'function app.lint_probe()',
    ]);
    expect(await planted(`create index lint_probe on app.users (username)`, duplicateIndexes)).toEqual([
      'app.lint_probe = app.users_username_key',
    ]);
    expect(
      await planted(`create policy lint_probe on app.phone_identities for all to public using (true)`, overlappingPermissivePolicies),
    ).toEqual(['app.phone_identities app_user select: lint_probe, phone_identities_select_self_or_co_members']);
  });
});
