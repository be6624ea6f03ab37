// Photos through the public API (contract part 18): what a phone uploads is processed once, and
// only its variants are served, upright and without metadata, at the contract's sizes, wherever an
// image URL is given out; hostile images are refused from their header; assets not ready cannot be
// attached; older images are processed by the backfill. Real images (sharp, exiftool, heif-enc), the
// real worker task in its decoder processes, a real S3-compatible store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createHub } from '../../helpers/hubs.ts';
import { corners, heicFrom, markedImage, pngBomb, readMetadataOfEach, revealingTags, withPhoneMetadata } from '../../helpers/images.ts';
import { createPost } from '../../helpers/posts.ts';
import { jpegNoise, presign, putObject, sha256, uploadAsset } from '../../helpers/uploads.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let phonePhoto: Buffer;
beforeAll(async () => {
  app = await startTestApp();
  // 1200 x 800 as stored, EXIF orientation 6 (shown turned 90 degrees clockwise: 800 x 1200), GPS,
  // the camera's make, XMP, IPTC, comments and a thumbnail.
  phonePhoto = await withPhoneMetadata(await markedImage(1200, 800).jpeg().toBuffer(), 6);
});
afterAll(() => app.close());

interface Variant {
  width: number;
  height: number;
  contentType: string;
  url: string;
}

async function fetchBytes(url: string): Promise<{ bytes: Buffer; headers: Headers }> {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  return { bytes: Buffer.from(await response.arrayBuffer()), headers: response.headers };
}

