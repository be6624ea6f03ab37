// The RateLimit headers (contract 15, draft-ietf-httpapi-ratelimit-headers): an answer of an
// operation that a per-user or per-address limit counted carries, for each such limit,
//   RateLimit-Policy: "<name>";q=<count>;w=<window seconds>
//   RateLimit: "<name>";r=<left>;t=<seconds until the window frees one>
// The numbers are what the limit's own statement answered in the request's transaction
// (db/limit-counts.ts): nothing is counted or recomputed here. A refused hit (429) is r=0 and t its
// Retry-After. When the transaction rolled back (the request failed after its limit counted), its
// hit did not count: one more is left than the statement said. Per-phone sign-in limits are not
// reported: they would tell anyone how often a number asked for codes.
import type { Response } from 'express';
import type { LimitCount } from '../../db/limit-counts.ts';
import type { ApiError } from './errors.ts';

/** One count as it stands once the transaction ended. */
function settled(count: LimitCount, committed: boolean): LimitCount {
  if (committed || count.refused) return count;
  const remaining = Math.min(count.quota, count.remaining + 1);
  return { ...count, remaining, resetSeconds: remaining === count.quota ? 0 : count.resetSeconds };
}

/**
 * Sets the headers from a transaction's limit counts; `failure` is the answer's error, which may be
 * a limit refused by its statement (RATE_LIMITED naming its limit).
 */
export function setRateLimitHeaders(
  res: Response,
  { counts, committed }: { counts: LimitCount[]; committed: boolean },
  failure?: ApiError,
): void {
  const byName = new Map<string, LimitCount>();
  for (const count of counts) byName.set(count.name, settled(count, committed));
  if (failure?.rateLimit) byName.set(failure.rateLimit.name, failure.rateLimit);
  if (byName.size === 0 || res.headersSent) return;
  const limits = [...byName.values()];
  res.setHeader('RateLimit-Policy', limits.map((l) => `"${l.name}";q=${l.quota};w=${l.windowSeconds}`).join(', '));
  res.setHeader('RateLimit', limits.map((l) => `"${l.name}";r=${l.remaining};t=${l.resetSeconds}`).join(', '));
}
