// Real images for the image tests, made here: sharp draws them, exiftool writes what a phone writes
// (EXIF orientation, GPS, make, XMP, IPTC, comments, an embedded thumbnail) and reads back what a
// variant carries, heif-enc makes HEIC files (and boxes are added to give one an irot transform).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { engines } from './engines.ts';

const run = promisify(execFile);

export const colours = {
  background: { r: 32, g: 80, b: 160 },
  marker: { r: 255, g: 0, b: 0 },
  left: { r: 0, g: 200, b: 0 },
  right: { r: 250, g: 220, b: 0 },
} as const;
type Rgb = { r: number; g: number; b: number };

/** A width x height image of the background colour with a marker square in its stored top-left corner (a tenth of the shorter side). */
export function markedImage(width: number, height: number) {
  const side = Math.max(4, Math.round(Math.min(width, height) / 10));
  return sharp({ create: { width, height, channels: 3, background: colours.background } }).composite([
    { input: { create: { width: side, height: side, channels: 3, background: colours.marker } }, left: 0, top: 0 },
  ]);
}

/** A wide image: a band of `left` colour on its left, of `right` on its right, the background between (a centred square crop holds only the background). */
export function bandedImage(width: number, height: number, band: number) {
  return sharp({ create: { width, height, channels: 3, background: colours.background } }).composite([
    { input: { create: { width: band, height, channels: 3, background: colours.left } }, left: 0, top: 0 },
    { input: { create: { width: band, height, channels: 3, background: colours.right } }, left: width - band, top: 0 },
  ]);
}

/** A photo-like 4000 x 3000 JPEG (12 MP): smooth colour fields with grain, as a camera's. */
export async function photo12mp(): Promise<Buffer> {
  const fields = await sharp({
    create: { width: 200, height: 150, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } },
  })
    .resize(4000, 3000, { kernel: 'cubic' })
    .raw()
    .toBuffer();
  const grain = await sharp({
    create: { width: 4000, height: 3000, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 8, sigma: 8 } },
  })
    .raw()
    .toBuffer();
  for (let i = 0; i < fields.length; i++) fields[i] = Math.min(255, (fields[i] as number) + (grain[i] as number));
  return sharp(fields, { raw: { width: 4000, height: 3000, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

async function withTemp<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'opinion-image-test-'));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What a phone writes, and more: GPS, make, model, XMP, IPTC, comments, a thumbnail; `orientation` as EXIF's number (1-8). */
export async function withPhoneMetadata(jpeg: Buffer, orientation: number): Promise<Buffer> {
  return withTemp(async (dir) => {
    const file = path.join(dir, 'photo.jpg');
    const thumbnail = path.join(dir, 'thumb.jpg');
    await writeFile(file, jpeg);
    await sharp({ create: { width: 160, height: 120, channels: 3, background: colours.marker } })
      .jpeg()
      .toFile(thumbnail);
    await run(engines.exiftool, [
      '-q',
      '-overwrite_original',
      '-n',
      `-EXIF:Orientation=${orientation}`,
      '-GPSLatitude=51.5007',
      '-GPSLatitudeRef=N',
      '-GPSLongitude=0.1246',
      '-GPSLongitudeRef=W',
      '-Make=Acme',
      '-Model=Phone 12',
      '-DateTimeOriginal=2026:11:01 12:00:00',
      '-XMP:Creator=Someone',
      '-IPTC:Keywords=home',
      '-Comment=a secret comment',
      '-EXIF:UserComment=another secret',
      `-ThumbnailImage<=${thumbnail}`,
      file,
    ]);
    return readFile(file);
  });
}

/** exiftool's reading of each of `images` (one run): every tag it finds, by group:name. */
export async function readMetadataOfEach(images: Buffer[]): Promise<Record<string, unknown>[]> {
  return withTemp(async (dir) => {
    const files = images.map((_, i) => path.join(dir, `image-${i}`));
    await Promise.all(images.map((bytes, i) => writeFile(files[i] as string, bytes)));
    const { stdout } = await run(engines.exiftool, ['-j', '-G', '-a', '-n', ...files]);
    const read = JSON.parse(stdout) as Record<string, unknown>[];
    return files.map((file) => read.find((entry) => entry.SourceFile === file) as Record<string, unknown>);
  });
}

export async function readMetadata(bytes: Buffer): Promise<Record<string, unknown>> {
  return (await readMetadataOfEach([bytes]))[0] as Record<string, unknown>;
}

/**
 * The tags of `metadata` that say something about the photo or its author beyond its pixels:
 * anything of the EXIF, GPS, XMP, IPTC, ICC profile, maker-note or Photoshop groups, comments
 * and thumbnails wherever they are. exiftool's own (File, ExifTool) and the formats' structure
 * (JFIF's version and density, RIFF's chunk sizes) are not.
 */
export function revealingTags(metadata: Record<string, unknown>): string[] {
  return Object.keys(metadata).filter((key) => {
    const [group = '', name = ''] = key.split(':');
    if (group === 'SourceFile' || group === 'ExifTool' || /^File(Modify|Access|InodeChange)Date$/.test(name)) return false;
    return (
      /^(EXIF|GPS|XMP|XMP-\w+|IPTC|ICC_Profile|ICC-\w+|MakerNotes|Photoshop)$/.test(group) ||
      /exif|comment|thumbnail|gps|make|model|orientation|creator|keywords|date/i.test(name)
    );
  });
}

/** The colour nearest to `pixel` among `colours`' names. */
export function nearestColour(pixel: Rgb): keyof typeof colours {
  let best: keyof typeof colours = 'background';
  let distance = Infinity;
  for (const [name, colour] of Object.entries(colours) as [keyof typeof colours, Rgb][]) {
    const d = (pixel.r - colour.r) ** 2 + (pixel.g - colour.g) ** 2 + (pixel.b - colour.b) ** 2;
    if (d < distance) [best, distance] = [name, d];
  }
  return best;
}

/** The nearest named colour of each corner of an encoded image (a point 3% in from each edge). */
export async function corners(
  bytes: Buffer,
): Promise<{ width: number; height: number; topLeft: string; topRight: string; bottomLeft: string; bottomRight: string }> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (fx: number, fy: number) => {
    const x = Math.min(info.width - 1, Math.floor(fx * info.width));
    const y = Math.min(info.height - 1, Math.floor(fy * info.height));
    const i = (y * info.width + x) * info.channels;
    return nearestColour({ r: data[i] as number, g: data[i + 1] as number, b: data[i + 2] as number });
  };
  return {
    width: info.width,
    height: info.height,
    topLeft: at(0.03, 0.03),
    topRight: at(0.97, 0.03),
    bottomLeft: at(0.03, 0.97),
    bottomRight: at(0.97, 0.97),
  };
}