/** Every variant's bytes carry no metadata and show the image upright (the marker in the stored top-left lands top-right). */
async function expectCleanUpright(variants: Variant[]) {
  const fetched = await Promise.all(variants.map((variant) => fetchBytes(variant.url)));
  const metadata = await readMetadataOfEach(fetched.map((f) => f.bytes));
  for (const [i, variant] of variants.entries()) {
    expect(revealingTags(metadata[i] as Record<string, unknown>), variant.url).toEqual([]);
    expect(fetched[i]?.headers.get('content-type')).toBe(variant.contentType);
    expect(fetched[i]?.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  }
  return fetched;
}

async function completeUpload(user: TestUser, purpose: string, bytes: Buffer, contentType: string) {
  const intent = await presign(app, user, purpose, bytes, contentType);
  expect((await putObject(intent.uploadUrl, bytes, intent.headers)).status).toBe(200);
  const { rows } = await app.owner.query<{ object_key: string }>('select object_key from app.upload_intents where id = $1', [
    intent.uploadId,
  ]);
  const response = await app.post(
    '/uploads/complete',
    { uploadId: intent.uploadId, purpose, checksum: sha256(bytes) },
    { token: user.token },
  );
  return { response, uploadId: intent.uploadId, uploadKey: (rows[0] as { object_key: string }).object_key };
}

describe('a phone photo in a post', () => {
  it('is served to another user as upright variants with no metadata, never as the uploaded bytes', async () => {
    const author = await userAtLevel(app, 3);
    const { response, uploadKey } = await completeUpload(author, 'post_image', phonePhoto, 'image/jpeg');
    expect(response.status).toBe(201);
    const asset = response.body.data;
    expect(asset).toMatchObject({ status: 'ready', width: 800, height: 1200, placeholder: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/) });
    // Fitted within 320, 640 (and the image's own 1200 in place of 1280 and 2048) as WebP, a JPEG within 1280: nothing enlarged.
    expect(asset.variants.map((v: Variant) => [v.contentType, v.width, v.height])).toEqual([
      ['image/webp', 213, 320],
      ['image/webp', 427, 640],
      ['image/webp', 800, 1200],
      ['image/jpeg', 800, 1200],
    ]);
    // The upload itself is deleted once the variants exist.
    await expect.poll(() => app.storage.head(uploadKey), { timeout: 10_000 }).toBeNull();

    const post = await createPost(app, author, { article: { kind: 'media', title: 'Sideways', assetIds: [asset.assetId] } });
    const viewer = await userAtLevel(app, 2);
    const card = await app.get(`/posts/${post.id}`, { token: viewer.token });
    const medium = card.body.data.article.media[0];
    expect(medium).toMatchObject({ assetId: asset.assetId, width: 800, height: 1200, placeholder: asset.placeholder });
    // The card's url is the 1280 px WebP, or the largest below it (here the image's own size).
    expect(medium.url).toBe(medium.variants[2].url);
    const fetched = await expectCleanUpright(medium.variants);
    for (const { bytes } of fetched) {
      expect(bytes.equals(phonePhoto)).toBe(false);
      const seen = await corners(bytes);
      expect(seen).toMatchObject({ topRight: 'marker', topLeft: 'background', bottomLeft: 'background', bottomRight: 'background' });
    }
    // Owner download and the share page's image are the JPEG variant.
    const download = await app.get(`/uploads/${asset.assetId}/download-url`, { token: viewer.token });
    const downloaded = await expectCleanUpright([{ ...medium.variants[3], url: download.body.data.url }]);
    expect((await corners(downloaded[0]?.bytes as Buffer)).topRight).toBe('marker');
    const share = await fetch(`${app.url}/p/${post.id}/image`, { redirect: 'manual' });
    expect(share.status).toBe(302);
    const shared = await fetchBytes(share.headers.get('location') as string);
    expect(shared.headers.get('content-type')).toBe('image/jpeg');
    expect(revealingTags((await readMetadataOfEach([shared.bytes]))[0] as Record<string, unknown>)).toEqual([]);
    // GET /uploads/{assetId} answers what complete answered (URLs are stable within the hour).
    expect((await app.get(`/uploads/${asset.assetId}`, { token: viewer.token })).body.data).toEqual(asset);
  });

  it('keeps the 2048 px WebP of a large photo, and gives lists the 1280 px one', async () => {
    const author = await userAtLevel(app, 3);
    const large = await markedImage(3000, 2000).jpeg().toBuffer();
    const { response } = await completeUpload(author, 'post_image', large, 'image/jpeg');
    expect(response.body.data.variants.map((v: Variant) => [v.contentType, v.width, v.height])).toEqual([
      ['image/webp', 320, 213],
      ['image/webp', 640, 427],
      ['image/webp', 1280, 853],
      ['image/jpeg', 1280, 853],
      ['image/webp', 2048, 1365],
    ]);
    const post = await createPost(app, author, { article: { kind: 'media', title: 'Wide', assetIds: [response.body.data.assetId] } });
    const medium = (await app.get(`/posts/${post.id}`, { token: author.token })).body.data.article.media[0];
    expect(medium.url).toBe(medium.variants[2].url);
  });
});

describe('profile and hub photos', () => {
  it('are centred square crops at 128, 256 and 512 px (WebP) plus a JPEG 512, and profilePhotoUrl is the 256 px one', async () => {
    const user = await userAtLevel(app, 4);
    const portrait = await withPhoneMetadata(await markedImage(900, 700).jpeg().toBuffer(), 6);
    const { response } = await completeUpload(user, 'profile_photo', portrait, 'image/jpeg');
    const asset = response.body.data;
    expect(asset).toMatchObject({ status: 'ready', width: 700, height: 900 });
    expect(asset.variants.map((v: Variant) => [v.contentType, v.width, v.height])).toEqual([
      ['image/webp', 128, 128],
      ['image/webp', 256, 256],
      ['image/webp', 512, 512],
      ['image/jpeg', 512, 512],
    ]);
    expect((await app.patch('/users/me/profile', { profileAssetId: asset.assetId }, { token: user.token })).status).toBe(200);
    const profile = (await app.get(`/users/by-username/${user.username}`)).body.data;
    expect(profile.profilePhotoUrl).toBe(asset.variants[1].url);
    expect(profile.profilePhoto).toEqual({ width: 700, height: 900, placeholder: asset.placeholder, variants: asset.variants });
    await expectCleanUpright(asset.variants);

    const hub = await createHub(app, user);
    const shown = (await app.get(`/hubs/${hub.id}`, { token: user.token })).body.data;
    expect(shown.profilePhoto.variants.map((v: Variant) => v.width)).toEqual([1, 1]);
    expect(shown.profilePhotoUrl).toBe(shown.profilePhoto.variants[0].url);
  });
});

