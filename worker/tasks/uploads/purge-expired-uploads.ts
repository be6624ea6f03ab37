// Removes upload intents that expired without completion, with any object the client did PUT.
import type { Task } from 'graphile-worker';
import type { ObjectStore } from '../../object-store.ts';

const batch = 500;

export function purgeExpiredUploads(storage: ObjectStore): Task {
  return async (_payload, { withPgClient }) => {
    for (;;) {
      const { rows } = await withPgClient((client) =>
        client.query<{ id: string; object_key: string }>('select id, object_key from app_private.expired_upload_intents($1)', [batch]),
      );
      if (rows.length === 0) return;
      for (const row of rows) await storage.delete(row.object_key);
      await withPgClient((client) => client.query('select app_private.forget_upload_intents($1)', [rows.map((r) => r.id)]));
      if (rows.length < batch) return;
    }
  };
}
