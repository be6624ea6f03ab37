// Hourly housekeeping of expired sign-in secrets (schedule in index.ts).
import type { Task } from 'graphile-worker';

export const purgeExpiredAuth: Task = async (_payload, { withPgClient }) => {
  await withPgClient((client) => client.query('select app_private.purge_expired_auth()'));
};
