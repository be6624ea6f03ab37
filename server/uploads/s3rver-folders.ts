// The embedded S3 store (s3rver, a development dependency) keeps each object as files in folders
// named after its key's prefixes, and deleting an object removes the folders it leaves empty. A
// PUT under the same prefix at that moment has made its folder and then finds it gone: its write
// stream fails with ENOENT and, having no error handler, ends the whole process (the service in
// `npm start`, the test runner). S3 has no folders, so nothing is lost by leaving empty ones: every
// process that starts an s3rver passes it through here first.
import { unlink } from 'node:fs/promises';
import type S3rver from 's3rver';

/** The files s3rver keeps for one object. */
const objectFiles = ['object', 'object.md5', 'metadata.json'];

/** `store` with deletes that leave emptied folders in place (see above). */
export function keepFolders(store: S3rver): S3rver {
  const files = store.store;
  files.deleteObject = async (bucket, key) => {
    await Promise.all(
      objectFiles.map((kind) =>
        unlink(files.getResourcePath(bucket, key, kind)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        }),
      ),
    );
  };
  return store;
}
