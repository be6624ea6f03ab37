// The success and error envelopes of spec 2.1.
import type { Response } from 'express';
import type { ApiError } from './errors.ts';

export function sendSuccess(res: Response, status: number, message: string, data: unknown): void {
  res.status(status).json({ success: true, message, data });
}

export function sendError(res: Response, error: ApiError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json({
    success: false,
    error: { code: error.code, message: error.message, details: error.details },
  });
}
