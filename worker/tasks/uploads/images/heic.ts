// HEIC through Debian's libheif (libheif-examples' heif-convert, with libde265), run by a decoder
// process (child.ts) under the same bounds as that process (its nice value, and its process group,
// which the pool's time and memory bounds kill whole) plus an address-space limit of its own. sharp's
// prebuilt libvips cannot decode HEVC, so it only reads the header (render.ts heicHeader: format,
// size after the HEIF transforms, one top-level image); heif-convert then decodes the image, applies
// the HEIF transforms (irot, imir, clap: the image comes out upright) and writes a JPEG that also
// carries the file's EXIF as is, orientation and GPS included. That JPEG is read without applying
// its EXIF orientation again and stripped like any upload; it and the HEIC are deleted after.
// (heif-info does not read the header here: libheif 1.15's decodes the image too, 1.3 s of CPU at 12 MP.)
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ImageRefusal } from './image.ts';

const tool = 'heif-convert';

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
 * Whether HEIC can be decoded here: the setting (IMAGE_HEIC) is on and heif-convert is installed.
 * Cheap and synchronous (no sharp, no process): main.ts asks it once and tells the API, which
 * refuses to presign image/heic without it.
 */
export function heicSupport(enabled: boolean): { available: boolean; reason?: string } {
  if (!enabled) return { available: false, reason: 'IMAGE_HEIC is off' };
  if (onPath(tool) === undefined) return { available: false, reason: `${tool} not found (Debian package libheif-examples)` };
  return { available: true };
}

/** The JPEG quality of the intermediate: near lossless, and far faster to write and read than PNG (1.5 s against 5 s at 12 MP). */
const intermediateQuality = '95';

/**
 * The HEIC's image as a JPEG (upright, EXIF copied as is), its header already checked. `dir` is
 * the decoder process's own temporary folder (its pool removes it if the process dies mid-image).
 * heif-convert runs with its address space bounded (ulimit -v: a C program, unlike Node, which
 * reserves far more address space than it uses).
 */
export async function heicToJpeg(bytes: Buffer, dir: string, memoryMb: number): Promise<Buffer> {
  const input = path.join(dir, 'in.heic');
  const output = path.join(dir, 'out.jpg');
  await writeFile(input, bytes);
  try {
    await new Promise<void>((resolve, reject) => {
      const args = [
        '-c',
        'ulimit -v "$0" && exec "$@"',
        String(memoryMb * 1024),
        tool,
        '--quiet',
        '-q',
        intermediateQuality,
        input,
        output,
      ];
      execFile('/bin/sh', args, { maxBuffer: 1024 * 1024 }, (error, _stdout, stderr) => {
        if (error) reject(new ImageRefusal('IMAGE_UNREADABLE', `${tool}: ${(stderr || error.message).trim().split('\n')[0]}`));
        else resolve();
      });
    });
    return await readFile(output);
  } finally {
    await Promise.all([input, output].map((file) => rm(file, { force: true })));
  }
}
