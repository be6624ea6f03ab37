// The image processor on real images (made by the test: sharp draws them, exiftool writes a phone's
// metadata, heif-enc makes HEIC) in real decoder processes: every variant upright and carrying
// nothing but pixels, the contract's sizes and crops, nothing enlarged, HEIC in and WebP/JPEG out,
// hostile files refused from their header, and a decoder that is killed, hangs or grows past its
// memory bound failing its one image while the next one processes.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import sharp from 'sharp';
import { thumbHashToApproximateAspectRatio, thumbHashToAverageRGBA } from 'thumbhash';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../logger.ts';
import { planVariants } from '../../../worker/tasks/uploads/images/image.ts';
import {
  heicSupport,
  ImageRefusal,
  startImageProcessor,
  type ImageProcessor,
  type ProcessedImage,
} from '../../../worker/tasks/uploads/images/processor.ts';
import {
  bandedImage,
  colours,
  corners,
  heicFrom,
  markedImage,
  noiseWithJpegSignature,
  photo12mp,
  pngBomb,
  readMetadata,
  readMetadataOfEach,
  revealingTags,
  withClaimedSize,
  withIrot,
  withPhoneMetadata,
} from '../../helpers/images.ts';

const silent = createLogger('silent');
const decoderEntry = 'worker/tasks/uploads/images/child.ts';

/** The decoder processes this test process started (Linux /proc: parent pid and command line). */
function decoderPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(decoderEntry)) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

