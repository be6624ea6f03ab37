// Account deletion (contract 13): POST /users/me/deletion. The rules (what disappears at once, how
// signing in again within 30 days restores the account, the purge job) live in db/sql/accounts.sql and
// the worker's purge_account task; this module shapes.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';

export const deletionEndpoints = [
  endpoint({
    method: 'post',
    path: '/users/me/deletion',
    tag: 'Users',
    summary: 'Delete my account',
    description:
      'Answers 202: the account is deleted at scheduledFor (30 days from now). At once, every session of the account ends ' +
      '(this access token stops working, push devices are removed), and the profile, posts, reposts, comments, follows, ' +
      'hub memberships and shares disappear from everyone else (the profile answers 404 USER_NOT_FOUND); the handle is ' +
      'free for anyone. Discussion messages stay, shown as from an anonymous former member. Signing in again with the ' +
      'same phone number or identity-provider account before scheduledFor cancels the deletion and restores everything; ' +
      'the session payload then says user.restored: true (if someone took the handle meanwhile, the account has none and ' +
      'must choose one through profile basics). An anonymous account is deleted the same way; a new anonymous session on ' +
      'the same device starts a new account. After scheduledFor the account and its content are purged for good ' +
      '(docs/accounts.md lists what stays).',
    auth: 'bearer',
    limit: 'other_writes',
    status: 202,
    message: 'Accepted',
    response: z.object({
      scheduledFor: z.iso.datetime().describe('When the account is purged (ISO-8601 UTC), 30 days after the request.'),
    }),
    async handler({ tx }) {
      const { rows } = await tx.query<{ scheduled_for: Date }>('select scheduled_for from app.request_account_deletion()');
      return { scheduledFor: (rows[0] as { scheduled_for: Date }).scheduled_for.toISOString() };
    },
  }),
];
