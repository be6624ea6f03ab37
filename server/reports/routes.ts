// /reports: users, posts and hubs. A report notifies nobody
// (spec 4.5 list, part 6; contract section 7). Internal tooling acts on them (contract 14,
// db/sql/reports.sql): one open report per reporter and target, a snapshot of the target kept with it.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';

const tag = 'Reports';

/** The enum app.report_reason. */
export const reportReasons = ['spam', 'harassment', 'hate', 'violence', 'sexual', 'misinformation', 'other'] as const;

const reportBody = z.strictObject({
  reason: z.enum(reportReasons),
  details: z.string().max(1000).optional(),
});
const reportCreated = z
  .object({ reportId: z.string() })
  .describe("While the reporter has an open report on the same target, reporting it again files nothing and answers that report's id.");

export const endpoints = [
  endpoint({
    method: 'post',
    path: '/reports/users/{userId}',
    tag,
    summary: 'Report a user',
    description: 'Any signed-in user (level 1). The target must be a user the reporter can see; reporting yourself is USER_NOT_FOUND.',
    auth: 'bearer',
    limit: 'reports',
    status: 201,
    ids: { userId: 'USER_NOT_FOUND' },
    body: reportBody,
    response: reportCreated,
    async handler({ body, params, tx }) {
      const { rows } = await tx.query<{ id: string }>('select app.report_user($1, $2, $3) as id', [
        params.userId,
        body.reason,
        body.details ?? null,
      ]);
      return { reportId: rows[0]?.id as string };
    },
  }),

  endpoint({
    method: 'post',
    path: '/reports/hubs/{hubId}',
    tag,
    summary: 'Report a hub',
    auth: 'bearer',
    limit: 'reports',
    status: 201,
    ids: { hubId: 'HUB_NOT_FOUND' },
    body: reportBody,
    response: reportCreated,
    async handler({ body, params, tx }) {
      const { rows } = await tx.query<{ id: string }>('select app.report_hub($1, $2, $3) as id', [
        params.hubId,
        body.reason,
        body.details ?? null,
      ]);
      return { reportId: rows[0]?.id as string };
    },
  }),

  endpoint({
    method: 'post',
    path: '/reports/posts/{postId}',
    tag,
    summary: 'Report a post',
    auth: 'bearer',
    limit: 'reports',
    status: 201,
    ids: { postId: 'POST_NOT_FOUND' },
    body: reportBody,
    response: reportCreated,
    async handler({ body, params, tx }) {
      const { rows } = await tx.query<{ id: string }>('select app.report_post($1, $2, $3) as id', [
        params.postId,
        body.reason,
        body.details ?? null,
      ]);
      return { reportId: rows[0]?.id as string };
    },
  }),
];
