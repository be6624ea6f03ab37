// The part of s3rver's API this project uses (the package ships no types). s3rver is a Koa
// application: callback() is its request listener, configureBuckets() creates the configured
// buckets, and its winston logger must be closed when its server is. `store` is its folder store
// (server/uploads/s3rver-folders.ts replaces its deleteObject).
declare module 's3rver' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  interface S3rverOptions {
    address?: string;
    port?: number;
    directory?: string;
    silent?: boolean;
    configureBuckets?: { name: string }[];
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
    configureBuckets(): Promise<void>;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    logger: { close(): void; exceptions: { unhandle(): void } };
    store: {
      getResourcePath(bucket: string, key: string, kind: string): string;
      deleteObject(bucket: string, key: string): Promise<void>;
    };
  }
}
