// /uploads: presign, complete, download URL (spec 4.3; contract section 6). The binary never
// passes through the API: the client PUTs it to the signed URL.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { hasDeclaredType } from './content.ts';
import { text, textMax } from '../http/text.ts';
import type { Services } from '../http/endpoint.ts';
import { RequestTransaction } from '../../db/request-transaction.ts';
import type { Viewer } from '../../db/viewer.ts';
import { assetNotReady, imageColumnsSql, mediaLayout, shapeImage, type ImageColumns } from './images.ts';
import type { Storage } from './storage.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Uploads';
const mib = 1024 * 1024;
const intentSeconds = 15 * 60;
const downloadSeconds = 5 * 60;

const purposes = ['profile_photo', 'hub_photo', 'post_image', 'document'] as const;
const imageTypes = ['image/jpeg', 'image/png', 'image/webp', 'image/heic'] as const;

/** What each purpose accepts: content types and the largest size. */
export const uploadRules: Record<(typeof purposes)[number], { contentTypes: readonly string[]; maxBytes: number }> = {
  profile_photo: { contentTypes: imageTypes, maxBytes: 10 * mib },
  hub_photo: { contentTypes: imageTypes, maxBytes: 10 * mib },
  post_image: { contentTypes: imageTypes, maxBytes: 10 * mib },
  document: { contentTypes: ['application/pdf'], maxBytes: 25 * mib },
};

const purpose = z.enum(purposes);
/** The largest size of any purpose: the bound of contentLength before the purpose's own. */
const largestUpload = Math.max(...Object.values(uploadRules).map((rule) => rule.maxBytes));

const imageErrors = ['IMAGE_UNREADABLE', 'IMAGE_TOO_LARGE'] as const;
/** The processing states of an asset (app.asset_status). */
export const assetStatuses = ['processing', 'ready', 'failed'] as const;

const asset = z
  .object({
    assetId: z.string(),
    purpose,
    contentType: text(textMax.contentType).describe('The type uploaded (served images are the variants, WebP and JPEG)'),
    size: z.number().int(),
    checksum: text(64),
    status: z
      .enum(assetStatuses)
      .describe(
        'Images are processed once after upload: processing until their variants exist (poll GET /uploads/{assetId}), then ready; ' +
          'failed when the image was refused (error). Documents are ready at once.',
      ),
    ...mediaLayout,
    error: z
      .object({ code: z.enum(imageErrors) })
      .optional()
      .describe('Only when failed: why the image was refused'),
  })
  .meta({ id: 'Asset' });

/** An asset as GET /uploads/{assetId} and POST /uploads/complete answer it (the policy decides who sees it). */
const assetSql = `select a.id, a.purpose, a.content_type, a.size, a.checksum, a.status, a.error_code, ${imageColumnsSql('a')} as image
  from app.assets a where a.id = $1`;

interface AssetRow {
  id: string;
  purpose: (typeof purposes)[number];
  content_type: string;
  size: number;
  checksum: string;
  status: (typeof assetStatuses)[number];
  error_code: (typeof imageErrors)[number] | null;
  image: ImageColumns | null;
}

async function shapeAsset(storage: Storage, row: AssetRow): Promise<z.input<typeof asset>> {
  return {
    assetId: row.id,
    purpose: row.purpose,
    contentType: row.content_type,
    size: Number(row.size),
    checksum: row.checksum,
    status: row.status,
    ...(await shapeImage(storage, row.image)),
    ...(row.status === 'failed' && row.error_code ? { error: { code: row.error_code } } : {}),
  };
}

/** How long POST /uploads/complete waits for an image's processing before answering `processing`. */
export const completeWaitMs = 15_000;
/** A waiting request reads the asset again at least this often (an announcement may be lost). */
const rereadMs = 1000;

/**
 * After complete committed: waits for the image's processing (woken by its announcement), reading
 * the asset as the viewer, at most completeWaitMs. A refused image answers its 422 code.
 */
async function awaitProcessing(services: Services, viewer: Viewer, assetId: string): Promise<z.input<typeof asset>> {
  const deadline = performance.now() + completeWaitMs;
  for (;;) {
    const tx = new RequestTransaction(services.pools.api, viewer, services.config.apiTimeouts);
    const { rows } = await tx.queryAndCommit<AssetRow>(assetSql, [assetId]);
    const row = rows[0] as AssetRow;
    if (row.status === 'failed') throw new ApiError(row.error_code ?? 'IMAGE_UNREADABLE');
    const left = deadline - performance.now();
    if (row.status === 'ready' || left <= 0) return shapeAsset(services.storage, row);
    await services.processedAssets.wait(assetId, Math.min(left, rereadMs));
  }
}

