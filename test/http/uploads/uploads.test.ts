// Uploads through signed URLs against a real S3-compatible store (spec 4.3; contract section 6).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { png, presign as presignAs, putObject as put, samples, sha256, uploadAsset as uploadAs } from '../../helpers/uploads.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const presign = (user: TestUser, ...rest: [string?, Buffer?, string?]) => presignAs(app, user, ...rest);
const uploadAsset = (user: TestUser, ...rest: [string?, Buffer?, string?]) => uploadAs(app, user, ...rest);

describe('presign → PUT → complete', () => {
  it('returns a signed PUT URL, accepts the bytes there, and completes into an asset', async () => {
    const user = await userAtLevel(app, 2);
    const intent = await presign(user);
    expect(intent).toMatchObject({ method: 'PUT', headers: { 'content-type': 'image/png' } });
    expect(Date.parse(intent.expiresAt) - Date.now()).toBeGreaterThan(14 * 60 * 1000);
    expect(Date.parse(intent.expiresAt) - Date.now()).toBeLessThanOrEqual(15 * 60 * 1000);
    expect(intent.uploadUrl).not.toContain(user.id.replace(/-/g, '') + 'x');
    expect((await put(intent.uploadUrl, png, intent.headers)).status).toBe(200);
    const complete = await app.post(
      '/uploads/complete',
      { uploadId: intent.uploadId, purpose: 'profile_photo', checksum: sha256(png).toUpperCase() },
      { token: user.token },
    );
    expect(complete.status).toBe(201);
    expect(complete.body.data).toEqual({
      assetId: expect.any(String),
      purpose: 'profile_photo',
      contentType: 'image/png',
      size: png.length,
      checksum: sha256(png),
      status: 'ready',
      width: 1,
      height: 1,
      placeholder: expect.any(String),
      variants: [
        { width: 1, height: 1, contentType: 'image/webp', url: expect.any(String) },
        { width: 1, height: 1, contentType: 'image/jpeg', url: expect.any(String) },
      ],
    });
    const pdf = await uploadAsset(user, 'document', samples['application/pdf'], 'application/pdf');
    const document = await app.get(`/uploads/${pdf}`, { token: user.token });
    expect(document.body.data).toMatchObject({ status: 'ready', width: null, height: null, placeholder: null, variants: [] });
  });

  it('validates purpose, content type and size per purpose, and needs level 2', async () => {
    const user = await userAtLevel(app, 2);
    const cases: [Record<string, unknown>, string][] = [
      [{ purpose: 'avatar', contentType: 'image/png', contentLength: 10 }, 'purpose'],
      [{ purpose: 'profile_photo', contentType: 'application/pdf', contentLength: 10 }, 'contentType'],
      [{ purpose: 'document', contentType: 'image/png', contentLength: 10 }, 'contentType'],
      [{ purpose: 'post_image', contentType: 'image/webp', contentLength: 10 * 1024 * 1024 + 1 }, 'contentLength'],
      [{ purpose: 'document', contentType: 'application/pdf', contentLength: 25 * 1024 * 1024 + 1 }, 'contentLength'],
      [{ purpose: 'hub_photo', contentType: 'image/heic', contentLength: 0 }, 'contentLength'],
    ];
    for (const [body, field] of cases) {
      const response = await app.post('/uploads/presign', body, { token: user.token });
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error.details.fields, JSON.stringify(body)).toHaveProperty(field);
    }
    const pdf = await app.post(
      '/uploads/presign',
      { purpose: 'document', contentType: 'application/pdf', contentLength: 25 * 1024 * 1024 },
      { token: user.token },
    );
    expect(pdf.status).toBe(200);
    const anonymous = await anonymousUser(app);
    expect(
      (
        await app.post(
          '/uploads/presign',
          { purpose: 'profile_photo', contentType: 'image/png', contentLength: 10 },
          { token: anonymous.token },
        )
      ).body.error.code,
    ).toBe('PROFILE_BASICS_REQUIRED');
  });

  it('answers every completion failure with its 409 code and creates no asset', async () => {
    const user = await userAtLevel(app, 2);
    const complete = (uploadId: string, purpose: string, checksum: string, token = user.token) =>
      app.post('/uploads/complete', { uploadId, purpose, checksum }, { token });

    const missing = await presign(user);
    expect((await complete(missing.uploadId, 'profile_photo', sha256(png))).body.error.code).toBe('UPLOAD_OBJECT_MISSING');

    const wrongBytes = await presign(user);
    await put(wrongBytes.uploadUrl, png, wrongBytes.headers);
    expect((await complete(wrongBytes.uploadId, 'profile_photo', sha256(Buffer.from('other')))).body.error.code).toBe(
      'UPLOAD_CHECKSUM_MISMATCH',
    );
    expect((await complete(wrongBytes.uploadId, 'hub_photo', sha256(png))).body.error.code).toBe('UPLOAD_PURPOSE_MISMATCH');

    const expired = await presign(user);
    await put(expired.uploadUrl, png, expired.headers);
    await app.owner.query(`update app.upload_intents set expires_at = now() - interval '1 second' where id = $1`, [expired.uploadId]);
    const expiredResponse = await complete(expired.uploadId, 'profile_photo', sha256(png));
    expect(expiredResponse.status).toBe(409);
    expect(expiredResponse.body.error.code).toBe('UPLOAD_EXPIRED');

    const other = await userAtLevel(app, 2);
    const notMine = await complete(wrongBytes.uploadId, 'profile_photo', sha256(png), other.token);
    expect(notMine.status).toBe(404);
    expect(notMine.body.error.code).toBe('UPLOAD_NOT_FOUND');
    expect((await complete('00000000-0000-4000-8000-000000000000', 'profile_photo', sha256(png))).status).toBe(404);
    expect((await complete(wrongBytes.uploadId, 'profile_photo', 'abc')).status).toBe(422);

    const { rows } = await app.owner.query('select count(*)::int as n from app.assets where owner_id = $1', [user.id]);
    expect(rows[0].n).toBe(0);
  });

  it('accepts a file of each declared type (JPEG, PNG, WebP, HEIC, PDF)', async () => {
    const user = await userAtLevel(app, 2);
    for (const [contentType, bytes] of Object.entries(samples)) {
      const purpose = contentType === 'application/pdf' ? 'document' : 'post_image';
      const assetId = await uploadAsset(user, purpose, bytes, contentType);
      const { rows } = await app.owner.query('select content_type from app.assets where id = $1', [assetId]);
      expect(rows[0].content_type).toBe(contentType);
    }
  });

  it('refuses bytes that are not of the declared type with 409 UPLOAD_CONTENT_MISMATCH, deletes the object, creates no asset', async () => {
    const user = await userAtLevel(app, 2);
    const cases: [string, string, Buffer][] = [
      ['profile_photo', 'image/png', Buffer.from('a text file presigned as a PNG image')],
      ['profile_photo', 'image/jpeg', samples['image/png']],
      ['post_image', 'image/heic', samples['application/pdf']],
      ['document', 'application/pdf', samples['image/jpeg']],
    ];
    for (const [purpose, contentType, bytes] of cases) {
      const intent = await presign(user, purpose, bytes, contentType);
      expect((await put(intent.uploadUrl, bytes, intent.headers)).status).toBe(200);
      const { rows: keys } = await app.owner.query('select object_key from app.upload_intents where id = $1', [intent.uploadId]);
      expect(await app.storage.head(keys[0].object_key)).not.toBeNull();
      const response = await app.post(
        '/uploads/complete',
        { uploadId: intent.uploadId, purpose, checksum: sha256(bytes) },
        { token: user.token },
      );
      expect(response.status, contentType).toBe(409);
      expect(response.body.error).toEqual({
        code: 'UPLOAD_CONTENT_MISMATCH',
        message: 'Uploaded file is not of the declared type.',
        details: {},
      });
      expect(await app.storage.head(keys[0].object_key)).toBeNull();
    }
    const { rows } = await app.owner.query('select count(*)::int as n from app.assets where owner_id = $1', [user.id]);
    expect(rows[0].n).toBe(0);
  });

  it('completes once: a repeat, or a concurrent second completion, is UPLOAD_ALREADY_COMPLETED', async () => {
    const user = await userAtLevel(app, 2);
    const intent = await presign(user);
    await put(intent.uploadUrl, png, intent.headers);
    const body = { uploadId: intent.uploadId, purpose: 'profile_photo', checksum: sha256(png) };
    const results = await Promise.all([1, 2, 3].map(() => app.post('/uploads/complete', body, { token: user.token })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    expect(results.filter((r) => r.status === 409).every((r) => r.body.error.code === 'UPLOAD_ALREADY_COMPLETED')).toBe(true);
    const { rows } = await app.owner.query('select count(*)::int as n from app.assets where upload_id = $1', [intent.uploadId]);
    expect(rows[0].n).toBe(1);
  });

  it('signs the content type and length into the URL (S3 refuses a PUT that differs)', async () => {
    // The embedded store does not verify SigV4 signatures, so the binding is checked in the URL
    // itself: S3, R2 and MinIO reject a request whose signed headers differ.
    const user = await userAtLevel(app, 2);
    const intent = await presign(user);
    const url = new URL(intent.uploadUrl);
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(['content-length', 'content-type', 'host']);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.pathname).toMatch(new RegExp(`/profile_photo/${user.id}/${intent.uploadId}$`));
  });
});

