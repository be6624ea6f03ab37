// The uploads feature's work in the worker: processing uploaded images in decoder processes of the
// worker's own (images/), with the backfill of images from before processing existed, and deleting
// the stored objects nothing refers to any more (replaced images, processed uploads, expired intents).
import { workerFeature } from '../../feature.ts';
import { deleteAsset } from './delete-asset.ts';
import { deleteObject } from './delete-object.ts';
import { processImage, processImageBackfill } from './process-image.ts';
import { purgeExpiredUploads } from './purge-expired-uploads.ts';

export const uploads = workerFeature({
  tasks: {
    process_image: ({ storage, images }) => processImage(storage, images.processor),
    process_image_backfill: ({ images }) => processImageBackfill(images.backfillPerMinute),
    delete_asset: ({ storage }) => deleteAsset(storage),
    delete_object: ({ storage }) => deleteObject(storage),
    purge_expired_uploads: ({ storage }) => purgeExpiredUploads(storage),
  },
  schedules: {
    purge_expired_uploads: '*/15 * * * *',
    process_image_backfill: '* * * * *',
  },
});
