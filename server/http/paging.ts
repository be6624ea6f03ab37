// Cursor paging (contract section 1): `limit` within the endpoint's bounds, an opaque base64url
// cursor (a cursor that does not decode is 422), `nextCursor` null on the last page. Cursors hold
// keyset positions, so pages never repeat or skip an item while items are being added.
import { z } from 'zod';
import { isUuid } from './ids.ts';

export type CursorValue = (string | number)[];

export function encodeCursor(position: CursorValue): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

function decodeCursor(cursor: string): CursorValue | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' || typeof v === 'number')) {
      return value;
    }
  } catch {
    // not a cursor this server issued
  }
  return undefined;
}

/**
 * The keyset position most lists page by: a timestamp in microseconds since the epoch (any safe
 * integer is a valid timestamptz, about 285 years either side) and a row id. A list that passes it
 * to `pageQuery` answers a cursor of any other shape with 422, so a forged cursor never reaches SQL.
 */
export const timeIdPosition = z.tuple([z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER), z.string().refine(isUuid)]);

export function pageQuery<P extends CursorValue = CursorValue>(max: number, defaultLimit = 20, position?: z.ZodType<P>) {
  return z.object({
    cursor: z
      .string()
      .optional()
      .transform((cursor, ctx): P | undefined => {
        if (cursor === undefined) return undefined;
        const decoded = decodeCursor(cursor);
        const checked = decoded && position ? position.safeParse(decoded) : undefined;
        if (!decoded || (checked && !checked.success)) {
          ctx.addIssue({ code: 'custom', message: 'Invalid cursor' });
          return undefined;
        }
        return (checked ? checked.data : decoded) as P;
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
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
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