describe('GET /uploads/{assetId}/download-url', () => {
  it('serves the owner, and viewers of a profile that uses the asset; others get 404', async () => {
    const owner = await userAtLevel(app, 2);
    const assetId = await uploadAsset(owner);
    const mine = await app.get(`/uploads/${assetId}/download-url`, { token: owner.token });
    expect(mine.status).toBe(200);
    // An image's download is its JPEG variant, never the uploaded file.
    const downloaded = await fetch(mine.body.data.url);
    expect(downloaded.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await downloaded.arrayBuffer()).subarray(0, 3)).toEqual(Buffer.from('ffd8ff', 'hex'));

    const stranger = await userAtLevel(app, 2);
    const hidden = await app.get(`/uploads/${assetId}/download-url`, { token: stranger.token });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('ASSET_NOT_FOUND');

    await app.patch('/users/me/profile', { profileAssetId: assetId }, { token: owner.token });
    expect((await app.get(`/uploads/${assetId}/download-url`, { token: stranger.token })).status).toBe(200);
    await app.post(`/users/${stranger.id}/block`, undefined, { token: owner.token });
    expect((await app.get(`/uploads/${assetId}/download-url`, { token: stranger.token })).status).toBe(404);
    expect((await app.get('/uploads/not-an-id/download-url', { token: owner.token })).status).toBe(404);
  });
});

