// Finished assets made through the public upload flow: presign, PUT to the signed URL, complete.
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import type { TestUser } from './users.ts';

/** A 1x1 PNG. */
export const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** A small real file of each accepted type (images are decoded after upload: contract part 18). */
export const samples = {
  'image/png': png,
  'image/jpeg': Buffer.from(
    '/9j/2wBDAAYEBQYFBAYGBQYHBwYIChAKCgkJChQODwwQFxQYGBcUFhYaHSUfGhsjHBYWICwgIyYnKSopGR8tMC0oMCUoKSj/2wBDAQcHBwoIChMKChMoGhYaKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCj/wAARCAACAAIDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAb/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFQEBAQAAAAAAAAAAAAAAAAAABQf/xAAUEQEAAAAAAAAAAAAAAAAAAAAA/9oADAMBAAIRAxEAPwCKAAK2/9k=',
    'base64',
  ),
  'image/webp': Buffer.from('UklGRjoAAABXRUJQVlA4IC4AAACQAQCdASoCAAIAAUAmJaACdLoAA5gA/vCbQ/4DdfFtMv/ucD/uyf/2yf+pAAAA', 'base64'),
  'image/heic': Buffer.from(
    'AAAAHGZ0eXBoZWljAAAAAG1pZjFoZWljbWlhZgAAAa1tZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0AAAAAAAAAAAAAAAAAAAAAA5waXRtAAAAAAACAAAAEGlkYXQAAAAAAAIAAgAAADhpbG9jAQAAAERAAAIAAQAAAAAAAAHRAAEAAAAAAAAAMgACAAEAAAAAAAAAAQAAAAAAAAAIAAAAOGlpbmYAAAAAAAIAAAAVaW5mZQIAAAEAAQAAaHZjMQAAAAAVaW5mZQIAAAAAAgAAZ3JpZAAAAADYaXBycAAAALZpcGNvAAAAdmh2Y0MBA3AAAAAAAAAAAAAe8AD8/fj4AAAPAyAAAQAYQAEMAf//A3AAAAMAkAAAAwAAAwAeugJAIQABACpCAQEDcAAAAwCQAAADAAADAB6gIIEFluqumubgQEDAgAAAAwCAAAADAIQiAAEABkQBwXPBiQAAABRpc3BlAAAAAAAAAEAAAABAAAAAFGlzcGUAAAAAAAAAAgAAAAIAAAAQcGl4aQAAAAADCAgIAAAAGmlwbWEAAAAAAAAAAgABAoECAAICA4QAAAAaaXJlZgAAAAAAAAAOZGltZwACAAEAAQAAADptZGF0AAAALigBrxMhYmNA9Sci//9Dan/qPCf9hdlhZ3K6wVvy+sD2ZJvA86qRnoCHaacwFXg=',
    'base64',
  ),
  'application/pdf': Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n'),
} as const;

/** Bytes that start like a JPEG and are noise after: the signature check passes, decoding does not. */
export const jpegNoise = Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), Buffer.alloc(512, 0x5a)]);
export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export async function presign(app: TestApp, user: TestUser, purpose = 'profile_photo', bytes: Buffer = png, contentType = 'image/png') {
  const response = await app.post('/uploads/presign', { purpose, contentType, contentLength: bytes.length }, { token: user.token });
  expect(response.status).toBe(200);
  return response.body.data as { uploadId: string; uploadUrl: string; method: string; headers: Record<string, string>; expiresAt: string };
}

export async function putObject(url: string, bytes: Buffer, headers: Record<string, string>) {
  return fetch(url, { method: 'PUT', body: new Uint8Array(bytes), headers });
}

export async function uploadAsset(
  app: TestApp,
  user: TestUser,
  purpose = 'profile_photo',
  bytes: Buffer = png,
  contentType = 'image/png',
): Promise<string> {
  const intent = await presign(app, user, purpose, bytes, contentType);
  expect((await putObject(intent.uploadUrl, bytes, intent.headers)).status).toBe(200);
  const complete = await app.post(
    '/uploads/complete',
    { uploadId: intent.uploadId, purpose, checksum: sha256(bytes) },
    { token: user.token },
  );
  expect(complete.status).toBe(201);
  return complete.body.data.assetId;
}
