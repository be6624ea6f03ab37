// Object storage through the S3 API (S3, R2, MinIO, or the embedded s3rver): signed PUT and GET
// URLs, existence and size, SHA-256 (the store's own checksum when it has a full-object one, else
// by streaming the object), the first bytes of an object, deletion, and objects the service writes itself.
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
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
  /** A signed GET URL for an image shown in responses, reused while it has 10+ minutes left. */
  photoUrl(key: string | null): Promise<string | null>;
}

const photoUrlSeconds = 3600;
const photoUrlReuseMs = (photoUrlSeconds - 600) * 1000;

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
export function createStorage(client: S3Client, bucket: string, signer: S3Client = client): Storage {
  const photoUrls = new Map<string, { url: string; reuseUntil: number }>();
  const presignGet = (key: string, expiresIn: number) =>
    getSignedUrl(signer, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn });

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
        const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 404 || (error as Error).name === 'NotFound' || (error as Error).name === 'NoSuchKey') return null;
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
    async photoUrl(key) {
      if (key === null) return null;
      const cached = photoUrls.get(key);
      if (cached && cached.reuseUntil > Date.now()) return cached.url;
      const url = await presignGet(key, photoUrlSeconds);
      if (photoUrls.size > 50_000) photoUrls.clear();
      photoUrls.set(key, { url, reuseUntil: Date.now() + photoUrlReuseMs });
      return url;
    },
  };
}
