// Purges an account 30 days after its deletion was requested (contract 13; queued by
// app.request_account_deletion with job_key purge_account:<userId>, run_at = the scheduled time).
// The steps are SQL functions of db/sql/accounts.sql, each its own transaction and idempotent, run in
// order; the stored objects of the user's uploads are deleted from the object store between
// listing them and deleting their rows. A crash, a retry or a second job resumes where the last run
// stopped; an account restored before the purge began is left alone.
import type { Task } from 'graphile-worker';
import type { ObjectStore } from '../../object-store.ts';

export function purgeAccount(storage: ObjectStore): Task {
  return async (payload, { withPgClient }) => {
    const { userId } = payload as { userId: string };
    const step = async (fn: string) => {
      const { rows } = await withPgClient((client) =>
        client.query<{ result: unknown }>(`select app_private.${fn}($1) as result`, [userId]),
      );
      return rows[0]?.result;
    };
    if (!(await step('purge_account_begin'))) return;
    await step('purge_account_content');
    const { rows } = await withPgClient((client) =>
      client.query<{ object_key: string }>('select object_key from app_private.purge_account_object_keys($1)', [userId]),
    );
    for (const { object_key: key } of rows) await storage.delete(key);
    await step('purge_account_uploads');
    await step('purge_account_finish');
  };
}
