// Deletes a replaced image: the object first, then the asset row, each only while nothing uses
// the asset any more (queued by the replacement's transaction, db/sql/uploads.sql).
import type { Task } from 'graphile-worker';
import type { ObjectStore } from '../object-store.ts';

export function deleteAsset(storage: ObjectStore): Task {
  return async (payload, { withPgClient }) => {
    const { assetId } = payload as { assetId: string };
    const { rows } = await withPgClient((client) => client.query<{ key: string | null }>('select app_private.unused_asset_key($1) as key', [assetId]));
    const key = rows[0]?.key;
    if (!key) return;
    await storage.delete(key);
    await withPgClient((client) => client.query('select app_private.forget_asset($1)', [assetId]));
  };
}
