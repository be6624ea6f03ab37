// Runs one endpoint for one request: the update gate (426), token (401), access level (403), request shape (422), the
// write limit (429, checked with the transaction's first statement), then the handler inside the
// request's transaction, the response shaped by the endpoint's schema, with the RateLimit headers
// of the limits it counted under (rate-limit-headers.ts).
import type { NextFunction, Request, Response } from 'express';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer } from '../../db/viewer.ts';
import { authenticate, requireLevel } from './auth.ts';
import { clientVersionGate } from './client-version.ts';
import type { Endpoint, Services } from './endpoint.ts';
import { translateDatabaseError } from './database-errors.ts';
import { sendSuccess } from './envelope.ts';
import { ApiError } from './errors.ts';
import { requireIds } from './ids.ts';
import { parseOrFail, rejectNul } from './validation.ts';
import { setRateLimitHeaders } from './rate-limit-headers.ts';
import { writeLimitStatement } from './write-limits.ts';

export function runEndpoint(definition: Endpoint, services: Services) {
  const gate = definition.anyClientVersion ? undefined : clientVersionGate(services.config.clientVersions);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const tx = new RequestTransaction(services.pools.api, anonymousViewer);
    res.locals.endpoint = definition;
    try {
      gate?.(req);
      const deferredGateLevel = definition.sessionCheckWithFirstStatement ? (definition.level ?? 1) : undefined;
      const level = await authenticate(req, definition.auth, services.tokens, tx, deferredGateLevel);
      if (definition.level) requireLevel(level, definition.level);
      const { body, query, params } = await parseRequest(definition, req, tx);
      if (definition.limit) tx.prepend(writeLimitStatement(definition.limit, body, services.writeLimits));
      res.locals.userId = tx.viewer.userId;
      const data = await definition.handler({ body, query, params, viewer: tx.viewer, level, tx, services, req, res });
      await tx.finish(true);
      setRateLimitHeaders(res, tx.limitCounts);
      if (definition.stream) return;
      const status = definition.statusOf ? definition.statusOf.pick(data) : (definition.status ?? 200);
      sendSuccess(res, status, definition.message ?? 'OK', definition.response.parse(data));
    } catch (error) {
      res.locals.userId = tx.viewer.userId;
      await tx.finish(false).catch(() => undefined);
      const failure = translateDatabaseError(error);
      if (!res.headersSent) setRateLimitHeaders(res, tx.limitCounts, failure instanceof ApiError ? failure : undefined);
      next(failure);
    }
  };
}

/**
 * Body, query and path ids (422 / 404). A request shape error answers only once the session is
 * known good: with a deferred session check, that check runs first (contract order 401, 403, 422).
 */
async function parseRequest(definition: Endpoint, req: Request, tx: RequestTransaction) {
  try {
    const body = definition.body ? parseOrFail(definition.body, req.body ?? {}) : undefined;
    const query = definition.query ? parseOrFail(definition.query, req.query) : undefined;
    rejectNul(req.params);
    const params = requireIds(req.params as Record<string, string>, definition.ids ?? {});
    return { body, query, params };
  } catch (error) {
    await tx.client();
    throw error;
  }
}
