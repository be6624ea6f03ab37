// Finished assets made through the public upload flow: presign, PUT to the signed URL, complete.
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import type { TestUser } from './users.ts';

export const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('fake image body for tests')]);
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
