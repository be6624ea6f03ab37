// Deletes a replaced image: its objects first (the upload or its variants), then the asset row,
// each only while nothing uses the asset any more (queued by the replacement's transaction,
// db/sql/uploads.sql).
import type { Task } from 'graphile-worker';
import type { ObjectStore } from '../../object-store.ts';

export function deleteAsset(storage: ObjectStore): Task {
  return async (payload, { withPgClient }) => {
    const { assetId } = payload as { assetId: string };
    const { rows } = await withPgClient((client) =>
      client.query<{ key: string }>('select key from app_private.unused_asset_keys($1) key', [assetId]),
    );
    if (rows.length === 0) return;
    for (const { key } of rows) await storage.delete(key);
    await withPgClient((client) => client.query('select app_private.forget_asset($1)', [assetId]));
  };
}
