// Hourly sweep of kept answers past their 24 hours (Idempotency-Key, server/http/idempotency.ts;
// schedule in index.ts): batches of a bounded size, each its own transaction, until one
// comes back short.
import type { Task } from 'graphile-worker';

const batch = 5000;

export const purgeIdempotentAnswers: Task = async (_payload, { withPgClient }) => {
  await withPgClient(async (client) => {
    for (;;) {
      const { rows } = await client.query<{ deleted: number }>('select app_private.purge_idempotent_answers($1) as deleted', [batch]);
      if ((rows[0]?.deleted ?? 0) < batch) return;
    }
  });
};
