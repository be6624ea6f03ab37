// What the worker needs of object storage: deleting objects, writing data export archives, reading
// uploads and writing image variants. main.ts passes the API's S3 storage
// (server/uploads/storage.ts), which has this method among others; the worker imports nothing of
// server/ (dependencies run main → worker, server → db → config).
export interface ObjectStore {
  delete(key: string): Promise<void>;
  put(key: string, body: string, contentType: string): Promise<void>;
  /** The whole object, or null when there is none. */
  get(key: string): Promise<Buffer | null>;
  /** An image variant, stored with Cache-Control: public, max-age=31536000, immutable. */
  putImmutable(key: string, body: Buffer, contentType: string): Promise<void>;
}
