// Writes the JSON archive of a data export to the object store (contract 13; queued by
// app.start_data_export, job_key export_account:<exportId>, db/sql/accounts.sql). Idempotent: the
// archive is read only while the export is pending, written under a key of its own (a retry
// overwrites the same object), and the export marked ready once. On its last attempt a failure
// marks the export failed, so the user may ask again.
import type { Task } from 'graphile-worker';
import type { ObjectStore } from '../../object-store.ts';

export function exportAccount(storage: ObjectStore): Task {
  return async (payload, { withPgClient, job }) => {
    const { exportId } = payload as { exportId: string };
    try {
      const { rows } = await withPgClient((client) =>
        client.query<{ user_id: string; archive: unknown }>('select user_id, archive from app_private.data_export_archive($1)', [exportId]),
      );
      const row = rows[0];
      if (!row) return;
      const key = `exports/${row.user_id}/${exportId}.json`;
      await storage.put(key, JSON.stringify(row.archive, null, 2), 'application/json');
      await withPgClient((client) => client.query('select app_private.finish_data_export($1, $2)', [exportId, key]));
    } catch (error) {
      if (job.attempts >= job.max_attempts) {
        await withPgClient((client) => client.query('select app_private.finish_data_export($1, null)', [exportId]));
      }
      throw error;
    }
  };
}
