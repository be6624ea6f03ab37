// db/sql/counters.generated.sql: the counting triggers of every counted table, as `npm run counting`
// (tools/counting.ts) writes them from its list of counted tables and one template.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { countedTables, countingFile, renderCountingFile } from '../../../tools/counting.ts';
import { projectRoot } from '../../helpers/process.ts';

const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');

/** The values of app_private.counter, as db/schema.sql has them. */
function counterNames(): Set<string> {
  const body = /CREATE TYPE app_private\.counter AS ENUM \(([^)]*)\)/.exec(read('db/schema.sql'))?.[1] ?? '';
  return new Set([...body.matchAll(/'([a-z_]+)'/g)].map((m) => m[1] as string));
}

/** Each app_private.counted_by overload of db/sql/counters.sql: its table and the counters its body names. */
function countedBy(): Map<string, string[]> {
  const names = counterNames();
  const overloads = new Map<string, string[]>();
  for (const m of read('db/sql/counters.sql').matchAll(
    /create or replace function app_private\.counted_by\(\s*p_row app\.([a-z_]+)\s*\)[\s\S]*?\$\$([\s\S]*?)\$\$;/g,
  ))
    overloads.set(
      m[1] as string,
      [...(m[2] as string).matchAll(/'([a-z_]+)'/g)].map((n) => n[1] as string).filter((name) => names.has(name)),
    );
  return overloads;
}

describe('db/sql/counters.generated.sql', () => {
  it('is current (npm run counting rewrites it)', () => {
    expect(read(countingFile), `${countingFile} is stale: run npm run counting`).toBe(renderCountingFile());
  });

  it('names for each counted table the counters its app_private.counted_by overload defines', () => {
    const overloads = countedBy();
    for (const { table, counters } of countedTables) expect(counters.toSorted(), `app.${table}`).toEqual(overloads.get(table)?.toSorted());
    // The discussion messages' counters are kept in their own rows by the discussions triggers:
    // only the recount (app_private.counted_now) reads their counted_by.
    const declared = new Set(countedTables.map(({ table }) => table));
    expect([...overloads.keys()].filter((table) => !declared.has(table))).toEqual(['hub_discussion_messages']);
  });
});
