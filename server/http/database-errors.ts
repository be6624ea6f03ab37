// Maps failures from PostgreSQL to the HTTP catalog: a stored function's `raise exception using
// errcode = 'P0001', message = '<CODE>'` becomes that code; known constraints become their codes;
// a lost or refused connection, or a node not (yet) the writable primary, becomes 503, and so does
// a statement that hit the transaction's statement_timeout or lock_timeout
// (db/request-transaction.ts). Anything else is left for the 500 handler.
import { isFailoverError } from '../../db/failover-errors.ts';
import { refusedLimitOf } from '../../db/limit-counts.ts';
import { isErrorCode } from './catalog.ts';
import { ApiError, rateLimited } from './errors.ts';

export const constraintCodes = {
  users_username_key: 'USERNAME_TAKEN',
  hubs_custom_link_key: 'HUB_LINK_TAKEN',
} as const;

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
