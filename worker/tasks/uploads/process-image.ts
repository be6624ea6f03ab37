// Processes one uploaded image (queued by app.complete_upload, or by the backfill for images from
// before processing existed; db/sql/uploads.sql): its decoder process (images/) turns the
// upload into upright, metadata-free variants, which are written under keys of the asset's own
// that never change (images/<assetId>.jpg, images/<assetId>/<w>x<h>.webp), then recorded; the upload is deleted by the job the record queues. An image
// the decoder refuses fails with its code. Idempotent: a job that runs again finds the asset done
// (app_private.image_to_process answers nothing) or rewrites the same variant keys before recording.
import type { Task } from 'graphile-worker';
import { ImageRefusal, type ImageProcessor, type ImageVariant } from './images/processor.ts';
import type { ObjectStore } from '../../object-store.ts';

/** The variant lists and cards show: the largest WebP within this many pixels on its longest side. */
const displaySide = { post_image: 1280, profile_photo: 256, hub_photo: 256 } as const;

interface StoredVariant {
  width: number;
  height: number;
  contentType: ImageVariant['contentType'];
  key: string;
}

/** The largest WebP within `side` (the smallest one when none is). */
export function displayVariant(variants: StoredVariant[], side: number): StoredVariant {
  const webp = variants.filter((variant) => variant.contentType === 'image/webp');
  const within = webp.filter((variant) => Math.max(variant.width, variant.height) <= side);
  return within.at(-1) ?? (webp[0] as StoredVariant);
}

export function processImage(storage: ObjectStore, images: ImageProcessor): Task {
  return async (payload, { withPgClient, job }) => {
    const { assetId } = payload as { assetId: string };
    const { rows } = await withPgClient((client) =>
      client.query<{ upload_key: string; jpeg_key: string; content_type: string; purpose: keyof typeof displaySide }>(
        'select upload_key, jpeg_key, content_type, purpose from app_private.image_to_process($1)',
        [assetId],
      ),
    );
    const upload = rows[0];
    if (!upload) return;
    const fail = (code: ImageRefusal['code']) =>
      withPgClient((client) => client.query('select app_private.fail_image($1, $2)', [assetId, code]));
    const bytes = await storage.get(upload.upload_key);
    if (bytes === null) {
      await fail('IMAGE_UNREADABLE');
      return;
    }
    let image;
    try {
      image = await images.process(bytes, upload.content_type, upload.purpose === 'post_image' ? 'fit' : 'square');
    } catch (error) {
      // The machine's fault (a decoder that could not start, or starved): tried again, and on the
      // last attempt the image is failed, so no asset stays processing for ever.
      if (!(error instanceof ImageRefusal)) {
        if (job.attempts >= job.max_attempts) await fail('IMAGE_UNREADABLE');
        throw error;
      }
      await fail(error.code);
      return;
    }
    const variants: StoredVariant[] = [];
    for (const variant of image.variants) {
      // The JPEG (one per image) where object_key already names it; each WebP under its size.
      const key = variant.contentType === 'image/jpeg' ? upload.jpeg_key : `images/${assetId}/${variant.width}x${variant.height}.webp`;
      await storage.putImmutable(key, variant.bytes, variant.contentType);
      variants.push({ width: variant.width, height: variant.height, contentType: variant.contentType, key });
    }
    const jpeg = variants.find((variant) => variant.contentType === 'image/jpeg') as StoredVariant;
    const display = displayVariant(variants, displaySide[upload.purpose]);
    await withPgClient((client) =>
      client.query('select app_private.finish_image($1, $2, $3, $4, $5, $6, $7)', [
        assetId,
        image.width,
        image.height,
        image.placeholder,
        JSON.stringify(variants),
        display.key,
        jpeg.key,
      ]),
    );
  };
}

/** Queues a batch of images from before processing existed (cron: the batch per run is the rate). */
export function processImageBackfill(batch: number): Task {
  return async (_payload, { withPgClient }) => {
    await withPgClient((client) => client.query('select app_private.queue_image_backfill($1)', [batch]));
  };
}
