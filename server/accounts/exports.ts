// Data export (contract 13): POST /users/me/exports and GET /users/me/exports/{exportId}. The
// archive (what it holds, never a vote position) and the 24-hour rule live in db/sql/accounts.sql
// (app.start_data_export, app.data_export); the worker task export_account writes it; this module
// shapes and signs the 15-minute URL.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { text, textMax } from '../http/text.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Users';
/** How long the archive's signed URL works. */
const exportUrlSeconds = 15 * 60;

const exportStatus = z.enum(['pending', 'ready', 'failed']);

export const exportEndpoints = [
  endpoint({
    method: 'post',
    path: '/users/me/exports',
    tag,
    summary: 'Ask for a copy of my data',
    description:
      'Answers 202: a JSON archive of the account is prepared in the background (usually within seconds); poll ' +
      'GET /users/me/exports/{exportId} until it is ready. The archive holds the profile (with the phone number), hub ' +
      'profile, posts, comments, discussion messages, follows both ways, blocks, saved posts and discussions, hub ' +
      'memberships, notification settings, push devices without their tokens, and the posts voted on with the time of ' +
      'each vote, never the position. One export per 24 hours: another answers 429 RATE_LIMITED with retryAfterSeconds.',
    auth: 'bearer',
    level: levels.profile,
    limit: 'other_writes',
    status: 202,
    message: 'Accepted',
    rateLimits: ['data_exports'],
    errors: ['RATE_LIMITED'],
    response: z.object({ exportId: z.string(), status: z.literal('pending') }),
    async handler({ tx }) {
      // The limit's columns give the RateLimit headers (server/http/rate-limit-headers.ts).
      const { rows } = await tx.query<{ export_id: string; status: 'pending' }>('select * from app.start_data_export()');
      const row = rows[0] as { export_id: string; status: 'pending' };
      return { exportId: row.export_id, status: row.status };
    },
  }),

  endpoint({
    method: 'get',
    path: '/users/me/exports/{exportId}',
    tag,
    summary: 'The state of a data export, and its download URL once ready',
    description:
      `url is a signed download URL valid for ${exportUrlSeconds / 60} minutes (expiresAt); asking again gives a fresh one. ` +
      "An unknown id or another user's export answers 404 EXPORT_NOT_FOUND.",
    auth: 'bearer',
    ids: { exportId: 'EXPORT_NOT_FOUND' },
    response: z.object({
      exportId: z.string(),
      status: exportStatus,
      url: text(textMax.url).optional().describe('Present when status is ready.'),
      expiresAt: z.string().optional().describe('When url stops working (ISO-8601 UTC); present with url.'),
    }),
    async handler({ params, tx, services: { storage } }) {
      const { rows } = await tx.query<{ id: string; status: z.infer<typeof exportStatus>; object_key: string | null }>(
        'select id, status, object_key from app.data_export($1)',
        [params.exportId],
      );
      const row = rows[0];
      if (!row) throw new ApiError('EXPORT_NOT_FOUND');
      if (row.status !== 'ready' || row.object_key === null) return { exportId: row.id, status: row.status };
      const expiresAt = new Date(Date.now() + exportUrlSeconds * 1000).toISOString();
      return { exportId: row.id, status: row.status, url: await storage.presignGet(row.object_key, exportUrlSeconds), expiresAt };
    },
  }),
];
