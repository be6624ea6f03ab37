// Real PNG files for the demo world, drawn in code (no binary fixtures): an avatar per person and a
// picture per media post. PNG: signature, IHDR, one zlib-compressed IDAT of filtered RGB rows, IEND,
// each chunk with its CRC-32, as the uploads check expects of an image/png body.
import { crc32, deflateSync } from 'node:zlib';

type Rgb = [number, number, number];

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([head, body, crc]);
}

export function png(width: number, height: number, pixel: (x: number, y: number) => Rgb): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits per channel, RGB, deflate, no filter method variants, no interlace
  const rows = Buffer.alloc(height * (1 + width * 3));
  for (let y = 0; y < height; y += 1) {
    const row = y * (1 + width * 3);
    rows[row] = 0; // filter: none
    for (let x = 0; x < width; x += 1) rows.set(pixel(x, y), row + 1 + x * 3);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const mix = (a: Rgb, b: Rgb, t: number): Rgb => [0, 1, 2].map((i) => Math.round(a[i as 0] + (b[i as 0] - a[i as 0]) * t)) as Rgb;

/** A round avatar: a head and shoulders in `tone` on a `background` disc, 256 × 256. */
export function avatar(background: Rgb, tone: Rgb): Buffer {
  const size = 256;
  return png(size, size, (x, y) => {
    const head = (x - 128) ** 2 + (y - 104) ** 2 <= 46 ** 2;
    const shoulders = (x - 128) ** 2 / 92 ** 2 + (y - 250) ** 2 / 90 ** 2 <= 1;
    if (head || shoulders) return tone;
    return mix(background, [255, 255, 255], y / size / 3);
  });
}

/** A landscape, 640 × 360: a sky from `sky` to white, a sun, and two ridges of hills. */
export function landscape(sky: Rgb, hills: Rgb, sun: Rgb): Buffer {
  const [width, height] = [640, 360];
  return png(width, height, (x, y) => {
    const far = 210 + 40 * Math.sin(x / 70) + 15 * Math.sin(x / 23);
    const near = 270 + 30 * Math.sin(x / 110 + 1) + 10 * Math.sin(x / 31);
    if (y > near) return mix(hills, [0, 0, 0], 0.25);
    if (y > far) return hills;
    if ((x - 470) ** 2 + (y - 110) ** 2 <= 42 ** 2) return sun;
    return mix(sky, [255, 255, 255], y / height);
  });
}
