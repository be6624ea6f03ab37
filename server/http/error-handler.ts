// Every failure ends here and leaves as a catalogued error envelope: body parser failures (400, 413),
// catalogued ApiErrors, database errors mapped by db/errors.ts, and anything else as a bare 500.
import type { NextFunction, Request, Response } from 'express';
import { translateDatabaseError } from './database-errors.ts';
import type { Log } from '../../logger.ts';
import type { DatabaseOutage } from '../outage.ts';
import { sendError } from './envelope.ts';
import { ApiError } from './errors.ts';

export function errorHandler(log: Log, outage: DatabaseOutage) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const failure = asApiError(error);
    if (failure.code === 'SERVICE_UNAVAILABLE' && !(error instanceof ApiError)) {
      outage.refused(error);
    } else if (failure.status >= 500) {
      const cause = error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : { error };
      log.error({ requestId: res.locals.requestId, method: req.method, err: cause }, 'request failed');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(res, failure);
  };
}

function asApiError(error: unknown): ApiError {
  const translated = translateDatabaseError(error);
  if (translated instanceof ApiError) return translated;
  const bodyError = translated as { type?: string; status?: number };
  if (bodyError.type === 'entity.too.large') return new ApiError('PAYLOAD_TOO_LARGE');
  if (bodyError.type === 'entity.parse.failed' || bodyError.type === 'encoding.unsupported' || bodyError.type === 'charset.unsupported') {
    return new ApiError('MALFORMED_REQUEST');
  }
  return new ApiError('INTERNAL_ERROR');
}
