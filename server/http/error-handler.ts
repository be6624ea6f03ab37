// Every failure ends here and leaves as a catalogued error envelope: body parser failures (400, 413),
// paths that are not valid percent-encoding (400),
// catalogued ApiErrors, database errors mapped by server/http/database-errors.ts, and anything else as a bare 500.
import type { NextFunction, Request, Response } from 'express';
import { timeoutOf, translateDatabaseError } from './database-errors.ts';
import { routePattern } from './route-name.ts';
import type { Log } from '../../logger.ts';
import type { DatabaseOutage } from '../outage.ts';
import { sendError } from './envelope.ts';
import { ApiError } from './errors.ts';

export function errorHandler(log: Log, outage: DatabaseOutage) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const failure = asApiError(error);
    const timeout = timeoutOf(error);
    if (timeout) {
      // One line per request that hit a bound: which one, on which route (the request log has the rest).
      log.warn(
        { requestId: res.locals.requestId, method: req.method, route: routePattern(req, res), bound: timeout },
        `request stopped by ${timeout}: answered 503`,
      );
    } else if (failure.code === 'SERVICE_UNAVAILABLE' && !(error instanceof ApiError)) {
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
  // Refusals of the body parser and the router (http-errors with a 4xx status): a body over the
  // limit; a body that is not JSON, in an unsupported charset or content encoding, or that does not
  // decompress; a path that is not valid percent-encoding.
  const status = (translated as { status?: unknown }).status;
  if (status === 413) return new ApiError('PAYLOAD_TOO_LARGE');
  if (typeof status === 'number' && status >= 400 && status < 500) return new ApiError('MALFORMED_REQUEST');
  return new ApiError('INTERNAL_ERROR');
}
