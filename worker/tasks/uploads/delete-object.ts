// Deletes one stored object nothing refers to any more (an image's upload once its variants are
// recorded, or once it was refused), queued by the transaction that stopped using it
// (app_private.queue_object_deletion, db/sql/uploads.sql). Deleting a missing object succeeds, so
// a job that runs again changes nothing.
import type { Task } from 'graphile-worker';
import type { ObjectStore } from '../../object-store.ts';

export function deleteObject(storage: ObjectStore): Task {
  return async (payload) => {
    const { key } = payload as { key: string };
    await storage.delete(key);
  };
}
