// HEIC through Debian's libheif command-line tools (libheif-examples), run by a decoder process
// (child.ts) under the same bounds as the process itself (its nice value and process group, so the
// pool's time bound kills them with it) plus an address-space limit of their own. sharp's prebuilt
// libvips reads HEIF containers but cannot decode HEVC, so it never sees the HEIC bytes (its HEIF
// loader stays blocked): heif-info reads the sizes from the container's boxes without decoding
// anything (the caps are checked there), then heif-convert decodes the primary image, applies the
// HEIF transforms (irot, imir, clap: the image comes out upright) and writes a JPEG that also
// carries the file's EXIF as is, orientation and GPS included. That JPEG is read without applying
// its EXIF orientation again and is stripped like any upload; it and the HEIC are deleted after.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ImageRefusal, tooLarge } from './image.ts';

const tools = ['heif-info', 'heif-convert'] as const;

/** The path of an executable found on PATH, or undefined. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/**
 * Whether HEIC can be decoded here: the setting (IMAGE_HEIC) is on and libheif's tools are
 * installed. Cheap and synchronous: the API asks it before presigning an image/heic upload.
 */
export function heicSupport(enabled: boolean): { available: boolean; reason?: string } {
  if (!enabled) return { available: false, reason: 'IMAGE_HEIC is off' };
  const missing = tools.filter((tool) => onPath(tool) === undefined);
  if (missing.length > 0) return { available: false, reason: `${missing.join(' and ')} not found (Debian package libheif-examples)` };
  return { available: true };
}

/** Top-level images heif-convert would decode: more than this is not a photo. */
const maxTopLevelImages = 4;
/** The JPEG quality of the intermediate: near lossless, and far faster to write than PNG (1.5 s against 5 s at 12 MP). */
const intermediateQuality = '95';

/** Runs a libheif tool with its address space bounded (ulimit -v: these are C programs, unlike Node, which reserves far more than it uses). */
function runBounded(tool: string, args: string[], memoryMb: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('/bin/sh', ['-c', 'ulimit -v "$0" && exec "$@"', String(memoryMb * 1024), tool, ...args], { maxBuffer: 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new ImageRefusal('IMAGE_UNREADABLE', `${tool}: ${(stderr || error.message).trim().split('\n')[0]}`));
      else resolve(stdout);
    });
  });
}

interface TopLevelImage {
  width: number;
  height: number;
  primary: boolean;
}

/** heif-info's `image: WxH (id=N)[, primary]` lines: the top-level images, in heif-convert's order, sizes after the transforms. */
export function topLevelImages(info: string): TopLevelImage[] {
  return [...info.matchAll(/^image: (\d+)x(\d+) \(id=\d+\)(, primary)?/gm)].map((match) => ({
    width: Number(match[1]),
    height: Number(match[2]),
    primary: match[3] !== undefined,
  }));
}

/**
 * The primary image of a HEIC file as a JPEG (upright, EXIF copied as is). `dir` is the decoder
 * process's own temporary folder (its pool removes it if the process dies mid-image).
 */
export async function heicToJpeg(bytes: Buffer, dir: string, memoryMb: number): Promise<Buffer> {
  const input = path.join(dir, 'in.heic');
  const output = path.join(dir, 'out.jpg');
  await writeFile(input, bytes);
  try {
    const images = topLevelImages(await runBounded('heif-info', [input], memoryMb));
    const primary = images.findIndex((image) => image.primary);
    if (primary < 0 || images.length > maxTopLevelImages) throw new ImageRefusal('IMAGE_UNREADABLE', `not a HEIC photo (${images.length} top-level images)`);
    const over = images.find((image) => tooLarge(image.width, image.height));
    if (over) throw new ImageRefusal('IMAGE_TOO_LARGE', `${over.width}x${over.height} is over 50 megapixels or 12000 px on a side`);
    await runBounded('heif-convert', ['--quiet', '-q', intermediateQuality, input, output], memoryMb);
    // With more than one top-level image heif-convert numbers its outputs from 1, in heif-info's order.
    return await readFile(images.length === 1 ? output : path.join(dir, `out-${primary + 1}.jpg`));
  } finally {
    await Promise.all([input, output, ...Array.from({ length: maxTopLevelImages }, (_, i) => path.join(dir, `out-${i + 1}.jpg`))].map((file) => rm(file, { force: true })));
  }
}
