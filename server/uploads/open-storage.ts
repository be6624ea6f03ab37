// Object storage for the process: S3_ENDPOINT when set (S3, R2, MinIO: the bucket must exist),
// otherwise a local S3-compatible store (s3rver, a development dependency loaded only here) with
// its data under <dataDir>/s3, on S3_HOST:S3_PORT (loopback, 3001 by default), with the bucket
// created. Same SDK calls either way. Signed URLs handed to clients use S3_PUBLIC_URL, the address
// devices reach the store at.
import { createServer } from 'node:http';
import path from 'node:path';
import { StartupError, type Config } from '../../config.ts';
import { close, listen, type Binding } from '../listen.ts';
import { createStorage, s3Client, type Storage } from './storage.ts';
import { keepFolders } from './s3rver-folders.ts';

export interface OpenStorage {
  storage: Storage;
  location: string;
  stop(): Promise<void>;
}

/** Where the embedded store listens (S3_HOST:S3_PORT). */
export function embeddedStoreBinding(config: Config): Binding {
  return { port: config.s3.port, host: config.s3.host, portSetting: 'S3_PORT', hostSetting: 'S3_HOST', what: 'the embedded S3 store' };
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
  const { default: S3rver } = await import('s3rver').catch(() => {
    throw new StartupError('no embedded S3 store in this install (a production install leaves it out): set S3_ENDPOINT');
  });
  const directory = path.join(config.dataDir, 's3');
  const { port } = config.s3;
  const store = keepFolders(new S3rver({ directory, silent: true, configureBuckets: [{ name: config.s3.bucket }] }));
  // s3rver's own run() leaves a taken port as an unhandled 'error' event: listen here instead.
  const server = createServer(store.callback());
  const stopStore = async () => {
    await close(server);
    store.logger.exceptions.unhandle();
    store.logger.close();
  };
  try {
    await store.configureBuckets();
    await listen(server, embeddedStoreBinding(config));
  } catch (error) {
    await stopStore();
    signer.destroy();
    throw error;
  }
  const client = s3Client(config.s3, `http://127.0.0.1:${port}`);
  return {
    storage: createStorage(client, config.s3.bucket, signer),
    location: `embedded S3 store in ${directory}, ${config.s3.publicUrl}`,
    stop: async () => {
      client.destroy();
      signer.destroy();
      await stopStore();
    },
  };
}