/** A HEIC made by Debian's heif-enc from a JPEG (which copies the JPEG's EXIF, orientation included, and writes no irot); `options`: heif-enc's; `images`: top-level images (copies). */
export async function heicFrom(jpeg: Buffer, options: string[] = [], images = 1): Promise<Buffer> {
  return withTemp(async (dir) => {
    await writeFile(path.join(dir, 'in.jpg'), jpeg);
    await run(engines.heifEnc, [
      '-q',
      '60',
      ...options,
      ...Array.from({ length: images }, () => path.join(dir, 'in.jpg')),
      '-o',
      path.join(dir, 'out.heic'),
    ]);
    return readFile(path.join(dir, 'out.heic'));
  });
}

interface Box {
  type: string;
  start: number;
  end: number;
  /** Where the children start (after the header, and a FullBox's version and flags). */
  body: number;
}

function boxes(file: Buffer, from: number, to: number, fullBox: Set<string> = new Set(['meta', 'ipma', 'iloc', 'pitm'])): Box[] {
  const found: Box[] = [];
  for (let at = from; at < to;) {
    const size = file.readUInt32BE(at);
    const type = file.toString('latin1', at + 4, at + 8);
    found.push({ type, start: at, end: at + size, body: at + 8 + (fullBox.has(type) ? 4 : 0) });
    at += size;
  }
  return found;
}

function child(file: Buffer, parent: Box, type: string): Box {
  const box = boxes(file, parent.body, parent.end).find((b) => b.type === type);
  if (!box) throw new Error(`no ${type} box in ${parent.type}`);
  return box;
}

/**
 * A HEIC whose primary image carries an irot transform: displayed turned by `clockwise` degrees
 * (90, 180, 270), as a phone stores a photo taken sideways (iPhones write irot, and EXIF
 * orientation beside it). The box is added to ipco, associated in ipma, the enclosing sizes grow and
 * the item locations after it shift.
 */
