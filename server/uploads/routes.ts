// /uploads: presign, complete, download URL (spec 4.3; contract section 6). The binary never
// passes through the API: the client PUTs it to the signed URL.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { hasDeclaredType } from './content.ts';
import { text, textMax } from '../http/text.ts';

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

const asset = z.object({
  assetId: z.string(),
  purpose,
  contentType: text(textMax.contentType),
  size: z.number().int(),
  checksum: text(64),
}).meta({ id: 'Asset' });

export const uploadEndpoints = [
  endpoint({
    method: 'post',
    path: '/uploads/presign',
    tag,
    summary: 'Start an upload: a signed PUT URL bound to the content type and length',
    description:
      'Images (image/jpeg, image/png, image/webp, image/heic) up to 10 MiB for profile_photo, hub_photo and post_image; ' +
      'application/pdf up to 25 MiB for document. PUT the bytes to uploadUrl with the returned headers within 15 minutes, ' +
      'then call /uploads/complete. Needs profile basics (level 2).',
    auth: 'bearer',
    limit: 'uploads',
    level: 2,
    body: z
      .strictObject({ purpose, contentType: z.string().max(textMax.contentType), contentLength: z.number().int().min(1).max(largestUpload) })
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
          then: { properties: { contentType: { enum: [...uploadRules[name].contentTypes] }, contentLength: { maximum: uploadRules[name].maxBytes } } },
        })),
      }),
    response: z.object({
      uploadId: z.string(),
      uploadUrl: text(textMax.url),
      method: z.literal('PUT'),
      headers: z.object({ 'content-type': text(textMax.contentType) }),
      expiresAt: z.string(),
    }),
    async handler({ body, tx, services: { storage } }) {
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
      'UPLOAD_CONTENT_MISMATCH, and the object is deleted (PUT the right bytes to the same URL while it lasts, or presign again).',
    auth: 'bearer',
    limit: 'uploads',
    level: 2,
    status: 201,
    body: z.strictObject({
      uploadId: z.string().max(64),
      purpose,
      checksum: z.string().max(64).regex(/^[0-9a-fA-F]{64}$/, '64 hexadecimal characters'),
    }),
    response: asset,
    errors: ['UPLOAD_NOT_FOUND', 'UPLOAD_EXPIRED', 'UPLOAD_OBJECT_MISSING', 'UPLOAD_CHECKSUM_MISMATCH', 'UPLOAD_ALREADY_COMPLETED', 'UPLOAD_PURPOSE_MISMATCH', 'UPLOAD_CONTENT_MISMATCH'],
    async handler({ body, tx, services: { storage } }) {
      if (!/^[0-9a-f-]{36}$/i.test(body.uploadId)) throw new ApiError('UPLOAD_NOT_FOUND');
      const checked = await tx.query<{ object_key: string; content_length: number; content_type: string }>(
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
      const { rows } = await tx.query<{ id: string; purpose: (typeof purposes)[number]; content_type: string; size: number; checksum: string }>(
        'select id, purpose, content_type, size, checksum from app.complete_upload($1, $2, $3)',
        [body.uploadId, body.purpose, checksum],
      );
      const completed = rows[0] as { id: string; purpose: (typeof purposes)[number]; content_type: string; size: number; checksum: string };
      return { assetId: completed.id, purpose: completed.purpose, contentType: completed.content_type, size: completed.size, checksum: completed.checksum };
    },
  }),

  endpoint({
    method: 'get',
    path: '/uploads/{assetId}/download-url',
    tag,
    summary: 'A short-lived signed GET URL for an asset',
    description: 'For the owner, or for a viewer of a profile, hub or post that uses the asset. The URL lasts 5 minutes.',
    auth: 'bearer',
    ids: { assetId: 'ASSET_NOT_FOUND' },
    response: z.object({ url: text(textMax.url), expiresAt: z.string() }),
    async handler({ params, tx, services: { storage } }) {
      const { rows } = await tx.query<{ object_key: string }>('select object_key from app.assets where id = $1', [params.assetId]);
      const found = rows[0];
      if (!found) throw new ApiError('ASSET_NOT_FOUND');
      return {
        url: await storage.presignGet(found.object_key, downloadSeconds),
        expiresAt: new Date(Date.now() + downloadSeconds * 1000).toISOString(),
      };
    },
  }),
];