function residentMb(pid: number): number {
  return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

/** Resolves once `check` holds, polled every few milliseconds (an event outside this process: another process's memory). */
async function until(check: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error(`not seen within ${limitMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function refusal(promise: Promise<unknown>): Promise<ImageRefusal> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ImageRefusal);
  return error as ImageRefusal;
}

const formatOf = { 'image/webp': 'webp', 'image/jpeg': 'jpeg' } as const;

/** Every variant is what it says (type, size), carries no metadata and has the marker (or nothing but background) where `expected` says. */
async function checkVariants(
  image: ProcessedImage,
  expected: Partial<Record<'topLeft' | 'topRight' | 'bottomLeft' | 'bottomRight', string>>,
) {
  const metadata = await readMetadataOfEach(image.variants.map((variant) => variant.bytes));
  for (const [index, variant] of image.variants.entries()) {
    const label = `${variant.width}x${variant.height} ${variant.contentType}`;
    const meta = await sharp(variant.bytes).metadata();
    expect(meta.format, label).toBe(formatOf[variant.contentType]);
    expect([meta.width, meta.height, meta.orientation, meta.exif, meta.icc, meta.xmp, meta.iptc, meta.comments], label).toEqual([
      variant.width,
      variant.height,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(revealingTags(metadata[index] as Record<string, unknown>), label).toEqual([]);
    expect(await corners(variant.bytes), label).toMatchObject({ width: variant.width, height: variant.height, ...expected });
  }
}

function sizes(image: ProcessedImage): string[] {
  return image.variants.map((variant) => `${variant.width}x${variant.height} ${variant.contentType}`);
}

function placeholderOf(image: ProcessedImage) {
  const hash = Buffer.from(image.placeholder, 'base64');
  const average = thumbHashToAverageRGBA(hash);
  return { aspect: thumbHashToApproximateAspectRatio(hash), average: { r: average.r * 255, g: average.g * 255, b: average.b * 255 } };
}

describe('variant sizes', () => {
  it('fits post images within 320, 640, 1280 and 2048 px plus a JPEG within 1280, and squares at 128, 256, 512 plus a JPEG 512', () => {
    const list = (w: number, h: number, shape: 'fit' | 'square') =>
      planVariants(w, h, shape).map((v) => `${v.width}x${v.height} ${v.contentType.slice(6)}`);
    expect(list(4000, 3000, 'fit')).toEqual(['320x240 webp', '640x480 webp', '1280x960 webp', '1280x960 jpeg', '2048x1536 webp']);
    expect(list(3000, 4000, 'fit')).toEqual(['240x320 webp', '480x640 webp', '960x1280 webp', '960x1280 jpeg', '1536x2048 webp']);
    // Nothing enlarged: the sizes above the image's own become one at its own size, without duplicates.
    expect(list(1280, 720, 'fit')).toEqual(['320x180 webp', '640x360 webp', '1280x720 webp', '1280x720 jpeg']);
    expect(list(1000, 500, 'fit')).toEqual(['320x160 webp', '640x320 webp', '1000x500 webp', '1000x500 jpeg']);
    expect(list(200, 100, 'fit')).toEqual(['200x100 webp', '200x100 jpeg']);
    expect(list(12000, 10, 'fit')).toEqual(['320x1 webp', '640x1 webp', '1280x1 webp', '1280x1 jpeg', '2048x2 webp']);
    expect(list(4000, 3000, 'square')).toEqual(['128x128 webp', '256x256 webp', '512x512 webp', '512x512 jpeg']);
    expect(list(300, 900, 'square')).toEqual(['128x128 webp', '256x256 webp', '300x300 webp', '300x300 jpeg']);
    expect(list(100, 150, 'square')).toEqual(['100x100 webp', '100x100 jpeg']);
  });
});

describe('image processor', () => {
  let processor: ImageProcessor;
  beforeAll(() => {
    processor = startImageProcessor({ concurrency: 2, memoryMb: 512, timeoutMs: 30_000, heic: true, log: silent });
  });
  afterAll(async () => {
    await processor.close();
    expect(decoderPids()).toEqual([]);
  });

  // EXIF orientation -> where the marker of the stored top-left corner lands, and whether the sides swap.
  const orientations = [
    { orientation: 1, corner: 'topLeft', turned: false },
    { orientation: 6, corner: 'topRight', turned: true }, // rotate 90 CW
    { orientation: 3, corner: 'bottomRight', turned: false }, // 180
    { orientation: 8, corner: 'bottomLeft', turned: true }, // rotate 270 CW
  ] as const;

  it.each(orientations)(
    'turns a phone JPEG with EXIF orientation $orientation upright and strips everything but its pixels',
    async ({ orientation, corner, turned }) => {
      const upload = await withPhoneMetadata(await markedImage(1600, 1200).jpeg({ quality: 92 }).toBuffer(), orientation);
      // The upload carries what a phone writes: the test would prove nothing otherwise.
      const carried = revealingTags(await readMetadata(upload)).join(' ');
      for (const tag of [
        'EXIF:Orientation',
        'EXIF:GPSLatitude',
        'EXIF:Make',
        'XMP:Creator',
        'IPTC:Keywords',
        'File:Comment',
        'EXIF:UserComment',
        'EXIF:ThumbnailImage',
      ]) {
        expect(carried).toContain(tag);
      }

      const image = await processor.process(upload, 'image/jpeg', 'fit');
      expect([image.width, image.height]).toEqual(turned ? [1200, 1600] : [1600, 1200]);
      expect(sizes(image)).toEqual(
        turned
          ? ['240x320 image/webp', '480x640 image/webp', '960x1280 image/webp', '960x1280 image/jpeg', '1200x1600 image/webp']
          : ['320x240 image/webp', '640x480 image/webp', '1280x960 image/webp', '1280x960 image/jpeg', '1600x1200 image/webp'],
      );
      const others = (['topLeft', 'topRight', 'bottomLeft', 'bottomRight'] as const).filter((c) => c !== corner);
      await checkVariants(image, { [corner]: 'marker', ...Object.fromEntries(others.map((c) => [c, 'background'])) });
      // The placeholder is of the upright image: its shape and its colour (mostly background).
      const placeholder = placeholderOf(image);
      expect(placeholder.aspect).toBeCloseTo(image.width / image.height, 0);
      expect(Math.abs(placeholder.average.b - colours.background.b)).toBeLessThan(40);
    },
  );

  it('crops profile and hub photos to the centred square at 128, 256 and 512 px plus a JPEG 512', async () => {
    // 1000 x 600 with 150 px bands on each side: the centred 600 x 600 square holds none of them.
    const image = await processor.process(await bandedImage(1000, 600, 150).png().toBuffer(), 'image/png', 'square');
    expect([image.width, image.height]).toEqual([1000, 600]);
    expect(sizes(image)).toEqual(['128x128 image/webp', '256x256 image/webp', '512x512 image/webp', '512x512 image/jpeg']);
    await checkVariants(image, { topLeft: 'background', topRight: 'background', bottomLeft: 'background', bottomRight: 'background' });
    expect(placeholderOf(image).aspect).toBeCloseTo(1, 1); // of the square crop

    // Upright first, then cropped: the marker of a sideways phone photo lands top right.
    const turned = await processor.process(
      await withPhoneMetadata(await markedImage(700, 700).jpeg().toBuffer(), 6),
      'image/jpeg',
      'square',
    );
    expect(sizes(turned)).toEqual(['128x128 image/webp', '256x256 image/webp', '512x512 image/webp', '512x512 image/jpeg']);
    await checkVariants(turned, { topLeft: 'background', topRight: 'marker', bottomLeft: 'background' });
  });

  it('never enlarges: a small image gets one variant of each type at its own size', async () => {
    const post = await processor.process(await markedImage(200, 100).webp().toBuffer(), 'image/webp', 'fit');
    expect(sizes(post)).toEqual(['200x100 image/webp', '200x100 image/jpeg']);
    await checkVariants(post, { topLeft: 'marker', bottomRight: 'background' });
    const profile = await processor.process(await markedImage(100, 150).png().toBuffer(), 'image/png', 'square');
    expect([profile.width, profile.height]).toEqual([100, 150]);
    expect(sizes(profile)).toEqual(['100x100 image/webp', '100x100 image/jpeg']);
  });

  it('keeps transparency in WebP and flattens it onto white in the JPEG', async () => {
    const transparent = await sharp({ create: { width: 300, height: 200, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
      .png()
      .toBuffer();
    const image = await processor.process(transparent, 'image/png', 'fit');
    const [webp, jpeg] = image.variants;
    expect((await sharp(webp?.bytes).metadata()).hasAlpha).toBe(true);
    const { data } = await sharp(jpeg?.bytes).raw().toBuffer({ resolveWithObject: true });
    expect([...data.subarray(0, 3)].every((value) => value > 245)).toBe(true);
  });

  it('converts an image with a colour profile to sRGB and drops the profile', async () => {
    const p3 = await markedImage(400, 300).withIccProfile('p3').jpeg().toBuffer();
    expect((await sharp(p3).metadata()).icc).toBeDefined();
    const image = await processor.process(p3, 'image/jpeg', 'fit');
    await checkVariants(image, { topLeft: 'marker', topRight: 'background' });
  });

  describe('HEIC', () => {
    it('is decoded with libheif here (the test command installs it)', () => {
      expect(heicSupport(true)).toEqual({ available: true });
      expect(processor.heic).toBe(true);
    });

    it('applies the HEIF rotation once (not the EXIF orientation copied beside it) and serves WebP and JPEG without metadata', async () => {
      // As an iPhone stores a photo taken sideways: the pixels as the sensor saw them, an irot
      // transform turning them 90 degrees clockwise, and EXIF saying the same (orientation 6).
      const stored = await withPhoneMetadata(await markedImage(800, 600).jpeg().toBuffer(), 6);
      const heic = withIrot(await heicFrom(stored), 90);
      expect(revealingTags(await readMetadata(heic)).join(' ')).toMatch(/GPSLatitude.*|Make/);

      const image = await processor.process(heic, 'image/heic', 'fit');
      expect([image.width, image.height]).toEqual([600, 800]);
      expect(sizes(image)).toEqual(['240x320 image/webp', '480x640 image/webp', '600x800 image/webp', '600x800 image/jpeg']);
      // Turned once: the stored top-left corner is top right (turned twice it would be bottom right).
      await checkVariants(image, { topLeft: 'background', topRight: 'marker', bottomLeft: 'background', bottomRight: 'background' });

      // Without irot, a HEIC is shown as stored whatever its EXIF says (HEIF readers ignore EXIF orientation).
      const plain = await processor.process(await heicFrom(stored), 'image/heic', 'square');
      expect([plain.width, plain.height]).toEqual([800, 600]);
      await checkVariants(plain, { topRight: 'background', bottomRight: 'background' });
    });

    it('refuses a HEIC over the caps from its header, one of several images, and bytes that are not HEIC', async () => {
      // A header claiming 20000 x 20000 (1.2 GB decoded) and one claiming a 13000 x 10 strip.
      const heic = await heicFrom(await markedImage(64, 64).jpeg().toBuffer());
      for (const [width, height] of [
        [20_000, 20_000],
        [13_000, 10],
      ] as const) {
        expect((await refusal(processor.process(withClaimedSize(heic, width, height), 'image/heic', 'fit'))).code).toBe('IMAGE_TOO_LARGE');
      }
      expect((await refusal(processor.process(await markedImage(64, 64).jpeg().toBuffer(), 'image/heic', 'fit'))).code).toBe(
        'IMAGE_UNREADABLE',
      );
      // heif-convert would decode every top-level image: a HEIC photo has one.
      const two = await heicFrom(await markedImage(64, 64).jpeg().toBuffer(), [], 2);
      expect((await refusal(processor.process(two, 'image/heic', 'fit'))).code).toBe('IMAGE_UNREADABLE');
      // AVIF is HEIF too, but not HEIC.
      expect((await refusal(processor.process(await markedImage(64, 64).avif().toBuffer(), 'image/heic', 'fit'))).code).toBe(
        'IMAGE_UNREADABLE',
      );
    });

    it('is refused where it is turned off, and the start log says why once', async () => {
      const lines: string[] = [];
      const off = startImageProcessor({
        concurrency: 1,
        memoryMb: 512,
        timeoutMs: 30_000,
        heic: false,
        log: createLogger('info', { write: (line: string) => void lines.push(line) }),
      });
      try {
        expect(off.heic).toBe(false);
        expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['HEIC uploads are refused: IMAGE_HEIC is off']);
        const heic = await heicFrom(await markedImage(64, 64).jpeg().toBuffer());
        expect((await refusal(off.process(heic, 'image/heic', 'fit'))).code).toBe('IMAGE_UNREADABLE');
      } finally {
        await off.close();
      }
      const path = process.env.PATH;
      process.env.PATH = '/nonexistent';
      try {
        expect(heicSupport(true)).toEqual({ available: false, reason: 'heif-convert not found (Debian package libheif-examples)' });
      } finally {
        process.env.PATH = path;
      }
    });
  });

  describe('hostile and broken files', () => {
    it('refuses a 20000 x 20000 PNG bomb and a 13000 x 10 strip from their headers, without decoding their pixels', async () => {
      // A decoder bounded to 192 MB could not decode the bomb (400 MB of pixels at least): a
      // refusal that is IMAGE_TOO_LARGE, not the memory bound's IMAGE_UNREADABLE, came from the header.
      const tight = startImageProcessor({ concurrency: 1, memoryMb: 192, timeoutMs: 30_000, heic: true, log: silent });
      try {
        const bomb = pngBomb(20_000);
        expect(bomb.length).toBeLessThan(1_000_000);
        expect(await refusal(tight.process(bomb, 'image/png', 'fit'))).toMatchObject({ code: 'IMAGE_TOO_LARGE' });
        const decoders = decoderPids();
        // 7100 x 7100 is under the side cap and over 50 megapixels.
        expect(await refusal(tight.process(pngBomb(7100), 'image/png', 'square'))).toMatchObject({ code: 'IMAGE_TOO_LARGE' });
        const strip = await sharp({ create: { width: 13_000, height: 10, channels: 3, background: colours.background } })
          .jpeg()
          .toBuffer();
        expect(await refusal(tight.process(strip, 'image/jpeg', 'fit'))).toMatchObject({ code: 'IMAGE_TOO_LARGE' });
        // Refusals are answers, not crashes: the decoder that gave them processes the next image.
        expect((await tight.process(await markedImage(64, 48).jpeg().toBuffer(), 'image/jpeg', 'fit')).width).toBe(64);
        expect(decoderPids()).toEqual(decoders);
      } finally {
        await tight.close();
      }
    });

    it('refuses noise behind a JPEG signature, a truncated JPEG and content of another type than declared', async () => {
      expect((await refusal(processor.process(noiseWithJpegSignature(200_000), 'image/jpeg', 'fit'))).code).toBe('IMAGE_UNREADABLE');
      const jpeg = await markedImage(800, 600).jpeg().toBuffer();
      expect((await refusal(processor.process(jpeg.subarray(0, Math.floor(jpeg.length / 2)), 'image/jpeg', 'fit'))).code).toBe(
        'IMAGE_UNREADABLE',
      );
      expect((await refusal(processor.process(jpeg, 'image/png', 'fit'))).code).toBe('IMAGE_UNREADABLE');
      // Decoders outside the allowlist never run, even for a well-formed file: GIF, TIFF.
      for (const format of ['gif', 'tiff'] as const) {
        const other = await markedImage(64, 64).toFormat(format).toBuffer();
        expect((await refusal(processor.process(other, 'image/jpeg', 'fit'))).code).toBe('IMAGE_UNREADABLE');
        expect((await refusal(processor.process(other, `image/${format}`, 'fit'))).code).toBe('IMAGE_UNREADABLE');
      }
    });
  });
});

describe('decoder processes', () => {
  let photo: Buffer;
  const small = () => markedImage(64, 48).jpeg().toBuffer();
  beforeAll(async () => {
    photo = await photo12mp();
  });

  /** A processor with one decoder, warmed with a small image; its decoder's pid and resident size at rest. */
  async function oneDecoder(bounds: { memoryMb: number; timeoutMs: number }) {
    const processor = startImageProcessor({ concurrency: 1, heic: true, log: silent, ...bounds });
    await processor.process(await small(), 'image/jpeg', 'fit');
    const [pid] = decoderPids();
    expect(pid).toBeDefined();
    return { processor, pid: pid as number, restMb: residentMb(pid as number) };
  }

  it('run in the idle scheduling class (below the API: only on CPU time nothing else wants), one per concurrency slot', async () => {
    const processor = startImageProcessor({ concurrency: 2, memoryMb: 512, timeoutMs: 30_000, heic: true, log: silent });
    try {
      const images = await Promise.all([1, 2, 3].map(async () => processor.process(await small(), 'image/jpeg', 'fit')));
      expect(images.map((image) => image.width)).toEqual([64, 64, 64]);
      const pids = decoderPids();
      expect(pids).toHaveLength(2);
      // /proc/<pid>/stat field 41, the scheduling policy: 5 is SCHED_IDLE.
      const policy = (pid: number) => {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
      };
      for (const pid of pids) expect(policy(pid)).toBe(5);
    } finally {
      await processor.close();
    }
  });

  it('a decoder killed mid-image fails that image alone, and the next image processes', async () => {
    const { processor, pid, restMb } = await oneDecoder({ memoryMb: 1024, timeoutMs: 60_000 });
    try {
      const killed = processor.process(photo, 'image/jpeg', 'fit');
      const next = processor.process(await small(), 'image/jpeg', 'square');
      await until(() => residentMb(pid) > restMb + 20, 'the decoder decoding the photo');
      process.kill(pid, 'SIGKILL');
      expect(await refusal(killed)).toMatchObject({ code: 'IMAGE_UNREADABLE', message: 'the decoder ended (SIGKILL)' });
      expect(sizes(await next)).toEqual(['48x48 image/webp', '48x48 image/jpeg']);
      expect(decoderPids()).not.toContain(pid);
    } finally {
      await processor.close();
    }
  });

  it('a decoder past its CPU time bound is killed and the image refused; the next image processes', async () => {
    const { processor, pid } = await oneDecoder({ memoryMb: 1024, timeoutMs: 200 });
    // In the idle class a decoder gets no CPU at all while other processes want it (a busy
    // machine), and is then replaced as starved after four times the bound of wall time, which is
    // another rule (below). Here it runs as an ordinary process at the highest nice priority (as
    // root; the tests' processes and any others run at 0), so it gets most of a core however busy
    // the machine, and its CPU time bound is what ends it. At nice 0, beside two busy processes and
    // the suite, it got under a quarter of a core: 200 ms of CPU took over the 800 ms of wall time
    // after which a decoder counts as starved. Every thread of it: a policy and a nice value are
    // each thread's own, and the decoding runs on threads the process started in the idle class
    // (changing the main thread alone still let the starvation rule answer, beside two busy
    // processes); threads started later take their starter's.
    if (existsSync('/usr/bin/chrt')) execFileSync('/usr/bin/chrt', ['--all-tasks', '--other', '-p', '0', String(pid)]);
    for (const thread of readdirSync(`/proc/${pid}/task`)) os.setPriority(Number(thread), -20);
    try {
      const slow = processor.process(photo, 'image/jpeg', 'fit'); // about 0.7 s of CPU
      const next = processor.process(await small(), 'image/jpeg', 'fit');
      expect(await refusal(slow)).toMatchObject({ code: 'IMAGE_UNREADABLE', message: 'the decoder took over 200 ms of CPU' });
      expect((await next).width).toBe(64);
      await until(() => !decoderPids().includes(pid), 'the killed decoder gone');
    } finally {
      await processor.close();
    }
  });

  it('a decoder that stops answering is replaced after four times the bound, and its image is tried again later (not refused)', async () => {
    const { processor, pid, restMb } = await oneDecoder({ memoryMb: 1024, timeoutMs: 1500 });
    try {
      const stuck = processor.process(photo, 'image/jpeg', 'fit');
      const next = processor.process(await small(), 'image/jpeg', 'fit');
      await until(() => residentMb(pid) > restMb + 20, 'the decoder decoding the photo');
      process.kill(pid, 'SIGSTOP'); // no more progress and no CPU used, as a decoder starved or stuck waiting
      const error = await stuck.then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(ImageRefusal);
      expect((error as Error).message).toMatch(/did not answer within 6000 ms/);
      expect((await next).width).toBe(64);
      await until(() => !decoderPids().includes(pid), 'the stuck decoder gone');
    } finally {
      await processor.close();
    }
  });

  it('a decoder past its memory bound is killed; the next image processes', async () => {
    // Bounded a little above its size at rest: a 12-megapixel decode does not fit, a small image does.
    const { processor, pid, restMb } = await oneDecoder({ memoryMb: 512, timeoutMs: 60_000 });
    await processor.close();
    const bound = Math.ceil(restMb) + 25;
    const tight = startImageProcessor({ concurrency: 1, memoryMb: bound, timeoutMs: 60_000, heic: true, log: silent });
    try {
      const error = await refusal(tight.process(photo, 'image/jpeg', 'fit'));
      expect(error.code).toBe('IMAGE_UNREADABLE');
      expect(error.message).toMatch(new RegExp(`^the decoder used \\d+ MB \\(over ${bound} MB\\)$`));
      expect((await tight.process(await small(), 'image/jpeg', 'fit')).width).toBe(64);
      expect(decoderPids()).not.toContain(pid);
    } finally {
      await tight.close();
    }
  });
});
