// Runs one endpoint for one request: token (401), access level (403), request shape (422), then the
// handler inside the request's transaction, the response shaped by the endpoint's schema.
import type { NextFunction, Request, Response } from 'express';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer } from '../../db/viewer.ts';
import { authenticate, requireLevel } from './auth.ts';
import type { Endpoint, Services } from './endpoint.ts';
import { sendSuccess } from './envelope.ts';
import { requireIds } from './ids.ts';
import { parseOrFail, rejectNul } from './validation.ts';

export function runEndpoint(definition: Endpoint, services: Services) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const tx = new RequestTransaction(services.pools.api, anonymousViewer);
    res.locals.endpoint = definition;
    try {
      const level = await authenticate(req, definition.auth, services.tokens, tx);
      res.locals.userId = tx.viewer.userId;
      if (definition.level) requireLevel(level, definition.level);
      const body = definition.body ? parseOrFail(definition.body, req.body ?? {}) : undefined;
      const query = definition.query ? parseOrFail(definition.query, req.query) : undefined;
      rejectNul(req.params);
      const params = requireIds(req.params as Record<string, string>, definition.ids ?? {});
      const data = await definition.handler({ body, query, params, viewer: tx.viewer, level, tx, services, req, res });
      await tx.finish(true);
      if (definition.stream) return;
      sendSuccess(res, definition.status ?? 200, definition.message ?? 'OK', definition.response.parse(data));
    } catch (error) {
      await tx.finish(false).catch(() => undefined);
      next(error);
    }
  };
}
