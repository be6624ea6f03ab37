// The signature check of upload completion (contract section 6): the object's first bytes, read
// by the file-type library, must be a file of the declared content type.
import { fileTypeFromBuffer } from 'file-type';
import type { Storage } from './storage.ts';

/** file-type needs at most this many bytes from the start of a file. */
const signatureBytes = 4100;

/** What file-type may report for each declared type (an animated PNG is a PNG; HEIC is HEIF). */
const detectedAs: Record<string, readonly string[]> = {
  'image/jpeg': ['image/jpeg'],
  'image/png': ['image/png', 'image/apng'],
  'image/webp': ['image/webp'],
  'image/heic': ['image/heic', 'image/heif'],
  'application/pdf': ['application/pdf'],
};

export async function hasDeclaredType(storage: Storage, key: string, contentType: string): Promise<boolean> {
  const detected = await fileTypeFromBuffer(await storage.readStart(key, signatureBytes));
  return detected !== undefined && (detectedAs[contentType] ?? []).includes(detected.mime);
}
