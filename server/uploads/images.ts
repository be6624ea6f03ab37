// Images in answers (contract part 18, docs/photos.md). Only processed variants are ever served:
//   * `imageKeySql(alias)`: the object shown for an image asset in lists, cards and profiles
//     (app.image_key: the display variant, or an older image's upload until the backfill processed
//     it; nothing while processing or failed), selected as `photo_key` / a card medium's key;
//   * `imageColumnsSql(alias)`: what an app needs to lay an image out before it loads (upright size,
//     ThumbHash placeholder) and every variant, as one JSON value;
//   * `shapeImage`: that value with each variant's key turned into its signed URL (stable within the
//     URL window of part 15, like every photo URL).
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { ApiError } from '../http/errors.ts';
import type { Storage } from './storage.ts';
import { nullableText, text, textMax } from '../http/text.ts';

/** The object shown for the image asset under `alias` (app.image_key). */
export const imageKeySql = (alias: string) => `app.image_key(${alias}.status, ${alias}.display_key, ${alias}.object_key)`;

/** The layout facts and variants of the image asset under `alias`, as jsonb (null without the asset). */
export const imageColumnsSql = (alias: string) =>
  `case when ${alias}.id is not null and ${alias}.status = 'ready' then jsonb_build_object(
     'width', ${alias}.width, 'height', ${alias}.height, 'placeholder', ${alias}.placeholder, 'variants', coalesce(${alias}.variants, '[]')) end`;

export interface StoredVariant {
  width: number;
  height: number;
  contentType: string;
  key: string;
}

/** The JSON `imageColumnsSql` selects. */
export interface ImageColumns {
  width: number | null;
  height: number | null;
  placeholder: string | null;
  variants: StoredVariant[];
}

export const imageVariant = z
  .object({
    width: z.number().int().describe('Pixels'),
    height: z.number().int().describe('Pixels'),
    contentType: z.enum(['image/webp', 'image/jpeg']),
    url: text(textMax.url).describe('Signed GET URL of the variant (the same string within the hour, whichever process answers)'),
  })
  .meta({ id: 'ImageVariant' });

const layout = {
  width: z
    .number()
    .int()
    .nullable()
    .describe('Upright width of the image in pixels; null for an image uploaded before processing existed, until it is processed'),
  height: z.number().int().nullable().describe('Upright height of the image in pixels; null like width'),
  placeholder: nullableText(64).describe(
    'ThumbHash of the upright image, base64: decode it into a blurred preview while the variant loads; null like width',
  ),
  variants: z
    .array(imageVariant)
    .describe('The served variants, smallest first; empty for an image uploaded before processing existed, until it is processed'),
};

/** A profile or hub photo with what it takes to lay it out: `profilePhoto` of users and hubs. */
export const profilePhoto = z.object(layout).meta({ id: 'ProfilePhoto' });

/** The layout fields of a post card's medium (beside its assetId and url). */
export const mediaLayout = layout;

export type ShapedImage = {
  width: number | null;
  height: number | null;
  placeholder: string | null;
  variants: z.input<typeof imageVariant>[];
};

const emptyImage: ShapedImage = { width: null, height: null, placeholder: null, variants: [] };

/** The layout facts with signed variant URLs; an image not processed yet has none of them. */
export async function shapeImage(storage: Storage, columns: ImageColumns | null): Promise<ShapedImage> {
  if (!columns) return emptyImage;
  return {
    width: columns.width,
    height: columns.height,
    placeholder: columns.placeholder,
    variants: await Promise.all(
      columns.variants.map(async (variant) => ({
        width: variant.width,
        height: variant.height,
        contentType: variant.contentType as 'image/webp' | 'image/jpeg',
        url: (await storage.photoUrl(variant.key)) as string,
      })),
    ),
  };
}

/** 409 ASSET_NOT_READY: the asset is still being processed; the app retries in a second. */
export const assetNotReady = () => new ApiError('ASSET_NOT_READY', {}, { 'Retry-After': '1' });

/**
 * Attaching assets (a profile or hub photo, a post's images), in one round trip: `usableSql` is the
 * rule's boolean SQL over $1 (the value it takes), and the viewer's assets among `assetIds` ($2)
 * that are still processing answer 409 ASSET_NOT_READY; an unusable one (not the viewer's, of
 * another purpose, failed) answers 422 naming `field`.
 */
export async function requireUsableAssets(
  tx: RequestTransaction,
  usableSql: string,
  value: unknown,
  assetIds: string[],
  unusable: () => ApiError,
): Promise<void> {
  const { rows } = await tx.query<{ ok: boolean; processing: boolean }>(
    `select ${usableSql} as ok, app.assets_processing($2::uuid[]) as processing`,
    [value, assetIds],
  );
  if (rows[0]?.processing) throw assetNotReady();
  if (!rows[0]?.ok) throw unusable();
}
