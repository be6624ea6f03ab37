// npm run counting: writes db/sql/counters.generated.sql, the counting triggers of every counted
// table, from the one template below and the one list of counted tables (countedTables).
// test/sql/counters/counters-generated.test.ts fails when the file is stale.
//
// The counting rule is written once, here: a statement adds what its new rows count and takes away
// what its old rows counted (app_private.counted_by of each row, db/sql/counters.sql), in one call
// of app_private.add_counts, from three statement triggers per table (insert, update, delete:
// PostgreSQL allows transition tables only on single-event triggers). Each table still gets a
// function of its own, written out in static SQL: a transition table's rows are anonymous records,
// so the statement must name the table's row type for counted_by to resolve to the table's overload,
// and only a statement written per table can name it without being planned again on every call
// (a shared function building it with format() and EXECUTE costs about 0.15 ms more per writing
// statement). What Lemmy's r.create_triggers does in SQL at migration time, done at build time, so
// the runner (db/sql-apply.ts) applies and compares ordinary functions and triggers.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
export const countingFile = 'db/sql/counters.generated.sql';

export interface CountedTable {
  /** The table, in schema app. */
  table: string;
  /** The counters its rows count towards, as app_private.counted_by(app.<table>) defines them (checked by the test). */
  counters: string[];
  /** The statements that write it, for the function's comment. */
  writtenBy: string;
  /** What runs before its counting, for the function's comment. */
  before?: string;
}

/** The counted tables: each gets app_private.count_<table>() and its three _500_count_* triggers. */
export const countedTables: readonly CountedTable[] = [
  {
    table: 'comments',
    counters: ['post_comments', 'comment_replies'],
    writtenBy: 'POST /posts/{postId}/comments, DELETE /comments/{commentId}, account hiding and purge',
  },
  {
    table: 'follows',
    counters: ['user_followers', 'user_following'],
    writtenBy: 'POST and DELETE /users/{userId}/follow, POST /users/{userId}/block, account hiding and purge',
  },
  {
    table: 'hub_memberships',
    counters: ['hub_members'],
    writtenBy: 'joining, leaving and removal of members, hub removal, account hiding and purge',
  },
  {
    table: 'posts',
    counters: ['post_reposts', 'user_posts'],
    writtenBy: 'POST /posts, POST /posts/{postId}/reposts, DELETE /posts/{postId}, post removal by moderation, account hiding and purge',
  },
  {
    table: 'vote_receipts',
    counters: ['user_votes_cast', 'user_votes_received'],
    writtenBy: 'POST /posts/{postId}/vote, the account merge of a phone sign-in, the account purge',
    before: "the posts' votes-received locks are taken first by the triggers _490_lock_posts_* (app_private.lock_receipt_posts)",
  },
];

/** The counting trigger function of a table: app_private.count_<table>. */
export const countingFunction = (table: string) => `count_${table}`;

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** What the rows of one transition table count, as changes of `sign`. */
const changes = (table: string, rows: 'new_rows' | 'old_rows', sign: 1 | -1) =>
  `select (k.counter, k.subject, ${sign})::app_private.counter_change from ${rows} r, app_private.counted_by(r::app.${table}) k`;

/** The counting trigger function of one table and its three statement triggers, with their comments. */
export function countingSql({ table, counters, writtenBy, before }: CountedTable): string {
  const relation = `app.${table}`;
  const fn = countingFunction(table);
  const names = counters.join(' and ');
  const comment = `Keeps the counters of ${relation} (${names}) in step with its rows, in the statement that writes them (${writtenBy}): adds what new rows count and takes away what old rows counted (app_private.counted_by(${relation}))${before ? `; ${before}` : ''}. Written by npm run counting (tools/counting.ts): the function of the statement triggers _500_count_insert, _500_count_update and _500_count_delete on ${relation}.`;
  const triggers = [
    {
      event: 'delete',
      referencing: 'old table as old_rows',
      what: `Takes what the deleted rows counted away from ${names}`,
    },
    {
      event: 'insert',
      referencing: 'new table as new_rows',
      what: `Adds what the inserted rows count to ${names}`,
    },
    {
      event: 'update',
      referencing: 'old table as old_rows new table as new_rows',
      what: `Adds what the new rows count to, and takes what the old rows counted away from, ${names}`,
    },
  ];
  return [
    `-- ${relation}`,
    `create or replace function app_private.${fn}()`,
    '  returns trigger',
    '  language plpgsql security definer',
    '  set search_path = pg_catalog',
    '  as $$',
    'begin',
    "  if tg_op = 'INSERT' then",
    `    perform app_private.add_counts(array(${changes(table, 'new_rows', 1)}));`,
    "  elsif tg_op = 'DELETE' then",
    `    perform app_private.add_counts(array(${changes(table, 'old_rows', -1)}));`,
    '  else',
    `    perform app_private.add_counts(array(${changes(table, 'new_rows', 1)}`,
    '                                         union all',
    `                                         ${changes(table, 'old_rows', -1)}));`,
    '  end if;',
    '  return null;',
    'end',
    '$$;',
    `comment on function app_private.${fn}() is ${quote(comment)};`,
    ...triggers.flatMap(({ event, referencing, what }) => [
      `create trigger _500_count_${event} after ${event} on ${relation} referencing ${referencing} for each statement execute function app_private.${fn}();`,
      `comment on trigger _500_count_${event} on ${relation} is ${quote(`${what} (app_private.${fn}).`)};`,
    ]),
  ].join('\n');
}

/** The whole file. */
export function renderCountingFile(tables: readonly CountedTable[] = countedTables): string {
  const header = [
    '-- GENERATED by `npm run counting` (tools/counting.ts) from its list of counted tables: do not edit;',
    '-- change the template or the list there and run it again (test/sql/counters/counters-generated.test.ts',
    '-- fails while this file is stale).',
    '--',
    '-- The counting triggers: for each counted table, one trigger function, run once per statement by',
    '-- three statement triggers (insert, update, delete), that adds what the new rows count and takes',
    '-- away what the old rows counted (app_private.counted_by, db/sql/counters.sql) in one call of',
    '-- app_private.add_counts. One template, written out per table in static SQL, so each statement',
    '-- keeps its plan in the session.',
  ];
  return `${[header.join('\n'), ...tables.map(countingSql)].join('\n\n')}\n`;
}

if (import.meta.main) {
  writeFileSync(path.join(root, countingFile), renderCountingFile());
  process.stdout.write(`wrote ${countingFile}\n`);
}
