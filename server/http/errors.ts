// ApiError: a catalogued failure on its way to the error envelope.
import type { LimitCount } from '../../db/limit-counts.ts';
import { errorCatalog, type ErrorCode } from './catalog.ts';

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;
  /** RATE_LIMITED: the limit that refused, when its statement named it (the RateLimit headers). */
  rateLimit: LimitCount | undefined;

  constructor(code: ErrorCode, details: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    const [status, message] = errorCatalog[code];
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
    this.headers = headers;
  }
}

export function rateLimited(retryAfterSeconds: number, limit?: LimitCount): ApiError {
  const error = new ApiError('RATE_LIMITED', { retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) });
  error.rateLimit = limit;
  return error;
}
