// S3_PUBLIC_URL: signed URLs name the address clients reach the store at (a phone on the Wi-Fi),
// while the server talks to the store at S3_ENDPOINT. Here the two differ by host name
// (localhost vs 127.0.0.1, one real store): the upload through the public URL verifies and completes.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { uploadAsset } from '../../helpers/uploads.ts';
import { userAtLevel } from '../../helpers/users.ts';

let app: TestApp;
const publicUrl = inject('s3Endpoint').replace('127.0.0.1', 'localhost');
beforeAll(async () => {
  app = await startTestApp({ S3_PUBLIC_URL: publicUrl });
});
afterAll(() => app.close());

describe('S3_PUBLIC_URL', () => {
  it('signs upload URLs for the public address, and uploads through it complete', async () => {
    const user = await userAtLevel(app, 2);
    const intent = await app.post(
      '/uploads/presign',
      { purpose: 'profile_photo', contentType: 'image/png', contentLength: 10 },
      { token: user.token },
    );
    expect(intent.body.data.uploadUrl.startsWith(`${publicUrl}/`)).toBe(true);
    const assetId = await uploadAsset(app, user);
    expect(assetId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('defaults share and legal URLs to the API port', async () => {
    const { loadConfig } = await import('../../../config.ts');
    expect(loadConfig({ PORT: '3410', JWT_SECRET: 'x' }).publicWebBaseUrl).toBe('http://localhost:3410');
    expect(loadConfig({ PORT: '3410', JWT_SECRET: 'x', S3_PORT: '9100' }).s3.publicUrl).toBe('http://127.0.0.1:9100');
  });

  it('refuses a URL setting over 1024 characters and a TERMS_VERSION over 64 (the document bounds the URLs and the version)', async () => {
    const { loadConfig } = await import('../../../config.ts');
    const long = `https://opinion.example/${'a'.repeat(1001)}`;
    expect(() => loadConfig({ JWT_SECRET: 'x', PUBLIC_WEB_BASE_URL: long })).toThrow(
      /PUBLIC_WEB_BASE_URL must be an http\(s\) URL of at most 1024 characters/,
    );
    expect(() => loadConfig({ JWT_SECRET: 'x', S3_PUBLIC_URL: long })).toThrow(/S3_PUBLIC_URL must be/);
    expect(loadConfig({ JWT_SECRET: 'x', PUBLIC_WEB_BASE_URL: long.slice(0, 1024) }).publicWebBaseUrl).toHaveLength(1024);
    expect(() => loadConfig({ JWT_SECRET: 'x', TERMS_VERSION: 'v'.repeat(65) })).toThrow(/TERMS_VERSION must be at most 64 characters/);
    expect(loadConfig({ JWT_SECRET: 'x', TERMS_VERSION: 'v'.repeat(64) }).termsVersion).toHaveLength(64);
  });
});
