// Object storage for the process: S3_ENDPOINT when set (S3, R2, MinIO: the bucket must exist),
// otherwise a local S3-compatible store (s3rver) with its data under <dataDir>/s3, on S3_HOST:S3_PORT
// (loopback, 3001 by default), with the bucket created. Same SDK calls either way. Signed URLs
// handed to clients use S3_PUBLIC_URL, the address devices reach the store at.
import path from 'node:path';
import S3rver from 's3rver';
import { StartupError, type Config } from '../../config.ts';
import { createStorage, s3Client, type Storage } from './storage.ts';

export interface OpenStorage {
  storage: Storage;
  location: string;
  stop(): Promise<void>;
}

export async function openStorage(config: Config): Promise<OpenStorage> {
  const signer = s3Client(config.s3, config.s3.publicUrl);
  if (config.s3.endpoint) {
    const client = s3Client(config.s3, config.s3.endpoint);
    return {
      storage: createStorage(client, config.s3.bucket, signer),
      location: `${config.s3.endpoint}/${config.s3.bucket}`,
      stop: async () => {
        client.destroy();
        signer.destroy();
      },
    };
  }
  const directory = path.join(config.dataDir, 's3');
  const { host, port } = config.s3;
  const server = new S3rver({ address: host, port, directory, silent: true, configureBuckets: [{ name: config.s3.bucket }] });
  await server.run().catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE') throw new StartupError(`port ${port} of the embedded S3 store is in use: set S3_PORT to a free port`);
    if (error.code === 'EADDRNOTAVAIL') throw new StartupError(`S3_HOST ${host} is not an address of this machine`);
    throw error;
  });
  const client = s3Client(config.s3, `http://127.0.0.1:${port}`);
  return {
    storage: createStorage(client, config.s3.bucket, signer),
    location: `embedded S3 store in ${directory}, ${config.s3.publicUrl}`,
    stop: async () => {
      client.destroy();
      signer.destroy();
      await server.close();
    },
  };
}
