// What the worker needs of object storage: deleting objects and writing data export archives. main.ts passes the API's S3 storage
// (server/uploads/storage.ts), which has this method among others; the worker imports nothing of
// server/ (dependencies run main → worker, server → db → config).
export interface ObjectStore {
  delete(key: string): Promise<void>;
  put(key: string, body: string, contentType: string): Promise<void>;
}
