// Every 15 minutes, the read floors of sessions untouched for an hour go (db/replicas.ts; schedule in
// index.ts): batches of a bounded size, each its own transaction, until one comes back short.
import type { Task } from 'graphile-worker';

const batch = 5000;

export const sweepSessionReadFloors: Task = async (_payload, { withPgClient }) => {
  await withPgClient(async (client) => {
    for (;;) {
      const { rows } = await client.query<{ deleted: number }>('select app_private.sweep_session_read_floors($1) as deleted', [batch]);
      if ((rows[0]?.deleted ?? 0) < batch) return;
    }
  });
};
