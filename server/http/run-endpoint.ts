// Runs one endpoint for one request: token (401), access level (403), request shape (422), the
// write limit (429, checked with the transaction's first statement), then the handler inside the
// request's transaction, the response shaped by the endpoint's schema. With replicas configured, a
// read-only GET may run on a replica first (server/http/replica-reads.ts); what the primary served
// for a session raises that session's read floor before the answer leaves.
import type { NextFunction, Request, Response } from 'express';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer } from '../../db/viewer.ts';
import { authenticate, requireLevel, type AccessLevel } from './auth.ts';
import type { Endpoint, Services } from './endpoint.ts';
import { sendSuccess } from './envelope.ts';
import { requireIds } from './ids.ts';
import { replicasFor, retryOnPrimary, startReplicaRead } from './replica-reads.ts';
import { parseOrFail, rejectNul } from './validation.ts';
import { writeLimitStatement } from './write-limits.ts';

export function runEndpoint(definition: Endpoint, services: Services) {
  const readReplicas = replicasFor(definition, services.pools.replicas);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    res.locals.endpoint = definition;
    const read = readReplicas && (await startReplicaRead(definition, req, services.tokens, readReplicas).catch(() => undefined));
    if (read) {
      try {
        const data = await handle(definition, services, req, res, read.tx, read.level);
        read.replica.served += 1;
        res.locals.readFrom = read.replica.name;
        respond(definition, res, data);
        return;
      } catch (error) {
        await read.tx.finish(false).catch(() => undefined);
        if (res.headersSent || !retryOnPrimary(error, readReplicas, read.replica)) {
          res.locals.userId = read.tx.viewer.userId;
          next(error);
          return;
        }
        readReplicas.primaryReads += 1;
      }
    }
    const tx = new RequestTransaction(services.pools.api, anonymousViewer);
    try {
      const data = await handle(definition, services, req, res, tx);
      await noteServed(services, tx);
      respond(definition, res, data);
    } catch (error) {
      res.locals.userId = tx.viewer.userId;
      await tx.finish(false).catch(() => undefined);
      await noteServed(services, tx).catch(() => undefined);
      next(error);
    }
  };
}

/**
 * The checks and the handler in `tx`, committed. `knownLevel`: the session was checked already
 * (a replica read, server/http/replica-reads.ts), and this is its level.
 */
async function handle(definition: Endpoint, services: Services, req: Request, res: Response, tx: RequestTransaction, knownLevel?: number): Promise<unknown> {
  const deferredGateLevel = definition.sessionCheckWithFirstStatement ? (definition.level ?? 1) : undefined;
  let level: number;
  if (knownLevel === undefined) {
    level = await authenticate(req, definition.auth, services.tokens, tx, deferredGateLevel);
  } else {
    level = knownLevel;
    if (deferredGateLevel !== undefined) requireLevel(level, deferredGateLevel as AccessLevel);
  }
  if (definition.level) requireLevel(level, definition.level);
  if (knownLevel !== undefined && deferredGateLevel !== undefined) level = deferredGateLevel;
  const { body, query, params } = await parseRequest(definition, req, tx);
  if (definition.limit) tx.prepend(writeLimitStatement(definition.limit, body, services.writeLimits));
  res.locals.userId = tx.viewer.userId;
  const data = await definition.handler({ body, query, params, viewer: tx.viewer, level, tx, services, req, res });
  await tx.finish(true);
  return data;
}

function respond(definition: Endpoint, res: Response, data: unknown): void {
  if (definition.stream) return;
  const status = definition.statusOf ? definition.statusOf.pick(data) : (definition.status ?? 200);
  sendSuccess(res, status, definition.message ?? 'OK', definition.response.parse(data));
}

/** With replicas: the primary served this session, so its reads must not go back before now (db/replicas.ts). */
async function noteServed(services: Services, tx: RequestTransaction): Promise<void> {
  const sessionId = tx.viewer.sessionId;
  if (services.pools.replicas && sessionId) await services.pools.replicas.noteServed(sessionId);
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
