// Conditional GETs (server/http/conditional.ts) and stable signed image URLs
// (server/uploads/storage.ts photoUrl): a 200 to a GET carries a strong ETag of its body,
// `Cache-Control: private, no-cache` and `Vary: Authorization`; If-None-Match with that tag answers
// 304 with no body; an image URL is the same string from any process at any moment of its window,
// so an unchanged answer keeps its tag whichever API process answers.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../logger.ts';
import { createPools, type Pools } from '../../../db/pools.ts';
import { createServer } from '../../../server/app.ts';
import { entityTag, noneMatchLists } from '../../../server/http/conditional.ts';
import { createServices, type Services } from '../../../server/services.ts';
import { createStorage, photoUrlWindow, photoUrlWindowStart, s3Client, type Storage } from '../../../server/uploads/storage.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createClient, type Client } from '../../helpers/client.ts';
import { insertNotification, openStream } from '../../helpers/notifications.ts';
import { uploadAsset } from '../../helpers/uploads.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

/** Another API process on the same database and store, whose clock reads `clock()`. */
async function instance(clock: () => number): Promise<{ client: Client; storage: Storage; close(): Promise<void> }> {
  const s3 = s3Client(app.config.s3, app.config.s3.endpoint);
  const signer = s3Client(app.config.s3, app.config.s3.publicUrl);
  const storage = createStorage(s3, app.config.s3.bucket, signer, clock);
  const pools: Pools = createPools(app.ownerUrl);
  const services: Services = await createServices(app.config, createLogger('silent'), pools, storage);
  const server: Server = createServer(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    client: createClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    storage,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await services.graphql.release();
      await pools.end();
      s3.destroy();
      signer.destroy();
    },
  };
}

describe('If-None-Match', () => {
  it('follows the list syntax, * and the weak comparison', () => {
    const tag = '"abc"';
    expect(noneMatchLists('"abc"', tag)).toBe(true);
    expect(noneMatchLists('W/"abc"', tag)).toBe(true);
    expect(noneMatchLists('"x", "abc"', tag)).toBe(true);
    expect(noneMatchLists(' , "x",, W/"abc" ,', tag)).toBe(true);
    expect(noneMatchLists('*', tag)).toBe(true);
    expect(noneMatchLists(undefined, tag)).toBe(false);
    expect(noneMatchLists('"ab"', tag)).toBe(false);
    expect(noneMatchLists('abc', tag)).toBe(false);
    expect(noneMatchLists('"x" "abc"', tag)).toBe(false);
    expect(noneMatchLists('"abc', tag)).toBe(false);
  });
});

describe('a 200 to a GET', () => {
  let user: TestUser;
  beforeAll(async () => {
    user = await userAtLevel(app, 2);
  });

  it('carries a strong ETag of its body, private no-cache and Vary: Authorization; a matching If-None-Match answers 304', async () => {
    const first = await app.get('/notifications/unread-count', { token: user.token });
    expect(first.status).toBe(200);
    const tag = first.headers.get('etag');
    expect(tag).toBe(entityTag(first.text));
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(first.headers.get('cache-control')).toBe('private, no-cache');
    expect(first.headers.get('vary')).toBe('Authorization');

    for (const ifNoneMatch of [tag as string, `W/${tag}`, `"other", ${tag}`, '*']) {
      const again = await app.get('/notifications/unread-count', {
        token: user.token,
        headers: { 'if-none-match': ifNoneMatch, 'x-request-id': 'poll-1' },
      });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      expect(again.headers.get('etag')).toBe(tag);
      expect(again.headers.get('x-request-id')).toBe('poll-1');
      expect(again.headers.get('cache-control')).toBe('private, no-cache');
      expect(again.headers.get('content-length') ?? '0').toBe('0');
    }
    const other = await app.get('/notifications/unread-count', { token: user.token, headers: { 'if-none-match': '"something-else"' } });
    expect(other.status).toBe(200);
    expect(other.text).toBe(first.text);
  });

  it('gets a new tag when the body changes, and the old tag then answers the full body', async () => {
    const before = await app.get('/notifications/unread-count', { token: user.token });
    await insertNotification(app, user.id);
    const after = await app.get('/notifications/unread-count', {
      token: user.token,
      headers: { 'if-none-match': before.headers.get('etag') as string },
    });
    expect(after.status).toBe(200);
    expect(after.body.data.unreadCount).toBe(before.body.data.unreadCount + 1);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    expect(after.headers.get('etag')).toBe(entityTag(after.text));
  });

  it('is per user: another user with the same tag gets their own answer', async () => {
    const someone = await userAtLevel(app, 2);
    const mine = await app.get('/users/me/profile', { token: user.token });
    const theirs = await app.get('/users/me/profile', {
      token: someone.token,
      headers: { 'if-none-match': mine.headers.get('etag') as string },
    });
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.id).toBe(someone.id);
  });

  it('answers 304 for a profile with a photo, and the photo URL works', async () => {
    const assetId = await uploadAsset(app, user);
    expect((await app.patch('/users/me/profile', { profileAssetId: assetId }, { token: user.token })).status).toBe(200);
    const viewer = await userAtLevel(app, 2);
    // A process whose clock stays inside one window (the test app's would sign anew if an hour began between two requests).
    const moment = photoUrlWindowStart(Date.now()) + 600_000;
    const api = await instance(() => moment);
    try {
      const first = await api.client.get(`/users/by-username/${user.username}`, { token: viewer.token });
      expect(first.status).toBe(200);
      const photo = first.body.data.profilePhotoUrl as string;
      expect(photo).toMatch(/^http/);
      // The photo's WebP variant (never the uploaded PNG: contract part 18).
      expect(
        Buffer.from(await (await fetch(photo)).arrayBuffer())
          .subarray(0, 4)
          .toString('latin1'),
      ).toBe('RIFF');
      const again = await api.client.get(`/users/by-username/${user.username}`, {
        token: viewer.token,
        headers: { 'if-none-match': first.headers.get('etag') as string },
      });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      const own = await api.client.get('/users/me/profile', { token: user.token });
      expect(own.body.data.profilePhotoUrl).toBe(photo);
      expect(
        (await api.client.get('/users/me/profile', { token: user.token, headers: { 'if-none-match': own.headers.get('etag') as string } }))
          .status,
      ).toBe(304);
    } finally {
      await api.close();
    }
  });

  it('is only for 200s to GETs: errors, writes and the notification stream carry no ETag', async () => {
    const missing = await app.get('/users/by-username/nobody_at_all', { token: user.token });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('etag')).toBeNull();
    const write = await app.patch('/users/me/profile', { bio: 'hello' }, { token: user.token });
    expect(write.status).toBe(200);
    expect(write.headers.get('etag')).toBeNull();
    const stream = await openStream(app.url, user.token);
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get('etag')).toBeNull();
      expect(stream.headers.get('cache-control')).toBe('no-store');
    } finally {
      stream.close();
    }
  });

  it('covers the OpenAPI document', async () => {
    const document = await app.get('/openapi.json');
    expect(document.headers.get('etag')).toBe(entityTag(document.text));
    expect((await app.get('/openapi.json', { headers: { 'if-none-match': document.headers.get('etag') as string } })).status).toBe(304);
  });
});

