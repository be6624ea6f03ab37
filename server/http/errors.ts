// ApiError: a catalogued failure on its way to the error envelope.
import { errorCatalog, type ErrorCode } from './catalog.ts';

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, details: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    const [status, message] = errorCatalog[code];
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
    this.headers = headers;
  }
}

export function rateLimited(retryAfterSeconds: number): ApiError {
  return new ApiError(
    'RATE_LIMITED',
    { retryAfterSeconds },
    { 'Retry-After': String(retryAfterSeconds) },
  );
}
