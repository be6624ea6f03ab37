// Object storage for the process: S3_ENDPOINT when set (S3, R2, MinIO: the bucket must exist),
// otherwise a local S3-compatible store (s3rver) with its data under <dataDir>/s3, on loopback
// only, with the bucket created. Same SDK calls either way.
import path from 'node:path';
import S3rver from 's3rver';
import type { Config } from '../../config.ts';
import { freePort } from '../../db/embedded.ts';
import { createStorage, s3Client, type Storage } from './storage.ts';

export interface OpenStorage {
  storage: Storage;
  location: string;
  stop(): Promise<void>;
}

export async function openStorage(config: Config): Promise<OpenStorage> {
  if (config.s3.endpoint) {
    const client = s3Client(config.s3, config.s3.endpoint);
    return { storage: createStorage(client, config.s3.bucket), location: `${config.s3.endpoint}/${config.s3.bucket}`, stop: async () => client.destroy() };
  }
  const directory = path.join(config.dataDir, 's3');
  const port = await freePort();
  const server = new S3rver({ address: '127.0.0.1', port, directory, silent: true, configureBuckets: [{ name: config.s3.bucket }] });
  await server.run();
  const client = s3Client(config.s3, `http://127.0.0.1:${port}`);
  return {
    storage: createStorage(client, config.s3.bucket),
    location: `embedded S3 store in ${directory}`,
    stop: async () => {
      client.destroy();
      await server.close();
    },
  };
}
