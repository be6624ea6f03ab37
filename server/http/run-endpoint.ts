// Runs one endpoint for one request: the update gate (426), token (401), access level (403),
// request shape (422, the Idempotency-Key header's too), the key's claim (409/422 or a replay:
// server/http/idempotency.ts), the write limit (429, checked with the transaction's first
// statement), then the handler inside the request's transaction, the response shaped by the
// endpoint's schema, with the RateLimit headers of the limits it counted under (rate-limit-headers.ts).
// With replicas configured, a read-only GET may run on a replica first (server/http/replica-reads.ts),
// and whatever the primary served for a session raises that session's read floor before the answer
// leaves. A request that met a failover (a lost primary, a node still read-only) may run again
// from the start (server/http/failover-retry.ts).
import type { NextFunction, Request, Response } from 'express';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer, type Viewer } from '../../db/viewer.ts';
import { authenticate, requireLevel, type AccessLevel } from './auth.ts';
import { clientVersionGate } from './client-version.ts';
import { translateDatabaseError } from './database-errors.ts';
import type { Endpoint, Services } from './endpoint.ts';
import { sendSuccess } from './envelope.ts';
import { FailoverRetry } from './failover-retry.ts';
import { ApiError } from './errors.ts';
import {
  claimRefusal,
  errorAnswer,
  idempotencyKeyHeader,
  idempotencyKeyOf,
  IdempotentRequest,
  isKept,
  sendAnswer,
  successAnswer,
  type Answer,
} from './idempotency.ts';
import { requireIds } from './ids.ts';
import { replicasFor, retryOnPrimary, startReplicaRead, type ReplicaRead } from './replica-reads.ts';
import { parseOrFail, rejectNul } from './validation.ts';
import { setReadFloor } from './read-floor.ts';
import { setRateLimitHeaders } from './rate-limit-headers.ts';
import { writeLimitStatement } from './write-limits.ts';

export function runEndpoint(definition: Endpoint, services: Services) {
  const readReplicas = replicasFor(definition, services.pools.replicas);
  const gate = definition.anyClientVersion ? undefined : clientVersionGate(services.config.clientVersions);
  const serve = async (req: Request, res: Response, next: NextFunction, retry: FailoverRetry): Promise<void> => {
    res.locals.endpoint = definition;
    try {
      gate?.(req);
    } catch (error) {
      next(error);
      return;
    }
    if (readReplicas) {
      const read = await startReplicaRead(definition, req, services, readReplicas).catch(() => undefined);
      if (read && (await answerFromReplica(definition, services, read, req, res, next))) return;
    }
    const tx = new RequestTransaction(services.pools.api, anonymousViewer, services.config.apiTimeouts);
    let idempotent: IdempotentRequest | undefined;
    /** The request's viewer once authenticated (a claim's refusal leaves the transaction anonymous). */
    let viewer = anonymousViewer;
    try {
      const deferredGateLevel = definition.sessionCheckWithFirstStatement ? (definition.level ?? 1) : undefined;
      const level = await authenticate(req, definition.auth, services.tokens, tx, deferredGateLevel);
      if (definition.level) requireLevel(level, definition.level);
      const { body, query, params, key } = await parseRequest(definition, req, tx);
      res.locals.userId = tx.viewer.userId;
      viewer = tx.viewer;
      if (key !== undefined) {
        idempotent = new IdempotentRequest(tx.viewer.userId as string, key, req);
        idempotent.claimWithFirstStatement(tx);
      }
      if (definition.limit) tx.prepend(writeLimitStatement(definition.limit, body, services.writeLimits));
      const data = await definition.handler({ body, query, params, viewer: tx.viewer, level, tx, services, req, res });
      if (definition.stream) {
        await tx.finish(true);
        return;
      }
      const status = definition.statusOf ? definition.statusOf.pick(data) : (definition.status ?? 200);
      if (definition.afterCommit) {
        await answerAfterCommit(definition, definition.afterCommit, services, tx, idempotent, status, data, res);
        return;
      }
      if (idempotent && tx.commitHeld) {
        const answer = successAnswer(status, definition.message ?? 'OK', definition.response.parse(data));
        await idempotent.keep(tx, answer);
        await noteServed(services, tx, res);
        setRateLimitHeaders(res, tx.limitCounts);
        sendAnswer(res, answer);
        return;
      }
      await tx.finish(true);
      await noteServed(services, tx, res);
      setRateLimitHeaders(res, tx.limitCounts);
      sendSuccess(res, status, definition.message ?? 'OK', definition.response.parse(data));
    } catch (thrown) {
      let error = thrown;
      res.locals.userId = tx.viewer.userId;
      if (idempotent && tx.commitHeld && !claimRefusal(error)) {
        // The handler's error answer is kept; keeping it may meet the claim's refusal (a handler that
        // failed before its first statement sent the claim).
        const kept = await keptError(idempotent, tx, res, error);
        if (kept === true) return;
        if (kept !== false) error = kept;
      }
      const refusal = idempotent && claimRefusal(error);
      if (idempotent && refusal) {
        res.locals.userId = viewer.userId;
        await tx.finish(false).catch(() => undefined);
        error = refusal === 'kept' ? await replay(idempotent, services, viewer, res) : refusal;
        if (error === undefined) return;
      }
      await tx.finish(false).catch(() => undefined);
      if (await retry.again(error, tx, res)) return serve(req, res, next, retry);
      await noteServed(services, tx, res).catch(() => undefined);
      // The error goes on as thrown (the error handler translates it, and tells an outage or a
      // request bound from a failure by the database's own error); the limit's numbers are read
      // from its translation.
      const failure = translateDatabaseError(error);
      setRateLimitHeaders(res, tx.limitCounts, failure instanceof ApiError ? failure : undefined);
      next(error);
    }
  };
  return (req: Request, res: Response, next: NextFunction): Promise<void> => serve(req, res, next, new FailoverRetry(definition, req));
}

