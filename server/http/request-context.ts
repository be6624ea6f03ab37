// X-Request-Id on every response (echoed when the client sent a usable one) and one log line per
// request: method, route pattern (spelled as in the metrics: server/http/route-name.ts; never the
// raw URL: paths hold ids and queries search terms), status, time, user id, the replica that served a read. Never bodies, tokens, codes or phone numbers.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { z } from 'zod';
import type { Log } from '../../logger.ts';
import { routePattern } from './route-name.ts';

/** A usable X-Request-Id (the OpenAPI document's header and parameter are this schema). */
export const usableRequestId = z
  .string()
  .max(128)
  .regex(/^[A-Za-z0-9._:-]{1,128}$/);

export function requestContext(log: Log) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const sent = usableRequestId.safeParse(req.headers['x-request-id']);
    const requestId = sent.success ? sent.data : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      log.info(
        {
          requestId,
          method: req.method,
          route: routePattern(req, res),
          status: res.statusCode,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          userId: res.locals.userId ?? undefined,
          // The replica (host:port) that served a read; absent: the primary (db/replicas.ts).
          replica: res.locals.readFrom ?? undefined,
        },
        'request',
      );
    });
    next();
  };
}