describe('HEIC', () => {
  it('is decoded on the server and served as WebP and JPEG', async () => {
    const user = await userAtLevel(app, 3);
    const heic = await heicFrom(await markedImage(640, 480).jpeg().toBuffer());
    const { response } = await completeUpload(user, 'post_image', heic, 'image/heic');
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body.data).toMatchObject({ contentType: 'image/heic', status: 'ready', width: 640, height: 480 });
    expect(response.body.data.variants.map((v: Variant) => [v.contentType, v.width])).toEqual([
      ['image/webp', 320],
      ['image/webp', 640],
      ['image/jpeg', 640],
    ]);
    const fetched = await expectCleanUpright(response.body.data.variants);
    expect((await corners(fetched[1]?.bytes as Buffer)).topLeft).toBe('marker');
  });
});

describe('hostile images', () => {
  const cases: [string, () => Promise<Buffer>, string, string][] = [
    // 20000 x 20000 pixels (1.2 GB decoded) in a small PNG.
    ['a decompression bomb', async () => pngBomb(20_000), 'image/png', 'IMAGE_TOO_LARGE'],
    [
      'a 13000 x 10 strip',
      () =>
        sharp({ create: { width: 13000, height: 10, channels: 3, background: '#fff' } })
          .png()
          .toBuffer(),
      'image/png',
      'IMAGE_TOO_LARGE',
    ],
    ['noise with a JPEG signature', async () => jpegNoise, 'image/jpeg', 'IMAGE_UNREADABLE'],
  ];
  for (const [name, make, contentType, code] of cases) {
    it(`refuses ${name} with 422 ${code}, deletes the object and spends the upload`, async () => {
      const user = await userAtLevel(app, 3);
      const bytes = await make();
      const { response, uploadId, uploadKey } = await completeUpload(user, 'post_image', bytes, contentType);
      expect(response.status).toBe(422);
      expect(response.body.error.code).toBe(code);
      await expect.poll(() => app.storage.head(uploadKey), { timeout: 10_000 }).toBeNull();
      const again = await app.post(
        '/uploads/complete',
        { uploadId, purpose: 'post_image', checksum: sha256(bytes) },
        { token: user.token },
      );
      expect(again.body.error.code).toBe('UPLOAD_ALREADY_COMPLETED');
      const { rows } = await app.owner.query<{ id: string; status: string; error_code: string }>(
        'select id, status, error_code from app.assets where upload_id = $1',
        [uploadId],
      );
      expect(rows[0]).toMatchObject({ status: 'failed', error_code: code });
      // Its GET says so; attaching it is 422 naming the field.
      const shown = await app.get(`/uploads/${rows[0]?.id}`, { token: user.token });
      expect(shown.body.data).toMatchObject({ status: 'failed', error: { code }, variants: [] });
      const post = await app.post(
        '/posts',
        { visibility: 'public', thoughtText: 'x', article: { kind: 'media', assetIds: [rows[0]?.id] } },
        { token: user.token },
      );
      expect(post.status).toBe(422);
      expect(post.body.error.details.fields).toHaveProperty(['article.assetIds']);
    });
  }

  it('answers the same for a retried complete with its Idempotency-Key', async () => {
    const user = await userAtLevel(app, 3);
    const intent = await presign(app, user, 'post_image', jpegNoise, 'image/jpeg');
    await putObject(intent.uploadUrl, jpegNoise, intent.headers);
    const body = { uploadId: intent.uploadId, purpose: 'post_image', checksum: sha256(jpegNoise) };
    const headers = { 'Idempotency-Key': `complete-${intent.uploadId}` };
    const first = await app.post('/uploads/complete', body, { token: user.token, headers });
    const again = await app.post('/uploads/complete', body, { token: user.token, headers });
    expect(first.status).toBe(422);
    expect(again.status).toBe(422);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });
});

