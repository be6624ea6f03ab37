// Path ids are opaque UUIDs. An id that is not one was never issued, so it answers like any other
// unknown id of that resource (its 404 code), after the body checks (contract section 1 order).
import type { ErrorCode } from './catalog.ts';
import { ApiError } from './errors.ts';

/** An id's form (the request fields that hold ids use it too, server/posts/fields.ts). */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && uuidPattern.test(value);
}

export function requireIds(params: Record<string, string>, notFound: Record<string, ErrorCode>): Record<string, string> {
  for (const [name, code] of Object.entries(notFound)) {
    if (!isUuid(params[name])) throw new ApiError(code);
  }
  return params;
}

/**
 * An id for a lookup whose failure must keep its place in the order of checks: a value that is not
 * a UUID was never issued, so it is looked up as the nil UUID, which matches nothing.
 */
export function uuidOrNil(value: string): string {
  return isUuid(value) ? value : '00000000-0000-0000-0000-000000000000';
}
