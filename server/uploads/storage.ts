// Object storage through the S3 API (S3, R2, MinIO, or the embedded s3rver): signed PUT and GET
// URLs, existence and size, SHA-256 (the store's own checksum when it has a full-object one, else
// by streaming the object), the first bytes of an object, deletion, and objects the service writes itself.
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config } from '../../config.ts';

export interface StoredObject {
  size: number;
  /** Hex SHA-256 when the store keeps a full-object checksum. */
  sha256: string | null;
}

export interface Storage {
  presignPut(key: string, contentType: string, contentLength: number, expiresInSeconds: number): Promise<string>;
  presignGet(key: string, expiresInSeconds: number): Promise<string>;
  head(key: string): Promise<StoredObject | null>;
  sha256(key: string): Promise<string>;
  /** Up to `length` bytes from the start of an object. */
  readStart(key: string, length: number): Promise<Uint8Array>;
  delete(key: string): Promise<void>;
  /** Stores an object written by the service itself (a data export archive). */
  put(key: string, body: string, contentType: string): Promise<void>;
  /** The whole object, or null when there is none (the worker reads an upload to process it). */
  get(key: string): Promise<Buffer | null>;
  /** Stores an image variant: written once under a key of its own, cached by anyone for a year. */
  putImmutable(key: string, body: Buffer, contentType: string): Promise<void>;
  /**
   * A signed GET URL for an image shown in responses: the same string in every process for the
   * whole of a window (photoUrlWindow), so an unchanged answer keeps its body and its ETag.
   */
  photoUrl(key: string | null): Promise<string | null>;
}

/** Variants never change once written (a new photo is a new asset): anyone may keep them a year. */
export const immutableCacheControl = 'public, max-age=31536000, immutable';

function notFound(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === 404 || (error as Error).name === 'NotFound' || (error as Error).name === 'NoSuchKey';
}

/**
 * Image URLs are signed as of the start of the current hour and valid two hours: any process,
 * at any moment of that hour, signs the same string (SigV4 is a function of the key, the
 * credentials, the signing time and the validity only), which works for at least another hour.
 */
export const photoUrlWindow = { windowSeconds: 3600, validSeconds: 7200 };

/** The start of the window `now` falls in. */
export function photoUrlWindowStart(now: number): number {
  const windowMs = photoUrlWindow.windowSeconds * 1000;
  return Math.floor(now / windowMs) * windowMs;
}

export function s3Client(s3: Config['s3'], endpoint: string | undefined): S3Client {
  return new S3Client({
    ...(endpoint ? { endpoint } : {}),
    region: s3.region,
    forcePathStyle: s3.forcePathStyle,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    // Signed URLs carry no checksum of their own: the client uploads plain bytes.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/**
 * `signer` signs the URLs handed to clients: its endpoint is the store's public address (S3_PUBLIC_URL),
 * which may differ from the one this process reaches it at (`client`).
 */
export function createStorage(client: S3Client, bucket: string, signer: S3Client = client, clock: () => number = Date.now): Storage {
  // The signed image URLs of the current window (a cache: signing is pure, so this only saves the work).
  let photoUrls = { windowStart: 0, urls: new Map<string, string>() };
  const presignGet = (key: string, expiresIn: number, signingDate?: Date) =>
    getSignedUrl(signer, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn, ...(signingDate ? { signingDate } : {}) });

  return {
    presignPut: (key, contentType, contentLength, expiresIn) =>
      getSignedUrl(signer, new PutObjectCommand({ Bucket: bucket, Key: key, ContentType: contentType, ContentLength: contentLength }), {
        expiresIn,
        signableHeaders: new Set(['content-type', 'content-length']),
      }),
    presignGet,
    async head(key) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
        const full = head.ChecksumSHA256 && head.ChecksumType !== 'COMPOSITE' ? head.ChecksumSHA256 : null;
        return { size: head.ContentLength ?? 0, sha256: full ? Buffer.from(full, 'base64').toString('hex') : null };
      } catch (error) {
        if (notFound(error)) return null;
        throw error;
      }
    },
    async sha256(key) {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const hash = createHash('sha256');
      for await (const chunk of object.Body as Readable) hash.update(chunk as Buffer);
      return hash.digest('hex');
    },
    async readStart(key, length) {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=0-${length - 1}` }));
      return (await object.Body?.transformToByteArray()) ?? new Uint8Array();
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async put(key, body, contentType) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async get(key) {
      try {
        const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return Buffer.from((await object.Body?.transformToByteArray()) ?? new Uint8Array());
      } catch (error) {
        if (notFound(error)) return null;
        throw error;
      }
    },
    async putImmutable(key, body, contentType) {
      await client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType, CacheControl: immutableCacheControl }),
      );
    },
    async photoUrl(key) {
      if (key === null) return null;
      const windowStart = photoUrlWindowStart(clock());
      if (photoUrls.windowStart !== windowStart) photoUrls = { windowStart, urls: new Map() };
      const cached = photoUrls.urls.get(key);
      if (cached) return cached;
      const url = await presignGet(key, photoUrlWindow.validSeconds, new Date(windowStart));
      if (photoUrls.windowStart === windowStart) {
        if (photoUrls.urls.size >= 50_000) photoUrls.urls.clear();
        photoUrls.urls.set(key, url);
      }
      return url;
    },
  };
}
