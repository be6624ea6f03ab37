// Which requests a streaming replica may serve, and how one starts (db/replicas.ts holds the
// replicas and the sessions' read floors; server/http/run-endpoint.ts runs the endpoint).
//
// A `GET` endpoint that only reads may run on the replica of its session once that replica has
// replayed past the session's floor. A request that carries its signed floor (server/http/read-floor.ts)
// is checked on the replica itself, in the read's first round trip, once the replica has also
// replayed every revocation older than REPLICA_MAX_LAG_MS (db/replicas.ts revocationFloor): the
// primary does nothing for it. One without it is checked on the primary together with its floor
// (a revoked session stops at once). The notification stream stays on the primary (it re-reads
// what the live connection announced). A read the replica cannot serve (behind the floor, gone
// mid-request, a recovery conflict, or a statement that turns out to write) is run again on the
// primary, once.
import type { Request } from 'express';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { lsnText, type Replica, type ReplicaSet } from '../../db/replicas.ts';
import { anonymousViewer, userViewer, type Viewer } from '../../db/viewer.ts';
import { bearerToken } from './auth.ts';
import { readFloorOf } from './read-floor.ts';
import { translateDatabaseError } from './database-errors.ts';
import type { Endpoint, Services } from './endpoint.ts';
import { ApiError } from './errors.ts';

/**
 * How long a read waits on its replica for the session's floor, when the last poll saw the replica
 * lag at most a poll interval: a replica with no lag replays a write within milliseconds, and a read
 * that went to the primary instead would cost it two transactions (the read and its floor).
 */
const replayWaitMillis = 50;

/** The replay check sent first on the replica (RB001 when it did not get to `floor` in time). */
const replayCheck = (floor: bigint) => `select app.replica_caught_up('${lsnText(floor)}', ${replayWaitMillis})`;

export interface ReplicaRead {
  tx: RequestTransaction;
  replica: Replica;
  replicas: ReplicaSet;
  /** The viewer's access level from the session check (0: anonymous). */
  level: number;
  /** The floor the replica serves the session at (its answer hands it back, signed). */
  floor: bigint;
}

/** The replicas an endpoint's reads may use: undefined for writes, the stream, or when none is configured. */
export function replicasFor(definition: Endpoint, replicas: ReplicaSet | undefined): ReplicaSet | undefined {
  if (!replicas || definition.method !== 'get' || definition.stream) return undefined;
  return replicas;
}

/**
 * Starts a read on the replica of the request's session: the session check on the replica when the
 * request carries its floor, else the check and the floor on the primary (one statement); the
 * transaction on the replica, carrying the replay check (app.replica_caught_up) in its first round
 * trip when the last poll did not already show the replica past the floor (a replica that lagged
 * more than a poll interval then goes straight to the primary). Undefined: the request runs on the
 * primary as any other (no usable replica, or a token the primary path must refuse).
 */
export async function startReplicaRead(
  definition: Endpoint,
  req: Request,
  services: Services,
  replicas: ReplicaSet,
): Promise<ReplicaRead | undefined> {
  const token = bearerToken(req);
  const claims = token === undefined ? null : services.tokens.verifyAccess(token);
  if (token === undefined ? definition.auth === 'bearer' : !claims && definition.auth !== 'public') return undefined;
  const replica = replicas.replicaFor(claims?.sessionId ?? null);
  if (!replica) {
    replicas.primaryReads += 1;
    return undefined;
  }
  if (claims) {
    const carried = readFloorOf(req, services.config.jwtSecret, claims.sessionId);
    const revocations = replicas.revocationFloor();
    if (carried !== undefined && revocations !== undefined) {
      const floor = [carried, revocations, replicas.notedFloor(claims.sessionId)].reduce((a, b) => (a > b ? a : b));
      return checkedOnReplica(definition, services, replicas, replica, userViewer(claims.userId, claims.sessionId), floor);
    }
  }
  let viewer: Viewer = anonymousViewer;
  let level = 0;
  let floor = 0n;
  if (claims) {
    const session = await replicas.sessionFloor(claims.sessionId, claims.userId);
    if (session.level === null) {
      // Not live: the primary path answers 401 (or reads as anonymous on a public endpoint).
      if (definition.auth !== 'public') return undefined;
    } else {
      viewer = userViewer(claims.userId, claims.sessionId);
      level = session.level;
      floor = session.floor;
    }
  }
  const reached = replicas.reached(replica, floor);
  if (reached === 'behind') {
    replicas.primaryReads += 1;
    return undefined;
  }
  const tx = new RequestTransaction(replica.pool, viewer, services.config.apiTimeouts);
  if (reached === 'check') tx.prepend(replayCheck(floor));
  return { tx, replica, replicas, level, floor };
}

/**
 * A read whose session is checked on the replica, in the transaction's opening, behind the replay
 * check of `floor` when needed. A session the replica finds not live goes to the primary (which
 * answers 401), or reads as anonymous on a public endpoint.
 */
async function checkedOnReplica(
  definition: Endpoint,
  services: Services,
  replicas: ReplicaSet,
  replica: Replica,
  viewer: Viewer,
  floor: bigint,
): Promise<ReplicaRead | undefined> {
  const reached = replicas.reached(replica, floor);
  if (reached === 'behind') {
    replicas.primaryReads += 1;
    return undefined;
  }
  const tx = new RequestTransaction(replica.pool, anonymousViewer, services.config.apiTimeouts);
  if (reached === 'check') tx.prepend(replayCheck(floor));
  let level: number | null;
  try {
    level = await tx.openWithSession(viewer);
  } catch (error) {
    await tx.finish(false).catch(() => undefined);
    if (retryOnPrimary(error, replicas, replica)) replicas.primaryReads += 1;
    return undefined;
  }
  if (level === null && definition.auth !== 'public') {
    await tx.finish(false);
    return undefined;
  }
  replicas.sessionChecks += 1;
  return { tx, replica, replicas, level: level ?? 0, floor };
}

/**
 * Whether a read that failed on a replica runs again on the primary: the replica is behind the
 * session (RB001), the statement writes (25006: the endpoint is not read-only after all), a recovery
 * conflict cancelled it (40001), no read connection freed up in time, or the replica is gone or
 * refuses connections (it is then skipped until a poll finds it well). A catalogued refusal (404, 403...) is the answer.
 */
export function retryOnPrimary(error: unknown, replicas: ReplicaSet, replica: Replica): boolean {
  if (error instanceof ApiError) return false;
  const code = (error as { code?: string }).code;
  if (code === 'RB001' || code === '25006' || code === '40001') return true;
  const message = (error as Error).message ?? '';
  // No connection within a second (every one busy, or a new one slow to log in): the replica is
  // slow, maybe not gone (its poll, on a connection of its own, judges that); this read goes to the primary.
  // A client left broken by such a failure ("not queryable") says nothing more about the replica.
  if (/timeout exceeded when trying to connect|terminated due to connection timeout|not queryable/i.test(message)) return true;
  const translated = translateDatabaseError(error);
  const lost =
    (translated instanceof ApiError && translated.code === 'SERVICE_UNAVAILABLE') ||
    /Connection terminated|terminating connection/i.test(message);
  if (lost) replicas.failed(replica);
  return lost;
}
