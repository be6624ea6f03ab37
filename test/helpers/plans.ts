// Query plans read in tests: what a statement actually read, from EXPLAIN (ANALYZE, BUFFERS, FORMAT
// JSON) run on the viewer's connection (asViewer), so policies and parameters are those of a request.
// Tests assert what a plan reads (rows of a table, buffers), never how long it took.
import type pg from 'pg';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

export async function explain(client: pg.ClientBase, sql: string, params: unknown[] = []): Promise<PlanNode> {
  const { rows } = await client.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`explain (analyze, buffers, format json) ${sql}`, params);
  return (rows[0]?.['QUERY PLAN'][0] as { Plan: PlanNode }).Plan;
}

/** Every node of a plan, depth first. */
export function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The scans of a table in a plan. */
export function scansOf(plan: PlanNode, relation: string): PlanNode[] {
  return nodes(plan).filter((node) => node['Relation Name'] === relation);
}

/**
 * Rows of `relation` the plan read: what its scans returned plus what their filters threw away,
 * over all loops.
 */
export function rowsRead(plan: PlanNode, relation: string): number {
  return scansOf(plan, relation).reduce(
    (sum, node) =>
      sum +
      node['Actual Loops'] * (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)),
    0,
  );
}

/** Buffers the whole statement touched, functions it called included. */
export function buffers(plan: PlanNode): number {
  return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
}

/** A one-line summary for assertion messages. */
export function describePlan(plan: PlanNode): string {
  return nodes(plan)
    .map(
      (node) =>
        `${node['Node Type']}${node['Relation Name'] ? ` ${node['Relation Name']}` : ''}${node['Index Name'] ? ` (${node['Index Name']})` : ''}: ${node['Actual Rows']}x${node['Actual Loops']}`,
    )
    .join('; ');
}

/**
 * Rows of `relation` read so far in the current transaction, by sequential and index scans (the
 * statistics of the transaction: they include what security definer functions read, whose plans
 * EXPLAIN does not show).
 */
export async function rowsReadInTransaction(client: pg.ClientBase, relation: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n from pg_stat_xact_user_tables where relid = $1::regclass`,
    [relation],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Rows each table of app and app_private returned so far in the current transaction: its
 * sequential scans' rows and its indexes' entries (index-only scans included, and what security
 * definer functions read). The difference of two reads is what the statements between them read.
 */
export async function readsInTransaction(client: pg.ClientBase): Promise<Map<string, number>> {
  const { rows } = await client.query<{ relation: string; rows: string }>(`
    select c.relname as relation,
           coalesce(pg_stat_get_xact_tuples_returned(c.oid), 0)
         + coalesce((select sum(pg_stat_get_xact_tuples_returned(i.indexrelid)) from pg_index i where i.indrelid = c.oid), 0) as rows
      from pg_class c
     where c.relnamespace in ('app'::regnamespace, 'app_private'::regnamespace) and c.relkind in ('r', 'm')`);
  return new Map(rows.map((row) => [row.relation, Number(row.rows)]));
}

/**
 * Vacuums the app's tables until every page of each is marked all-visible, as autovacuum leaves a
 * settled table. A vacuum that ran while another transaction of the database was open (the test
 * app's job poll, slowed on a busy machine) cannot mark the pages written before it, and then an
 * index scan, and the planner's probe of an index's last value for a bound past its histogram,
 * fetch heap rows the steady state never would. Vacuums the tables with pages left, up to
 * `attempts` times, 100 ms apart.
 */
export async function vacuumUntilAllVisible(client: pg.ClientBase, attempts = 50): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    const { rows } = await client.query<{ name: string }>(
      `select format('%I.%I', s.nspname, c.relname) as name from pg_class c join pg_namespace s on s.oid = c.relnamespace
       where s.nspname = 'app' and c.relkind = 'r' and c.relpages > 0 and c.relallvisible < c.relpages`,
    );
    if (rows.length === 0) return;
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    await client.query(`vacuum ${rows.map((row) => row.name).join(', ')}`);
  }
}