/**
 * An endpoint whose answer is finished after its commit (Endpoint.afterCommit): the handler's effect
 * commits (with a key, together with the answer so far, so a retry meanwhile replays that), then the
 * final answer, or the final catalogued error, replaces the kept one in a transaction of its own
 * (skipped when a retry holds the key at that moment: it replays the answer so far).
 */
async function answerAfterCommit(
  definition: Endpoint,
  afterCommit: NonNullable<Endpoint['afterCommit']>,
  services: Services,
  tx: RequestTransaction,
  idempotent: IdempotentRequest | undefined,
  status: number,
  data: unknown,
  res: Response,
): Promise<void> {
  const keyed = idempotent !== undefined && tx.commitHeld;
  if (keyed) await idempotent.keep(tx, successAnswer(status, definition.message ?? 'OK', definition.response.parse(data)));
  else await tx.finish(true);
  await noteServed(services, tx, res);
  setRateLimitHeaders(res, tx.limitCounts);
  let answer: Answer;
  try {
    answer = successAnswer(
      status,
      definition.message ?? 'OK',
      definition.response.parse(await afterCommit(data, { viewer: tx.viewer, services })),
    );
  } catch (error) {
    const failure = translateDatabaseError(error);
    if (!(failure instanceof ApiError) || !keyed || !isKept(failure.status)) throw error;
    answer = errorAnswer(failure);
  }
  if (keyed) await idempotent.keepAgain(new RequestTransaction(services.pools.api, tx.viewer, services.config.apiTimeouts), answer);
  sendAnswer(res, answer);
}

/**
 * A read-only GET on the session's replica (server/http/replica-reads.ts), its session already
 * checked on the primary. True when answered (or failed in a way the primary would repeat: the
 * error goes on); false when the primary is to run it (behind the floor, or the replica failed).
 */
async function answerFromReplica(
  definition: Endpoint,
  services: Services,
  read: ReplicaRead,
  req: Request,
  res: Response,
  next: NextFunction,
): Promise<boolean> {
  const { tx, replica } = read;
  try {
    // As the deferred check would: the gate at the endpoint's level, then the handler sees that level.
    const gate = definition.sessionCheckWithFirstStatement ? (definition.level ?? 1) : undefined;
    if (gate !== undefined) requireLevel(read.level, gate as AccessLevel);
    if (definition.level) requireLevel(read.level, definition.level);
    const { body, query, params } = await parseRequest(definition, req, tx);
    res.locals.userId = tx.viewer.userId;
    const data = await definition.handler({ body, query, params, viewer: tx.viewer, level: gate ?? read.level, tx, services, req, res });
    await tx.finish(true);
    const status = definition.statusOf ? definition.statusOf.pick(data) : (definition.status ?? 200);
    replica.served += 1;
    res.locals.readFrom = replica.name;
    if (tx.viewer.sessionId) setReadFloor(res, services.config.jwtSecret, tx.viewer.sessionId, read.floor);
    sendSuccess(res, status, definition.message ?? 'OK', definition.response.parse(data));
    return true;
  } catch (error) {
    await tx.finish(false).catch(() => undefined);
    if (!res.headersSent && retryOnPrimary(error, read.replicas, replica)) {
      read.replicas.primaryReads += 1;
      return false;
    }
    res.locals.userId = tx.viewer.userId;
    next(error);
    return true;
  }
}

/**
 * With replicas: the primary served this session, so its reads must not go back before now
 * (db/replicas.ts); the answer carries the new floor, signed, for the client to send back.
 */
async function noteServed(services: Services, tx: RequestTransaction, res: Response): Promise<void> {
  const sessionId = tx.viewer.sessionId;
  if (!services.pools.replicas || !sessionId) return;
  const floor = await services.pools.replicas.noteServed(sessionId);
  setReadFloor(res, services.config.jwtSecret, sessionId, floor);
}

/**
 * Replays the answer kept with the request's key (its claim found one), read in a transaction of
 * its own. Undefined when sent; else the error to answer.
 */
async function replay(idempotent: IdempotentRequest, services: Services, viewer: Viewer, res: Response): Promise<unknown> {
  const tx = new RequestTransaction(services.pools.api, viewer, services.config.apiTimeouts);
  try {
    const kept = await idempotent.kept(tx);
    await tx.finish(false);
    await noteServed(services, tx, res);
    sendAnswer(res, kept, true);
    return undefined;
  } catch (error) {
    await tx.finish(false).catch(() => undefined);
    return error;
  }
}

/**
 * An error answer the handler gave, kept with the key (a 404 or a 409 is the request's final answer:
 * a retry gets it again, even once the state changed). False when it is not to be kept (401, 429,
 * 5xx, anything uncatalogued) or could not be: the error handler answers it as without a key. The
 * claim's refusal, when keeping met it, is returned.
 */
async function keptError(idempotent: IdempotentRequest, tx: RequestTransaction, res: Response, error: unknown): Promise<boolean | unknown> {
  const failure = translateDatabaseError(error);
  if (!(failure instanceof ApiError) || !isKept(failure.status)) return false;
  const answer = errorAnswer(failure);
  try {
    await idempotent.keepError(tx, answer);
  } catch (keeping) {
    return claimRefusal(keeping) ? keeping : false;
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
