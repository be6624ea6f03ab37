// Cursor paging (contract section 1): `limit` within the endpoint's bounds, an opaque base64url
// cursor, `nextCursor` null on the last page. Cursors hold keyset positions, so pages never repeat
// or skip an item while items are being added. Every endpoint declares the shape of its position
// (pageQuery's second argument); a cursor that does not decode to exactly that shape is 422, so a
// forged cursor never reaches SQL.
import { z } from 'zod';
import { isUuid } from './ids.ts';

export type CursorValue = (string | number)[];

/** The longest cursor a request may send, so the longest this server issues (positions are a few values). */
const cursorMaxLength = 1000;

const safeInteger = z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

/** The kinds of value a keyset position holds. */
const positionParts = {
  /** A timestamp as microseconds since the epoch (see micros/fromMicros below). */
  timestamp: safeInteger,
  /** A row id. */
  id: z.string().refine(isUuid),
  /** A PostgreSQL int (ranks, ordinals). */
  int: z
    .number()
    .int()
    .min(-(2 ** 31))
    .max(2 ** 31 - 1),
  /** A PostgreSQL bigint (sequence numbers). */
  bigint: safeInteger,
  /** A name or handle. */
  text: z
    .string()
    .max(300)
    .refine((value) => !value.includes('\u0000')),
} as const;

export type PositionPart = keyof typeof positionParts;
type PositionOf<K extends readonly PositionPart[]> = { [I in keyof K]: K[I] extends 'id' | 'text' ? string : number };

export function encodeCursor(position: CursorValue): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

function decodeCursor<K extends readonly PositionPart[]>(cursor: string, shape: K): PositionOf<K> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined; // not a cursor this server issued
  }
  const parts: z.ZodType[] = shape.map((part) => positionParts[part]);
  const parsed = z.tuple(parts as [z.ZodType, ...z.ZodType[]]).safeParse(value);
  return parsed.success ? (parsed.data as PositionOf<K>) : undefined;
}

/** `limit` and `cursor` of a list endpoint whose keyset position has the given shape. */
export function pageQuery<const K extends readonly PositionPart[]>(max: number, position: K, defaultLimit = 20) {
  return z.object({
    cursor: z
      .string()
      .max(cursorMaxLength)
      .optional()
      .transform((cursor, ctx) => {
        if (cursor === undefined) return undefined;
        const decoded = decodeCursor(cursor, position);
        if (!decoded) ctx.addIssue({ code: 'custom', message: 'Invalid cursor' });
        return decoded;
      }),
    limit: z.coerce.number().int().min(1).max(max).default(defaultLimit),
  });
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * Builds a page from `limit + 1` fetched rows: the extra row only says another page exists.
 */
export function toPage<R, T>(rows: R[], limit: number, position: (row: R) => CursorValue, shape: (row: R) => T): Page<T> {
  const visible = rows.slice(0, limit);
  const last = visible.at(-1);
  return {
    items: visible.map(shape),
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(position(last)) : null,
  };
}

export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().max(cursorMaxLength).nullable() });
}

/**
 * Timestamps in keyset positions: microseconds since the epoch, exact (a JS number holds them).
 * `micros('t.created_at')` in the select list, `fromMicros('$2')` in the keyset condition.
 */
export function micros(column: string): string {
  return `(extract(epoch from ${column}) * 1000000)::bigint`;
}

export function fromMicros(parameter: string): string {
  return `(timestamptz 'epoch' + ${parameter}::bigint * interval '1 microsecond')`;
}