describe('profile photos', () => {
  it('sets the photo in the media step and shows a working profilePhotoUrl', async () => {
    const user = await userAtLevel(app, 2);
    const assetId = await uploadAsset(user);
    const media = await app.put('/users/me/onboarding/media', { profileAssetId: assetId }, { token: user.token });
    expect(media.status).toBe(200);
    const profile = await app.get(`/users/by-username/${user.username}`);
    const image = await fetch(profile.body.data.profilePhotoUrl);
    expect(image.status).toBe(200);
    // The 256 px WebP variant, or the largest below it: here the image's own 1 x 1.
    expect(image.headers.get('content-type')).toBe('image/webp');
    expect(profile.body.data.profilePhoto).toMatchObject({
      width: 1,
      height: 1,
      variants: [
        { width: 1, contentType: 'image/webp' },
        { width: 1, contentType: 'image/jpeg' },
      ],
    });
    expect(profile.body.data.profilePhoto.variants[0].url).toBe(profile.body.data.profilePhotoUrl);
  });

  it("accepts only the caller's own completed profile_photo assets", async () => {
    const user = await userAtLevel(app, 2);
    const document = await uploadAsset(user, 'document', samples['application/pdf'], 'application/pdf');
    const other = await userAtLevel(app, 2);
    const othersPhoto = await uploadAsset(other);
    for (const profileAssetId of [document, othersPhoto]) {
      const response = await app.patch('/users/me/profile', { profileAssetId }, { token: user.token });
      expect(response.status).toBe(422);
      expect(response.body.error.details.fields).toHaveProperty('profileAssetId');
    }
  });

  it('deletes the replaced image through a worker job after the replacement commits', async () => {
    const user = await userAtLevel(app, 2);
    const first = await uploadAsset(user);
    const second = await uploadAsset(user, 'profile_photo', Buffer.concat([png, Buffer.from('v2')]));
    await app.patch('/users/me/profile', { profileAssetId: first }, { token: user.token });
    const { rows } = await app.owner.query('select object_key from app.assets where id = $1', [first]);
    const firstKey = rows[0].object_key as string;
    await app.patch('/users/me/profile', { profileAssetId: second }, { token: user.token });
    const jobs = await app.owner.query(
      `select t.identifier, j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id`,
    );
    expect(jobs.rows).toContainEqual({ identifier: 'delete_asset', payload: { assetId: first } });
    expect(await app.storage.head(firstKey)).not.toBeNull();
    await app.runJobs();
    expect(await app.storage.head(firstKey)).toBeNull();
    expect((await app.owner.query('select 1 from app.assets where id = $1', [first])).rowCount).toBe(0);
    const profile = await app.get('/users/me/profile', { token: user.token });
    expect(profile.body.data.editable.profileAssetId).toBe(second);

    // A failed replacement queues nothing.
    await app.owner.query('delete from graphile_worker._private_jobs');
    await app.patch('/users/me/profile', { profileAssetId: first }, { token: user.token });
    expect((await app.owner.query('select 1 from graphile_worker._private_jobs')).rowCount).toBe(0);
  });

  it('removes expired, never-completed intents and their objects', async () => {
    const user = await userAtLevel(app, 2);
    const intent = await presign(user);
    await put(intent.uploadUrl, png, intent.headers);
    const { rows } = await app.owner.query('select object_key from app.upload_intents where id = $1', [intent.uploadId]);
    await app.owner.query(`update app.upload_intents set expires_at = now() - interval '1 minute' where id = $1`, [intent.uploadId]);
    await app.owner.query(`select graphile_worker.add_job('purge_expired_uploads')`);
    await app.runJobs();
    expect(await app.storage.head(rows[0].object_key)).toBeNull();
    expect((await app.owner.query('select 1 from app.upload_intents where id = $1', [intent.uploadId])).rowCount).toBe(0);
  });
});

describe('the embedded S3 store', () => {
  it('survives deleting an object while another is written under the same prefix (S3 has no folders)', async () => {
    const bytes = Buffer.alloc(200_000, 7);
    for (let i = 0; i < 20; i++) {
      await app.storage.putImmutable(`race/${i}/first`, bytes, 'application/octet-stream');
      await Promise.all([
        app.storage.delete(`race/${i}/first`),
        app.storage.putImmutable(`race/${i}/second`, bytes, 'application/octet-stream'),
      ]);
      expect(await app.storage.head(`race/${i}/first`)).toBeNull();
      expect((await app.storage.head(`race/${i}/second`))?.size).toBe(bytes.length);
    }
  });
});
