// The success and error envelopes of spec 2.1.
import type { Response } from 'express';
import { sendCacheable } from './conditional.ts';
import type { ApiError } from './errors.ts';

/** A success; a 200 to a GET carries its ETag and may answer 304 (server/http/conditional.ts). */
export function sendSuccess(res: Response, status: number, message: string, data: unknown): void {
  sendCacheable(res, status, JSON.stringify({ success: true, message, data }), 'application/json');
}

export function sendError(res: Response, error: ApiError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json({
    success: false,
    error: { code: error.code, message: error.message, details: error.details },
  });
}
