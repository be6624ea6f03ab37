// Hourly housekeeping of push delivery (schedule in index.ts): old deliveries and badge
// changes, pending deliveries past their age, devices of ended sessions (db/sql/push.sql).
import type { Task } from 'graphile-worker';

export const purgePush: Task = async (_payload, { withPgClient }) => {
  await withPgClient((client) => client.query('select app_private.purge_push()'));
};
