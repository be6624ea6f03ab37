// A decoder process: the entry file processor.ts forks, one per image slot. It decodes one image at
// a time, as its pool sends them, and answers each with the processed image or the refusal. Its
// pool bounds it from outside (nice value, memory, time: a process that breaks a bound is killed
// and replaced), so a decoder crash, hang or bomb costs one image and never the worker.
// argv: the process's temporary folder (HEIC conversions) and its memory bound in MB.
import { heicToJpeg } from './heic.ts';
import { ImageRefusal, type ImageShape, type ProcessedImage } from './image.ts';
import { configureSharp, heicHeader, render, type SharpInput } from './render.ts';

export interface ChildJob {
  id: number;
  bytes: Uint8Array;
  contentType: string;
  shape: ImageShape;
}

export type ChildAnswer =
  | { ready: true }
  | { id: number; image: ProcessedImage }
  | { id: number; refusal: { code: ImageRefusal['code']; message: string } }
  | { id: number; error: string };

const [dir, memoryArg] = process.argv.slice(2) as [string, string];
const memoryMb = Number(memoryArg);

async function processJob(job: ChildJob): Promise<ChildAnswer> {
  const bytes = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  try {
    if (job.contentType === 'image/heic') {
      await heicHeader(bytes);
      // heif-convert applied the HEIF transforms: its EXIF orientation must not turn the pixels again.
      return { id: job.id, image: await render(await heicToJpeg(bytes, dir, memoryMb), 'image/jpeg', job.shape, false) };
    }
    if (job.contentType === 'image/jpeg' || job.contentType === 'image/png' || job.contentType === 'image/webp') {
      return { id: job.id, image: await render(bytes, job.contentType satisfies SharpInput, job.shape) };
    }
    return { id: job.id, refusal: { code: 'IMAGE_UNREADABLE', message: `${job.contentType} is not an image type` } };
  } catch (error) {
    if (error instanceof ImageRefusal) return { id: job.id, refusal: { code: error.code, message: error.message } };
    // Not the image's fault (a full disk, a missing tool): the caller retries later.
    return { id: job.id, error: (error as Error).message ?? String(error) };
  }
}

configureSharp();
process.on('message', (job: ChildJob) => {
  void processJob(job).then((answer) => {
    process.send?.(answer);
    // The image's buffers (upload, decoded pixels, variants) are garbage now: freed at once, a
    // process stays near its size at rest between images (about 150 MB at its peak, not 200 and growing).
    (globalThis as { gc?: () => void }).gc?.();
  });
});
// The pool went away (the worker stopped or died): nothing is left to answer to.
process.on('disconnect', () => process.exit(0));
process.send?.({ ready: true } satisfies ChildAnswer);
