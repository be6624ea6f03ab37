// Runs one endpoint for one request: the update gate (426), token (401), access level (403),
// request shape (422, the Idempotency-Key header's too), the key's claim (409/422 or a replay:
// server/http/idempotency.ts), the write limit (429, checked with the transaction's first
// statement), then the handler inside the request's transaction, the response shaped by the
// endpoint's schema, with the RateLimit headers of the limits it counted under (rate-limit-headers.ts).
import type { NextFunction, Request, Response } from 'express';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer } from '../../db/viewer.ts';
import { authenticate, requireLevel } from './auth.ts';
import { clientVersionGate } from './client-version.ts';
import { translateDatabaseError } from './database-errors.ts';
import type { Endpoint, Services } from './endpoint.ts';
import { sendSuccess } from './envelope.ts';
import { ApiError } from './errors.ts';
import { errorAnswer, idempotencyKeyHeader, idempotencyKeyOf, IdempotentRequest, isKept, sendAnswer, successAnswer } from './idempotency.ts';
import { requireIds } from './ids.ts';
import { parseOrFail, rejectNul } from './validation.ts';
import { setRateLimitHeaders } from './rate-limit-headers.ts';
import { writeLimitStatement } from './write-limits.ts';

export function runEndpoint(definition: Endpoint, services: Services) {
  const gate = definition.anyClientVersion ? undefined : clientVersionGate(services.config.clientVersions);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const tx = new RequestTransaction(services.pools.api, anonymousViewer, services.config.apiTimeouts);
    res.locals.endpoint = definition;
    let idempotent: IdempotentRequest | undefined;
    try {
      gate?.(req);
      const deferredGateLevel = definition.sessionCheckWithFirstStatement ? (definition.level ?? 1) : undefined;
      const level = await authenticate(req, definition.auth, services.tokens, tx, deferredGateLevel);
      if (definition.level) requireLevel(level, definition.level);
      const { body, query, params, key } = await parseRequest(definition, req, tx);
      res.locals.userId = tx.viewer.userId;
      if (key !== undefined) {
        idempotent = new IdempotentRequest(tx.viewer.userId as string, key, req);
        const kept = await idempotent.claim(tx);
        if (kept) {
          await tx.finish(false);
          sendAnswer(res, kept, true);
          return;
        }
      }
      if (definition.limit) tx.prepend(writeLimitStatement(definition.limit, body, services.writeLimits));
      const data = await definition.handler({ body, query, params, viewer: tx.viewer, level, tx, services, req, res });
      if (definition.stream) {
        await tx.finish(true);
        return;
      }
      const status = definition.statusOf ? definition.statusOf.pick(data) : (definition.status ?? 200);
      if (idempotent && tx.commitHeld) {
        const answer = successAnswer(status, definition.message ?? 'OK', definition.response.parse(data));
        await idempotent.keep(tx, answer);
        setRateLimitHeaders(res, tx.limitCounts);
        sendAnswer(res, answer);
        return;
      }
      await tx.finish(true);
      setRateLimitHeaders(res, tx.limitCounts);
      sendSuccess(res, status, definition.message ?? 'OK', definition.response.parse(data));
    } catch (error) {
      res.locals.userId = tx.viewer.userId;
      if (idempotent && tx.commitHeld && (await keptError(idempotent, tx, res, error))) return;
      await tx.finish(false).catch(() => undefined);
      const failure = translateDatabaseError(error);
      setRateLimitHeaders(res, tx.limitCounts, failure instanceof ApiError ? failure : undefined);
      next(failure);
    }
  };
}

/**
 * An error answer the handler gave, kept with the key (a 404 or a 409 is the request's final answer:
 * a retry gets it again, even once the state changed). False when it is not to be kept (401, 429,
 * 5xx, anything uncatalogued) or could not be: the error handler answers it as without a key.
 */
async function keptError(idempotent: IdempotentRequest, tx: RequestTransaction, res: Response, error: unknown): Promise<boolean> {
  const failure = translateDatabaseError(error);
  if (!(failure instanceof ApiError) || !isKept(failure.status)) return false;
  const answer = errorAnswer(failure);
  try {
    await idempotent.keepError(tx, answer);
  } catch {
    return false;
  }
  setRateLimitHeaders(res, tx.limitCounts, failure);
  sendAnswer(res, answer);
  return true;
}

/**
 * Body, query, path ids and the Idempotency-Key header (422 / 404). A request shape error answers
 * only once the session is known good: with a deferred session check, that check runs first
 * (contract order 401, 403, 422).
 */
async function parseRequest(definition: Endpoint, req: Request, tx: RequestTransaction) {
  try {
    const sent = idempotencyKeyOf(definition, req);
    let body;
    try {
      body = definition.body ? parseOrFail(definition.body, req.body ?? {}) : undefined;
    } catch (error) {
      // One answer names every field: the body's and the header's.
      if (sent && 'error' in sent && error instanceof ApiError && error.code === 'VALIDATION_FAILED') {
        throw new ApiError('VALIDATION_FAILED', { fields: { ...(error.details.fields as object), [idempotencyKeyHeader]: sent.error } });
      }
      throw error;
    }
    if (sent && 'error' in sent) throw new ApiError('VALIDATION_FAILED', { fields: { [idempotencyKeyHeader]: sent.error } });
    const query = definition.query ? parseOrFail(definition.query, req.query) : undefined;
    rejectNul(req.params);
    const params = requireIds(req.params as Record<string, string>, definition.ids ?? {}, definition.pathParameters);
    return { body, query, params, key: sent && 'key' in sent ? sent.key : undefined };
  } catch (error) {
    await tx.client();
    throw error;
  }
}
