// The list reads of docs/performance.md on data where one key holds every row of its column (the
// scale benchmark's hot shape, test/bench/scale-data.ts, at 2,000 rows): one author wrote every
// comment and every discussion message, the star has every follow but a page, every user's name has
// the word "follower". Each read runs as a request runs it, with the planner free (no `enable_*`
// setting), after `analyze`, and must read about a page, never the collection. The planner's
// estimate is what these catch: a block test priced from a column with one value expected no row to
// pass, and the planner read and sorted every comment of the post (docs/performance.md, "Hot
// values"). The lists with q (a scan of up to 1,000 rows by design) and the saved discussions (one
// saver's rows, which a sequential scan reads as cheaply at this size) are in read-plans.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commentPageSql } from '../../server/comments/routes.ts';
import { messagePageSql } from '../../server/discussions/routes.ts';
import { hubSearchSql, peopleSearchSql } from '../../server/search/routes.ts';
import { followPageSql } from '../../server/users/follows.ts';
import { benchId, generate, hotNameWord, space, subject as s } from '../bench/scale-data.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { describePlan, explain, nodes, rowsRead, rowsReadInTransaction, type PlanNode } from '../helpers/plans.ts';
import { asViewer } from '../helpers/sql.ts';

const n = 2_000;
const page = 20;
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  const client = await app.owner.connect();
  try {
    await generate(client, { name: 'plans-hot', shape: 'hot', n, users: 2 * n + 100, votes: n }, () => {});
  } finally {
    client.release();
  }
}, 120_000);
afterAll(() => app.close());

const user = (number: number) => benchId(space.user, number);
const viewer = user(s.viewer);
const post = benchId(space.post, s.commentedPost);
const replied = benchId(space.post, s.repliedPost);
const root = benchId(space.comment, s.rootComment);
const star = user(s.star);
const discussion = benchId(space.discussion, s.hubPosts + n);
const firstMessage = benchId(space.message, 1);

function planAs(userId: string | null, sql: string, params: unknown[]): Promise<PlanNode> {
  return asViewer(app, userId ? 'app_user' : 'app_anonymous', userId, (client) => explain(client, sql, params));
}

/** A list read: who runs it, its SQL and parameters, the table it pages and how many rows of it a page may read. */
interface Read {
  name: string;
  viewer: string | null;
  sql: string;
  params: unknown[];
  table: string;
  bound: number;
  rows?: number;
}

const reads: Read[] = [
  { name: 'comments page 1', viewer, sql: commentPageSql(false), params: [post, null, null, page + 1], table: 'comments', bound: page + 1, rows: page + 1 },
  { name: 'replies page 1', viewer, sql: commentPageSql(true), params: [replied, root, null, null, page + 1], table: 'comments', bound: page + 1, rows: page + 1 },
  { name: 'followers page 1', viewer, sql: followPageSql('follower_id', false), params: [star, null, page + 1], table: 'follows', bound: page + 1, rows: page + 1 },
  { name: 'messages page 1', viewer, sql: messagePageSql(false), params: [discussion, null, null, page + 1], table: 'hub_discussion_messages', bound: page + 1, rows: page + 1 },
  { name: 'thread replies page 1', viewer, sql: messagePageSql(true), params: [firstMessage, null, null, page + 1], table: 'hub_discussion_messages', bound: page + 1, rows: page + 1 },
  { name: `people search q=${hotNameWord} (every name)`, viewer: null, sql: peopleSearchSql, params: [hotNameWord, -1, '', null, page + 1], table: 'user_name_words', bound: 2 * (page + 1), rows: page + 1 },
  { name: 'people search q=anna', viewer: null, sql: peopleSearchSql, params: ['anna', -1, '', null, page + 1], table: 'user_name_words', bound: 2 * (page + 1), rows: page + 1 },
  { name: 'hub search q=garden', viewer, sql: hubSearchSql, params: ['garden', null, null, page + 1], table: 'hub_name_words', bound: 2 * (page + 1), rows: page + 1 },
];

/** Every read of the list, checked on its plan: about a page of its table, and no sort of what it read whole. */
async function checkReads() {
  const failures: string[] = [];
  for (const read of reads) {
    const plan = await planAs(read.viewer, read.sql, read.params);
    if (read.rows !== undefined && plan['Actual Rows'] !== read.rows) failures.push(`${read.name}: ${plan['Actual Rows']} rows`);
    // About a page of the table, and no node of the plan handled the collection (a scan, a join
    // or a sort of thousands of rows).
    const widest = Math.max(...nodes(plan).map((node) => node['Actual Rows'] * node['Actual Loops']));
    if (rowsRead(plan, read.table) > read.bound || widest > Math.max(read.bound, 200)) failures.push(`${read.name}: ${describePlan(plan)}`);
  }
  expect(failures).toEqual([]);
}

const hotTables = ['app.comments', 'app.follows', 'app.hub_discussion_messages', 'app.users', 'app.user_name_words'];

describe('list reads on hot values, the planner free', () => {
  it('the data set is hot: one value holds every row of the columns the reads test', async () => {
    await app.owner.query(`analyze ${hotTables.join(', ')}`);
    const { rows } = await app.owner.query<{ attname: string; tablename: string; top: number }>(
      `select tablename, attname, (most_common_freqs::text::real[])[1] as top from pg_stats where schemaname = 'app'
        and (tablename, attname) in (('comments', 'author_id'), ('follows', 'followee_id'), ('hub_discussion_messages', 'author_id'))`,
    );
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row.top, `${row.tablename}.${row.attname}`).toBeGreaterThan(0.98);
  });

  it('read about a page with fresh statistics (after analyze)', async () => {
    await app.owner.query(`analyze ${hotTables.join(', ')}`);
    await checkReads();
  });

  it('members of a hub: one page of memberships, whatever the statistics', async () => {
    // app.hub_member_page plans its statement per call (docs/performance.md); the hub holds every membership but the joiner's.
    const hub = benchId(space.hub, s.hub);
    const read = await asViewer(app, 'app_user', viewer, async (client) => {
      const before = await rowsReadInTransaction(client, 'app.hub_memberships');
      const { rows } = await client.query(`select user_id from app.hub_member_page($1, null, null, null, $2)`, [hub, page + 1]);
      expect(rows).toHaveLength(page + 1);
      return (await rowsReadInTransaction(client, 'app.hub_memberships')) - before;
    });
    expect(read).toBeLessThanOrEqual(page + 10);
  });
});