describe('signed image URLs', () => {
  it('are the same string from two processes at different moments of one window, so the answer keeps its tag', async () => {
    const user = await userAtLevel(app, 2);
    const assetId = await uploadAsset(app, user);
    expect((await app.patch('/users/me/profile', { profileAssetId: assetId }, { token: user.token })).status).toBe(200);
    const windowStart = photoUrlWindowStart(Date.now());
    const early = await instance(() => windowStart + 60_000);
    const late = await instance(() => windowStart + photoUrlWindow.windowSeconds * 1000 - 60_000);
    const next = await instance(() => windowStart + photoUrlWindow.windowSeconds * 1000 + 1_000);
    try {
      const a = await early.client.get('/users/me/profile', { token: user.token });
      const b = await late.client.get('/users/me/profile', { token: user.token });
      expect(a.status).toBe(200);
      expect(a.body.data.profilePhotoUrl).toMatch(/^http/);
      expect(b.body.data.profilePhotoUrl).toBe(a.body.data.profilePhotoUrl);
      expect(b.text).toBe(a.text);
      expect(b.headers.get('etag')).toBe(a.headers.get('etag'));
      // A phone that polled one process revalidates against the other.
      expect(
        (await late.client.get('/users/me/profile', { token: user.token, headers: { 'if-none-match': a.headers.get('etag') as string } }))
          .status,
      ).toBe(304);

      // Signed for the window's start and valid two hours: it works now, whichever moment of the hour it is.
      const url = new URL(a.body.data.profilePhotoUrl as string);
      expect(url.searchParams.get('X-Amz-Date')).toBe(
        new Date(windowStart)
          .toISOString()
          .replace(/[-:]/g, '')
          .replace(/\.\d{3}/, ''),
      );
      expect(url.searchParams.get('X-Amz-Expires')).toBe(String(photoUrlWindow.validSeconds));
      expect(
        Buffer.from(await (await fetch(url)).arrayBuffer())
          .subarray(0, 4)
          .toString('latin1'),
      ).toBe('RIFF');

      // The next window signs a new URL (and the answer a new tag).
      const c = await next.client.get('/users/me/profile', { token: user.token });
      expect(c.body.data.profilePhotoUrl).not.toBe(a.body.data.profilePhotoUrl);
      expect(c.headers.get('etag')).not.toBe(a.headers.get('etag'));
    } finally {
      await Promise.all([early.close(), late.close(), next.close()]);
    }
  });

  it('are signed the same by a fresh signer with the same inputs (the presigner adds nothing of its own)', async () => {
    const windowStart = photoUrlWindowStart(Date.now());
    const urls = [];
    for (const offset of [0, 1_234, 3_599_000]) {
      const signer = s3Client(app.config.s3, app.config.s3.publicUrl);
      urls.push(await createStorage(signer, app.config.s3.bucket, signer, () => windowStart + offset).photoUrl('some/key.png'));
      signer.destroy();
    }
    expect(new Set(urls).size).toBe(1);
  });
});
