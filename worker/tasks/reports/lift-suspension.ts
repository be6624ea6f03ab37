// Ends a suspension for a time when its term is over (queued by app.suspend_user, one job per user:
// job_key lift_suspension:<userId>, db/sql/reports.sql). Run early, or for a suspension changed or
// lifted since, it does nothing.
import type { Task } from 'graphile-worker';

export const liftSuspension: Task = async (payload, { withPgClient }) => {
  const { userId } = payload as { userId: string };
  await withPgClient((client) => client.query('select app_private.lift_suspension($1)', [userId]));
};