describe('assets not ready', () => {
  it('answer 409 ASSET_NOT_READY with Retry-After while processing, wherever they are attached', async () => {
    const user = await userAtLevel(app, 4);
    const photo = await uploadAsset(app, user, 'profile_photo');
    const hubPhoto = await uploadAsset(app, user, 'hub_photo');
    const postImage = await uploadAsset(app, user, 'post_image');
    await app.owner.query(`update app.assets set status = 'processing' where id = any ($1)`, [[photo, hubPhoto, postImage]]);
    const attempts = [
      await app.put('/users/me/onboarding/media', { profileAssetId: photo }, { token: user.token }),
      await app.patch('/users/me/profile', { profileAssetId: photo }, { token: user.token }),
      await app.post('/hubs', { name: 'Not ready hub', profileAssetId: hubPhoto }, { token: user.token }),
      await app.post(
        '/posts',
        { visibility: 'public', thoughtText: 'x', article: { kind: 'media', assetIds: [postImage] } },
        { token: user.token },
      ),
      await app.get(`/uploads/${photo}/download-url`, { token: user.token }),
    ];
    for (const attempt of attempts) {
      expect(attempt.status).toBe(409);
      expect(attempt.body.error.code).toBe('ASSET_NOT_READY');
      expect(attempt.headers.get('retry-after')).toBe('1');
    }
    expect((await app.get(`/uploads/${postImage}`, { token: user.token })).body.data).toMatchObject({
      status: 'processing',
      variants: [],
      placeholder: null,
    });
  });
});

describe('images uploaded before processing existed', () => {
  it('are served as before until the backfill processes them, then as variants, and the original is deleted', async () => {
    const user = await userAtLevel(app, 3);
    const assetId = await uploadAsset(app, user, 'profile_photo');
    // The asset as an older release left it: the upload in place, never processed.
    const legacyKey = `profile_photo/${user.id}/legacy-${assetId}`;
    await app.storage.putImmutable(legacyKey, phonePhoto, 'image/jpeg');
    await app.owner.query(
      `update app.assets set object_key = $2, content_type = 'image/jpeg', processed_at = null, width = null, height = null, placeholder = null, variants = null, display_key = null where id = $1`,
      [assetId, legacyKey],
    );
    await app.owner.query('update app.upload_intents set object_key = $2 where id = (select upload_id from app.assets where id = $1)', [
      assetId,
      legacyKey,
    ]);
    await app.patch('/users/me/profile', { profileAssetId: assetId }, { token: user.token });
    const before = (await app.get(`/users/by-username/${user.username}`)).body.data;
    expect(before.profilePhoto).toEqual({ width: null, height: null, placeholder: null, variants: [] });
    expect((await fetchBytes(before.profilePhotoUrl)).bytes.equals(phonePhoto)).toBe(true);

    // The worker's minute cron queues the backfill's batch; its process_image jobs then run.
    await app.owner.query(`select graphile_worker.add_job('process_image_backfill', '{}'::json)`);
    await app.runJobs();
    await expect
      .poll(async () => (await app.owner.query('select processed_at from app.assets where id = $1', [assetId])).rows[0].processed_at, {
        timeout: 15_000,
      })
      .not.toBeNull();
    const after = (await app.get(`/users/by-username/${user.username}`)).body.data;
    expect(after.profilePhoto).toMatchObject({ width: 800, height: 1200 });
    await expectCleanUpright(after.profilePhoto.variants);
    await expect.poll(() => app.storage.head(legacyKey), { timeout: 10_000 }).toBeNull();
  });
});
