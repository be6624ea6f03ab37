// Path ids are opaque UUIDs. An id that is not one was never issued, so it answers like any other
// unknown id of that resource (its 404 code), after the body checks (contract section 1 order).
import { z } from 'zod';
import type { ErrorCode } from './catalog.ts';
import { ApiError } from './errors.ts';

/** An id's form. */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An id in a request: a path id (the OpenAPI document's path parameters) or a field that holds
 * ids (server/posts/fields.ts). 36 characters is the bound a UUID's form sets; it is stated so
 * that the document says it.
 */
export const idField = z.string().max(36).regex(uuidPattern, 'Not an id');

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && uuidPattern.test(value);
}

/** A path parameter that is not an id (an invite link's token, a handle): its form and the 404 another form answers. */
export interface PathParameter {
  schema: z.ZodType;
  notFound: ErrorCode;
}

export function requireIds(
  params: Record<string, string>,
  notFound: Record<string, ErrorCode>,
  others: Record<string, PathParameter> = {},
): Record<string, string> {
  for (const [name, code] of Object.entries(notFound)) {
    if (!isUuid(params[name])) throw new ApiError(code);
  }
  // A value of another form was never issued: it is unknown, like an id that is not a UUID.
  for (const [name, { schema, notFound: code }] of Object.entries(others)) {
    if (!schema.safeParse(params[name]).success) throw new ApiError(code);
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