export function withIrot(original: Buffer, clockwise: 90 | 180 | 270): Buffer {
  const heic = Buffer.from(original); // edited in place below
  const top = boxes(heic, 0, heic.length);
  const meta = top.find((b) => b.type === 'meta') as Box;
  const mdat = top.find((b) => b.type === 'mdat') as Box;
  if (!meta || !mdat || mdat.start < meta.start) throw new Error('expected meta before mdat');
  const primary = heic.readUInt16BE(child(heic, meta, 'pitm').body);
  const iprp = child(heic, meta, 'iprp');
  const ipco = child(heic, iprp, 'ipco');
  const ipma = child(heic, iprp, 'ipma');
  const iloc = child(heic, meta, 'iloc');
  const propertyIndex = boxes(heic, ipco.body, ipco.end).length + 1;
  // irot: the angle anti-clockwise, in quarter turns.
  const irot = Buffer.from([0, 0, 0, 9, ...Buffer.from('irot', 'latin1'), ((360 - clockwise) / 90) & 3]);
  if (heic[ipma.start + 8] !== 0 || (heic.readUInt32BE(ipma.start + 8) & 1) !== 0)
    throw new Error('expected ipma version 0 with 7-bit indexes');

  // The new association (essential, 7-bit index) goes at the end of the primary item's entry.
  const entries = heic.readUInt32BE(ipma.body);
  let at = ipma.body + 4;
  let insertAt = -1;
  for (let e = 0; e < entries; e++) {
    const item = heic.readUInt16BE(at);
    const count = heic.readUInt8(at + 2);
    if (item === primary) {
      insertAt = at + 3 + count;
      heic.writeUInt8(count + 1, at + 2);
    }
    at += 3 + count;
  }
  if (insertAt < 0) throw new Error('primary item has no ipma entry');
  const grown = irot.length + 1;

  // Item locations (construction method 0) are file offsets: those past meta move by `grown`.
  const version = heic.readUInt8(iloc.start + 8);
  const sizes = heic.readUInt8(iloc.body);
  const offsetSize = sizes >> 4;
  const lengthSize = sizes & 15;
  const baseOffsetSize = heic.readUInt8(iloc.body + 1) >> 4;
  const indexSize = version >= 1 ? heic.readUInt8(iloc.body + 1) & 15 : 0;
  const readN = (pos: number, n: number) => (n === 0 ? 0 : n === 4 ? heic.readUInt32BE(pos) : Number(heic.readBigUInt64BE(pos)));
  const writeN = (pos: number, n: number, value: number) =>
    n === 4 ? heic.writeUInt32BE(value, pos) : heic.writeBigUInt64BE(BigInt(value), pos);
  let p = iloc.body + 2;
  const items = version < 2 ? heic.readUInt16BE(p) : heic.readUInt32BE(p);
  p += version < 2 ? 2 : 4;
  for (let i = 0; i < items; i++) {
    p += version < 2 ? 2 : 4;
    const method = version >= 1 ? heic.readUInt16BE(p) & 15 : 0;
    if (version >= 1) p += 2;
    p += 2; // data reference index
    const basePos = p;
    const base = readN(p, baseOffsetSize);
    p += baseOffsetSize;
    const extents = heic.readUInt16BE(p);
    p += 2;
    if (method === 0 && baseOffsetSize > 0 && base >= meta.end) writeN(basePos, baseOffsetSize, base + grown);
    for (let x = 0; x < extents; x++) {
      p += indexSize;
      const offset = readN(p, offsetSize);
      if (method === 0 && baseOffsetSize === 0 && offset >= meta.end) writeN(p, offsetSize, offset + grown);
      p += offsetSize + lengthSize;
    }
  }

  const out = Buffer.concat([
    heic.subarray(0, ipco.end),
    irot,
    heic.subarray(ipco.end, insertAt),
    Buffer.from([0x80 | propertyIndex]),
    heic.subarray(insertAt),
  ]);
  // Sizes: ipco and ipma grow by what each gained, iprp and meta by both (ipma sits after ipco, so its start moved by the irot).
  out.writeUInt32BE(ipco.end - ipco.start + irot.length, ipco.start);
  out.writeUInt32BE(ipma.end - ipma.start + 1, ipma.start + irot.length);
  out.writeUInt32BE(iprp.end - iprp.start + grown, iprp.start);
  out.writeUInt32BE(meta.end - meta.start + grown, meta.start);
  return out;
}

/** A HEIC whose primary image's header (ispe) claims width x height: what heif-info reads, whatever the coded pixels. */
export function withClaimedSize(original: Buffer, width: number, height: number): Buffer {
  const heic = Buffer.from(original);
  const meta = boxes(heic, 0, heic.length).find((b) => b.type === 'meta') as Box;
  const ipco = child(heic, child(heic, meta, 'iprp'), 'ipco');
  const ispe = child(heic, { ...ipco, body: ipco.start + 8 }, 'ispe');
  heic.writeUInt32BE(width, ispe.start + 12);
  heic.writeUInt32BE(height, ispe.start + 16);
  return heic;
}

/**
 * A PNG bomb: `side` x `side` pixels (1-bit grey, so the file stays small) that a decoder would
 * expand to side² bytes or more. A valid file: only its size is hostile.
 */
export function pngBomb(side: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = (crcTable[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(typed));
    return Buffer.concat([length, typed, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header.writeUInt8(1, 8); // bit depth 1
  header.writeUInt8(0, 9); // greyscale
  const row = Math.ceil(side / 8) + 1; // filter byte + packed pixels
  const pixels = deflateSync(Buffer.alloc(row * side), { level: 9 });
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Random bytes behind a JPEG signature (SOI and an APP0 marker): passes a signature check, decodes to nothing. */
export function noiseWithJpegSignature(size: number): Buffer {
  const noise = Buffer.alloc(size);
  for (let i = 0; i < size; i++) noise[i] = Math.floor(Math.random() * 256);
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]).copy(noise, 0);
  return noise;
}