export const endpoints = [
  endpoint({
    method: 'post',
    path: '/uploads/presign',
    tag,
    summary: 'Start an upload: a signed PUT URL bound to the content type and length',
    description:
      'Images (image/jpeg, image/png, image/webp, image/heic) up to 10 MiB for profile_photo, hub_photo and post_image ' +
      '(image/heic only where the server decodes HEIC: elsewhere it is 422 on contentType); ' +
      'application/pdf up to 25 MiB for document. PUT the bytes to uploadUrl with the returned headers within 15 minutes, ' +
      'then call /uploads/complete. Needs profile basics (level 2).',
    auth: 'bearer',
    limit: 'uploads',
    level: levels.profile,
    body: z
      .strictObject({
        purpose,
        contentType: z.string().max(textMax.contentType),
        contentLength: z.number().int().min(1).max(largestUpload),
      })
      .superRefine((value, ctx) => {
        const rule = uploadRules[value.purpose];
        if (!rule.contentTypes.includes(value.contentType)) {
          ctx.addIssue({ code: 'custom', path: ['contentType'], message: `One of ${rule.contentTypes.join(', ')}` });
        }
        if (value.contentLength > rule.maxBytes) {
          ctx.addIssue({ code: 'custom', path: ['contentLength'], message: `At most ${rule.maxBytes} bytes` });
        }
      })
      // The same rules in JSON Schema, for the OpenAPI document: the types and size of each purpose.
      .meta({
        allOf: purposes.map((name) => ({
          if: { properties: { purpose: { const: name } } },
          then: {
            properties: {
              contentType: { enum: [...uploadRules[name].contentTypes] },
              contentLength: { maximum: uploadRules[name].maxBytes },
            },
          },
        })),
      }),
    response: z.object({
      uploadId: z.string(),
      uploadUrl: text(textMax.url),
      method: z.literal('PUT'),
      headers: z.object({ 'content-type': text(textMax.contentType) }),
      expiresAt: z.string(),
    }),
    async handler({ body, tx, services: { storage, images } }) {
      if (body.contentType === 'image/heic' && !images.heic) {
        throw new ApiError('VALIDATION_FAILED', {
          fields: { contentType: 'HEIC is not accepted by this server: upload JPEG, PNG or WebP' },
        });
      }
      const { rows } = await tx.query<{ upload_id: string; object_key: string; expires_at: Date }>(
        'select upload_id, object_key, expires_at from app.create_upload_intent($1, $2, $3)',
        [body.purpose, body.contentType, body.contentLength],
      );
      const intent = rows[0] as { upload_id: string; object_key: string; expires_at: Date };
      return {
        uploadId: intent.upload_id,
        uploadUrl: await storage.presignPut(intent.object_key, body.contentType, body.contentLength, intentSeconds),
        method: 'PUT' as const,
        headers: { 'content-type': body.contentType },
        expiresAt: intent.expires_at.toISOString(),
      };
    },
  }),

  endpoint({
    method: 'post',
    path: '/uploads/complete',
    tag,
    summary: 'Finish an upload: verify the object and return a reusable asset',
    description:
      "Checks that the upload is the caller's, not older than 15 minutes, of the same purpose, not yet completed, that " +
      'the object exists with the declared size (a different size is UPLOAD_CHECKSUM_MISMATCH), that its SHA-256 equals checksum, ' +
      'and that its first bytes are a file of the declared type (JPEG, PNG, WebP, HEIC or PDF signature): otherwise ' +
      'UPLOAD_CONTENT_MISMATCH, and the object is deleted (PUT the right bytes to the same URL while it lasts, or presign again). ' +
      'An image is then processed once (upright, no metadata, variants: docs/photos.md); this answer waits for it, at most 15 s, ' +
      'and then answers status processing (poll GET /uploads/{assetId}). An image that cannot be decoded is 422 IMAGE_UNREADABLE, ' +
      'one over 50 megapixels or 12,000 px on a side 422 IMAGE_TOO_LARGE: its object is deleted and the upload is spent.',
    auth: 'bearer',
    limit: 'uploads',
    level: levels.profile,
    // The session check travels with the intent's read, and again with the completion: the store is
    // read between the two with no connection or lock held (a burst of one user's uploads would
    // otherwise queue on the user's write-limit row for as long as each object is hashed).
    sessionCheckWithFirstStatement: true,
    status: 201,
    body: z.strictObject({
      uploadId: z.string().max(64),
      purpose,
      checksum: z
        .string()
        .max(64)
        .regex(/^[0-9a-fA-F]{64}$/, '64 hexadecimal characters'),
    }),
    response: asset,
    errors: [
      'UPLOAD_NOT_FOUND',
      'UPLOAD_EXPIRED',
      'UPLOAD_OBJECT_MISSING',
      'UPLOAD_CHECKSUM_MISMATCH',
      'UPLOAD_ALREADY_COMPLETED',
      'UPLOAD_PURPOSE_MISMATCH',
      'UPLOAD_CONTENT_MISMATCH',
      ...imageErrors,
    ],
    async handler({ body, tx, services }) {
      const { storage } = services;
      if (!/^[0-9a-f-]{36}$/i.test(body.uploadId)) throw new ApiError('UPLOAD_NOT_FOUND');
      // Step 1, in a transaction of its own (one round trip with the session check).
      const read = new RequestTransaction(services.pools.api, tx.viewer, services.config.apiTimeouts);
      read.deferSession(tx.viewer, 2);
      const checked = await read.queryAndCommit<{ object_key: string; content_length: number; content_type: string }>(
        'select object_key, content_length, content_type from app.check_upload($1, $2)',
        [body.uploadId, body.purpose],
      );
      const intent = checked.rows[0] as { object_key: string; content_length: number; content_type: string };
      const object = await storage.head(intent.object_key);
      if (!object) throw new ApiError('UPLOAD_OBJECT_MISSING');
      const checksum = body.checksum.toLowerCase();
      if (object.size !== intent.content_length || (object.sha256 ?? (await storage.sha256(intent.object_key))) !== checksum) {
        throw new ApiError('UPLOAD_CHECKSUM_MISMATCH');
      }
      if (!(await hasDeclaredType(storage, intent.object_key, intent.content_type))) {
        await storage.delete(intent.object_key);
        throw new ApiError('UPLOAD_CONTENT_MISMATCH');
      }
      const { rows } = await tx.query<AssetRow>(
        `select id, purpose, content_type, size, checksum, status, error_code, null::jsonb as image from app.complete_upload($1, $2, $3)`,
        [body.uploadId, body.purpose, checksum],
      );
      return shapeAsset(storage, rows[0] as AssetRow);
    },
    // The asset and its processing job commit first; the answer then waits for the variants.
    async afterCommit(data, { viewer, services }) {
      const completed = data as z.input<typeof asset>;
      return completed.status === 'processing' ? awaitProcessing(services, viewer, completed.assetId) : completed;
    },
  }),

  endpoint({
    method: 'get',
    path: '/uploads/{assetId}',
    tag,
    summary: 'An asset: its processing status, upright size, placeholder and variants',
    description:
      'The same object POST /uploads/complete answers, for the owner or a viewer of a profile, hub or post that uses the asset: ' +
      'poll it while status is processing.',
    auth: 'bearer',
    ids: { assetId: 'ASSET_NOT_FOUND' },
    response: asset,
    async handler({ params, tx, services: { storage } }) {
      const { rows } = await tx.query<AssetRow>(assetSql, [params.assetId]);
      const row = rows[0];
      if (!row) throw new ApiError('ASSET_NOT_FOUND');
      return shapeAsset(storage, row);
    },
  }),

  endpoint({
    method: 'get',
    path: '/uploads/{assetId}/download-url',
    tag,
    summary: 'A short-lived signed GET URL for an asset',
    description:
      'For the owner, or for a viewer of a profile, hub or post that uses the asset. The URL lasts 5 minutes. For an image it is ' +
      'the JPEG variant (never the uploaded file); 409 ASSET_NOT_READY while the image is processed, ASSET_NOT_FOUND when it was refused.',
    auth: 'bearer',
    ids: { assetId: 'ASSET_NOT_FOUND' },
    response: z.object({ url: text(textMax.url), expiresAt: z.string() }),
    errors: ['ASSET_NOT_READY'],
    async handler({ params, tx, services: { storage } }) {
      const { rows } = await tx.query<{ object_key: string; status: AssetRow['status'] }>(
        'select object_key, status from app.assets where id = $1',
        [params.assetId],
      );
      const found = rows[0];
      if (!found || found.status === 'failed') throw new ApiError('ASSET_NOT_FOUND');
      if (found.status === 'processing') throw assetNotReady();
      return {
        url: await storage.presignGet(found.object_key, downloadSeconds),
        expiresAt: new Date(Date.now() + downloadSeconds * 1000).toISOString(),
      };
    },
  }),
];
