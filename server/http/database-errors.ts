// Maps failures from PostgreSQL to the HTTP catalog: a stored function's `raise exception using
// errcode = 'P0001', message = '<CODE>'` becomes that code; known constraints become their codes;
// a lost or refused connection, or a node not (yet) the writable primary, becomes 503, and so does
// a statement that hit the transaction's statement_timeout or lock_timeout
// (db/request-transaction.ts). Anything else is left for the 500 handler.
import { refusedLimitOf } from '../../db/limit-counts.ts';
import { isErrorCode } from './catalog.ts';
import { ApiError, rateLimited } from './errors.ts';

export const constraintCodes = {
  users_username_key: 'USERNAME_TAKEN',
  hubs_custom_link_key: 'HUB_LINK_TAKEN',
} as const;

const lostErrnos = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

/**
 * Whether the error says the primary is gone, changing or not yet writable: a lost or refused
 * connection (class 08, errnos, node-postgres's own messages), an answer not given in time
 * (connection or query time-out), a node shutting down or starting (57P01-57P03), or a node
 * still in recovery (25006 read-only, "during recovery"). A catalogued refusal is never one.
 */
export function isFailoverError(error: unknown): boolean {
  if (error instanceof ApiError || !(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (lostErrnos.has(code) || code === '25006' || /^(08|57P0[123])/.test(code))) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|during recovery|recovery is in progress/i.test(error.message);
}

/**
 * Which bound a database error says a statement hit: statement_timeout (57014 query_canceled; no
 * API code cancels a statement otherwise) or lock_timeout (55P03 lock_not_available: no API SQL
 * asks for NOWAIT); undefined otherwise.
 */
export function timeoutOf(error: unknown): 'statement_timeout' | 'lock_timeout' | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '57014') return 'statement_timeout';
  if (code === '55P03') return 'lock_timeout';
  return undefined;
}

/** After a timeout, try again in a second: the connection is back in the pool, healthy. */
const timeoutRetrySeconds = '1';

export function translateDatabaseError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const pgError = error as Error & { code?: string; constraint?: string; detail?: string; hint?: string };
  // A full limit (app.take_write_limit, app.start_data_export) names the seconds to wait in DETAIL
  // and itself in HINT.
  if (pgError.code === 'P0001' && pgError.message === 'RATE_LIMITED') {
    const wait = Math.max(1, Number(pgError.detail) || 1);
    return rateLimited(wait, refusedLimitOf(pgError.hint, wait));
  }
  if (pgError.code === 'P0001' && isErrorCode(pgError.message)) return new ApiError(pgError.message);
  if (pgError.code === '23505' && pgError.constraint && pgError.constraint in constraintCodes) {
    return new ApiError(constraintCodes[pgError.constraint as keyof typeof constraintCodes]);
  }
  if (timeoutOf(error)) return new ApiError('SERVICE_UNAVAILABLE', {}, { 'Retry-After': timeoutRetrySeconds });
  if (isFailoverError(error) || pgError.code === '53300') {
    return new ApiError('SERVICE_UNAVAILABLE', {}, { 'Retry-After': '5' });
  }
  return error;
}
