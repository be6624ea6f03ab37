// Reads whose cost must not grow with the collections behind them (docs/performance.md), checked
// on their plans: each runs as a request runs it (the viewer's role and id, the request's
// parameters) over the scale benchmark's data set at a small size (test/bench/scale-data.ts:
// 2,000 rows behind every hot dimension), and must read about a page of rows, never the
// collection. A plan that starts scanning the collection again reads thousands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commentPageSql } from '../../server/comments/routes.ts';
import { benchId, generate, space, subject as s } from '../bench/scale-data.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { buffers, describePlan, explain, rowsRead, type PlanNode } from '../helpers/plans.ts';
import { asViewer } from '../helpers/sql.ts';

const n = 2_000;
const page = 20;
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  const client = await app.owner.connect();
  try {
    await generate(client, { name: 'plans', n, users: 2 * n + 100, votes: n }, () => {});
  } finally {
    client.release();
  }
}, 120_000);
afterAll(() => app.close());

const user = (number: number) => benchId(space.user, number);
const viewer = user(s.viewer);

/** The plan of `sql` run by `userId` (app_user), or by a guest when userId is null. */
function planAs(userId: string | null, sql: string, params: unknown[]): Promise<PlanNode> {
  return asViewer(app, userId ? 'app_user' : 'app_anonymous', userId, (client) => explain(client, sql, params));
}

/** A plan reads at most `limit` rows of `relation`. */
function expectReads(plan: PlanNode, relation: string, limit: number) {
  expect(rowsRead(plan, relation), describePlan(plan)).toBeLessThanOrEqual(limit);
}

describe('GET /posts/{postId}/comments', () => {
  const post = benchId(space.post, s.commentedPost);
  const replied = benchId(space.post, s.repliedPost);
  const root = benchId(space.comment, s.rootComment);

  it('reads one page of top-level comments, first page and later', async () => {
    const first = await planAs(viewer, commentPageSql(false), [post, null, null, page + 1]);
    expect(first['Actual Rows']).toBe(page + 1);
    expectReads(first, 'comments', page + 1);
    const middle = await app.owner.query(`select (extract(epoch from created_at) * 1000000)::bigint as us, id from app.comments
                                         where post_id = $1 order by created_at, id offset ${n / 2} limit 1`, [post]);
    const later = await planAs(viewer, commentPageSql(false), [post, middle.rows[0].us, middle.rows[0].id, page + 1]);
    expect(later['Actual Rows']).toBe(page + 1);
    expectReads(later, 'comments', page + 1);
  });

  it("reads one page of a comment's replies", async () => {
    const plan = await planAs(viewer, commentPageSql(true), [replied, root, null, null, page + 1]);
    expect(plan['Actual Rows']).toBe(page + 1);
    expectReads(plan, 'comments', page + 1);
  });

  it('counts comments and replies without reading them', async () => {
    const many = await planAs(viewer, 'select app.post_comment_count($1), app.comment_reply_count($2)', [post, root]);
    const few = await planAs(viewer, 'select app.post_comment_count($1), app.comment_reply_count($2)', [benchId(space.post, s.sharedPost), benchId(space.comment, s.comments + 1)]);
    expect(buffers(many) - buffers(few)).toBeLessThanOrEqual(4);
  });
});
