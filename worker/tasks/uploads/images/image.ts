// What processing an uploaded image gives (docs/photos.md): its upright size, a ThumbHash
// placeholder and the variants that are served in its place, and the two ways an image is refused.
// The sizes are the contract's: a post image fitted within 320/640/1280/2048 px as WebP plus one JPEG
// within 1280; a profile or hub photo as a centred square crop at 128/256/512 px as WebP plus a JPEG
// at 512. Nothing is enlarged: the sizes above the image's own are replaced by one at its own size.

/** 'fit' for post images, 'square' for profile and hub photos. */
export type ImageShape = 'fit' | 'square';

export type VariantType = 'image/webp' | 'image/jpeg';

export interface ImageVariant {
  width: number;
  height: number;
  contentType: VariantType;
  bytes: Buffer;
}

export interface ProcessedImage {
  /** The upright size of the whole image (after its EXIF orientation). */
  width: number;
  height: number;
  /** ThumbHash of the upright image (of the square crop for 'square'), base64. */
  placeholder: string;
  /** Smallest first (by width x height), WebP before JPEG at equal size. */
  variants: ImageVariant[];
}

export type ImageRefusalCode = 'IMAGE_UNREADABLE' | 'IMAGE_TOO_LARGE';

/** The image's own fault: it cannot be decoded as its declared type, or it is over the caps. Never retried. */
export class ImageRefusal extends Error {
  readonly code: ImageRefusalCode;
  constructor(code: ImageRefusalCode, message: string) {
    super(message);
    this.name = 'ImageRefusal';
    this.code = code;
  }
}

/** The caps checked from the header before any pixel is decoded (IMAGE_TOO_LARGE). */
export const maxPixels = 50_000_000;
export const maxSide = 12_000;

/** Whether a header's size is over the caps. */
export function tooLarge(width: number, height: number): boolean {
  return width > maxSide || height > maxSide || width * height > maxPixels;
}

/** The content types decoded, each with the one decoder allowed for it. */
export const imageTypes = ['image/jpeg', 'image/png', 'image/webp', 'image/heic'] as const;
export type ImageType = (typeof imageTypes)[number];

export function isImageType(contentType: string): contentType is ImageType {
  return (imageTypes as readonly string[]).includes(contentType);
}

export interface PlannedVariant {
  width: number;
  height: number;
  contentType: VariantType;
}

const fitSides = [320, 640, 1280, 2048];
const fitJpegSide = 1280;
const squareSides = [128, 256, 512];
const squareJpegSide = 512;

/** The largest side at or below each wanted side, never above the image's own: no duplicates, nothing enlarged. */
function sidesWithin(own: number, wanted: number[]): number[] {
  return [...new Set(wanted.map((side) => Math.min(side, own)))];
}

/** An upright width x height fitted within `side` on its longest side (never below 1 px). */
function fitted(width: number, height: number, side: number): { width: number; height: number } {
  const longest = Math.max(width, height);
  if (side >= longest) return { width, height };
  const scale = side / longest;
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * The variants of an upright width x height image of `shape`, smallest first (WebP before JPEG at
 * equal size). 'square' variants are of the centred square crop, min(width, height) on a side.
 */
export function planVariants(width: number, height: number, shape: ImageShape): PlannedVariant[] {
  const planned: PlannedVariant[] = [];
  if (shape === 'fit') {
    const own = Math.max(width, height);
    for (const side of sidesWithin(own, fitSides)) planned.push({ ...fitted(width, height, side), contentType: 'image/webp' });
    planned.push({ ...fitted(width, height, Math.min(fitJpegSide, own)), contentType: 'image/jpeg' });
  } else {
    const own = Math.min(width, height);
    for (const side of sidesWithin(own, squareSides)) planned.push({ width: side, height: side, contentType: 'image/webp' });
    const jpeg = Math.min(squareJpegSide, own);
    planned.push({ width: jpeg, height: jpeg, contentType: 'image/jpeg' });
  }
  const order = (variant: PlannedVariant) => variant.width * variant.height * 2 + (variant.contentType === 'image/webp' ? 0 : 1);
  return planned.sort((a, b) => order(a) - order(b));
}
