// Decoding and re-encoding one image with sharp (libvips), in a decoder process (child.ts), never in
// a process that serves HTTP. The header is read first (format and size, no pixel decoded): a format
// other than the declared one is unreadable, a size over the caps too large. Then the image is
// decoded once, turned upright by its EXIF orientation, converted to 8-bit sRGB and resized once to
// the largest variant; every variant and the ThumbHash are made from that, and sharp writes no
// metadata unless asked (no EXIF, XMP, IPTC, ICC profile, comment or thumbnail), which nothing here does.
import sharp, { type Metadata } from 'sharp';
import { rgbaToThumbHash } from 'thumbhash';
import { ImageRefusal, maxPixels, planVariants, tooLarge, type ImageShape, type ImageVariant, type ProcessedImage } from './image.ts';

/** Each declared type and the libvips format its bytes must be. HEIC arrives converted to JPEG by heif-convert (heic.ts). */
const formats = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp' } as const;
export type SharpInput = keyof typeof formats;

/**
 * The process-wide settings of a decoder process: no operation cache (each image is seen once), one
 * libvips thread (one image per core is the pool's unit), and an allowlist of decoders: every
 * libvips loader is blocked but JPEG, PNG and WebP from memory (GIF, TIFF, SVG, PDF, HEIF/AVIF,
 * JPEG 2000, FITS, ... never run on an upload).
 */
export function configureSharp(): void {
  sharp.cache(false);
  sharp.concurrency(1);
  sharp.block({ operation: ['VipsForeignLoad'] });
  // The HEIF loader only ever reads headers (heicHeader): render() decodes nothing but the three
  // formats above, and this libvips has no HEVC decoder in any case.
  sharp.unblock({
    operation: ['VipsForeignLoadJpegBuffer', 'VipsForeignLoadPngBuffer', 'VipsForeignLoadWebpBuffer', 'VipsForeignLoadHeifBuffer'],
  });
}

const webp = { quality: 80, effort: 2 } as const;
const jpeg = { quality: 82 } as const;
const thumbHashSide = 100;

/** A libvips failure is the image's fault (it got past the header but not through the decoder). */
function unreadable(error: unknown): ImageRefusal {
  if (error instanceof ImageRefusal) return error;
  const message = (error as Error).message ?? String(error);
  if (/pixel limit/i.test(message)) return new ImageRefusal('IMAGE_TOO_LARGE', message);
  return new ImageRefusal('IMAGE_UNREADABLE', message.split('\n')[0] ?? 'undecodable');
}

/**
 * Checks a HEIC's header (libheif's parse of its boxes, through sharp: no pixel decoded) before
 * heif-convert decodes it: HEVC-coded, one top-level image (heif-convert would decode every one),
 * within the caps (the size after its HEIF transforms).
 */
export async function heicHeader(bytes: Buffer): Promise<void> {
  let header: Metadata;
  try {
    header = await sharp(bytes, { failOn: 'warning', limitInputPixels: maxPixels }).metadata();
  } catch (error) {
    throw unreadable(error);
  }
  if (header.format !== 'heif' || header.compression !== 'hevc')
    throw new ImageRefusal('IMAGE_UNREADABLE', `not a HEIC image (${header.format ?? 'unknown'} ${header.compression ?? ''})`);
  if ((header.pages ?? 1) !== 1) throw new ImageRefusal('IMAGE_UNREADABLE', `not a HEIC photo (${header.pages} top-level images)`);
  if (!header.width || !header.height) throw new ImageRefusal('IMAGE_UNREADABLE', 'no size in the header');
  if (tooLarge(header.width, header.height)) {
    throw new ImageRefusal('IMAGE_TOO_LARGE', `${header.width}x${header.height} is over 50 megapixels or 12000 px on a side`);
  }
}

/**
 * The processed image of `bytes` declared as `type`. `orient`: apply the EXIF orientation (false
 * for heif-convert's output, whose pixels are already turned by the HEIF transforms while the EXIF
 * it copied still names an orientation). Rejects with ImageRefusal for the image's own faults.
 */
export async function render(bytes: Buffer, type: SharpInput, shape: ImageShape, orient = true): Promise<ProcessedImage> {
  const input = { failOn: 'warning', limitInputPixels: maxPixels, autoOrient: orient } as const;
  let header: Metadata;
  try {
    header = await sharp(bytes, input).metadata();
  } catch (error) {
    throw unreadable(error);
  }
  if (header.format !== formats[type])
    throw new ImageRefusal('IMAGE_UNREADABLE', `not a ${formats[type]} image (${header.format ?? 'unknown'})`);
  if (!header.width || !header.height) throw new ImageRefusal('IMAGE_UNREADABLE', 'no size in the header');
  if (tooLarge(header.width, header.height)) {
    throw new ImageRefusal('IMAGE_TOO_LARGE', `${header.width}x${header.height} is over 50 megapixels or 12000 px on a side`);
  }
  const width = orient ? header.autoOrient.width : header.width;
  const height = orient ? header.autoOrient.height : header.height;
  const plan = planVariants(width, height, shape);
  const largest = plan[plan.length - 1] as (typeof plan)[number];

  try {
    // One decode: upright, sRGB, 8 bits, at the largest variant's size (for 'square', the centred crop).
    const base = await sharp(bytes, input)
      .resize(largest.width, largest.height, { fit: shape === 'fit' ? 'fill' : 'cover', position: 'centre', kernel: 'lanczos3' })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    const raw = { raw: { width: base.info.width, height: base.info.height, channels: base.info.channels } };
    const from = (w: number, h: number) => {
      const image = sharp(base.data, raw);
      return w === base.info.width && h === base.info.height ? image : image.resize(w, h, { fit: 'fill', kernel: 'lanczos3' });
    };
    const variants: ImageVariant[] = [];
    for (const variant of plan) {
      const image = from(variant.width, variant.height);
      const bytesOut =
        variant.contentType === 'image/webp'
          ? await image.webp(webp).toBuffer()
          : await image.flatten({ background: '#ffffff' }).jpeg(jpeg).toBuffer();
      variants.push({ ...variant, bytes: bytesOut });
    }
    const small = await sharp(base.data, raw)
      .resize(thumbHashSide, thumbHashSide, { fit: 'inside', withoutEnlargement: true })
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const placeholder = Buffer.from(rgbaToThumbHash(small.info.width, small.info.height, small.data)).toString('base64');
    return { width, height, placeholder, variants };
  } catch (error) {
    throw unreadable(error);
  }
}
