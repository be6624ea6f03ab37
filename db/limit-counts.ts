// Database code: what the database reports about a limit, read for the RateLimit headers
// (server/http/rate-limit-headers.ts); it lives in db/ because the request transaction
// (db/request-transaction.ts) collects these answers as its statements run. The functions that
// count a hit (app.take_write_limit, app.take_rate_limit, app.take_address_limit,
// app.start_data_export) answer the columns `rate_limit, quota, window_seconds, remaining,
// reset_seconds` (and `wait` when they answer a refusal instead of raising it): any result of a
// request's transaction with a `rate_limit` column is one, wherever the statement travelled (the
// opening, the prelude, a statement, the last one). A refusal raised (RATE_LIMITED) names its
// limit in the error's HINT (SQLSTATE details) instead.
import type pg from 'pg';

export interface LimitCount {
  /** The limit's name (the policy name of the headers). */
  name: string;
  quota: number;
  windowSeconds: number;
  /** Hits left in the window after this one (0 when refused). */
  remaining: number;
  /** Seconds until the window frees one. */
  resetSeconds: number;
  /** This hit was refused (it did not count). */
  refused: boolean;
}

interface LimitRow {
  rate_limit: string;
  quota: number;
  window_seconds: number;
  remaining: number;
  reset_seconds: number;
  wait?: number;
}

/** The limit counts among a query's results (one result, or one per statement of a simple query). */
export function limitCountsOf(results: pg.QueryResult | pg.QueryResult[] | undefined): LimitCount[] {
  const list = Array.isArray(results) ? results : results ? [results] : [];
  return list
    .filter((result) => result?.fields?.some((field) => field.name === 'rate_limit'))
    .flatMap((result) => (result.rows as LimitRow[]).filter((row) => row.rate_limit !== null))
    .map((row) => ({
      name: row.rate_limit,
      quota: row.quota,
      windowSeconds: row.window_seconds,
      remaining: row.remaining,
      resetSeconds: row.reset_seconds,
      refused: (row.wait ?? 0) > 0,
    }));
}

/** The limit a raised RATE_LIMITED names (its HINT), refused for `wait` seconds; undefined when it names none. */
export function refusedLimitOf(hint: string | undefined, wait: number): LimitCount | undefined {
  if (!hint) return undefined;
  try {
    const limit = JSON.parse(hint) as { rateLimit?: unknown; quota?: unknown; windowSeconds?: unknown };
    if (typeof limit.rateLimit !== 'string' || typeof limit.quota !== 'number' || typeof limit.windowSeconds !== 'number') return undefined;
    return {
      name: limit.rateLimit,
      quota: limit.quota,
      windowSeconds: limit.windowSeconds,
      remaining: 0,
      resetSeconds: wait,
      refused: true,
    };
  } catch {
    return undefined;
  }
}
