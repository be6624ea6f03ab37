// Finished assets made through the public upload flow: presign, PUT to the signed URL, complete.
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import type { TestUser } from './users.ts';

/** A 1x1 PNG. */
export const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/** The start of a file of each accepted type: enough for its signature (contract section 6). */
export const samples = {
  'image/png': png,
  'image/jpeg': Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), Buffer.alloc(32)]),
  'image/webp': Buffer.concat([Buffer.from('RIFF'), Buffer.from([36, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(28)]),
  'image/heic': Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypheic'), Buffer.alloc(4), Buffer.from('mif1heic'), Buffer.alloc(32)]),
  'application/pdf': Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n'),
} as const;
export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export async function presign(app: TestApp, user: TestUser, purpose = 'profile_photo', bytes: Buffer = png, contentType = 'image/png') {
  const response = await app.post('/uploads/presign', { purpose, contentType, contentLength: bytes.length }, { token: user.token });
  expect(response.status).toBe(200);
  return response.body.data as { uploadId: string; uploadUrl: string; method: string; headers: Record<string, string>; expiresAt: string };
}

export async function putObject(url: string, bytes: Buffer, headers: Record<string, string>) {
  return fetch(url, { method: 'PUT', body: new Uint8Array(bytes), headers });
}

export async function uploadAsset(app: TestApp, user: TestUser, purpose = 'profile_photo', bytes: Buffer = png, contentType = 'image/png'): Promise<string> {
  const intent = await presign(app, user, purpose, bytes, contentType);
  expect((await putObject(intent.uploadUrl, bytes, intent.headers)).status).toBe(200);
  const complete = await app.post('/uploads/complete', { uploadId: intent.uploadId, purpose, checksum: sha256(bytes) }, { token: user.token });
  expect(complete.status).toBe(201);
  return complete.body.data.assetId;
}
