// Bearer authentication and the access-level gate.
import type { Request } from 'express';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { userViewer } from '../../db/viewer.ts';
import { missingLevelCode, type AccessLevel } from './access-levels.ts';
import { ApiError } from './errors.ts';

/** Whether an endpoint takes a token: never, when sent, or always. */
export type AuthMode = 'public' | 'optional' | 'bearer';
export type { AccessLevel };

/**
 * What the gate needs of the access tokens (server/auth/tokens.ts fills it): stated here, so the
 * endpoint framework does not import the auth endpoints' folder, which imports the framework.
 */
export interface AccessTokenCheck {
  /** The token's user and session when it is a valid, unexpired access token; else null. */
  verifyAccess(token: string): { userId: string; sessionId: string } | null;
}

export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? '';
}

/**
 * Resolves the request's viewer. Returns the access level (0 for no token). A missing token on a
 * bearer endpoint, or an invalid, expired or revoked one where a token counts, is 401. With
 * `deferredGateLevel` (bearer endpoints whose handler starts with a statement), the session check
 * and the gate at that level travel with the request's first statement
 * (RequestTransaction.deferSession) and `deferredGateLevel` is returned: the level the request is
 * known to have once that statement ran.
 */
export async function authenticate(
  req: Request,
  mode: AuthMode,
  tokens: AccessTokenCheck,
  tx: RequestTransaction,
  deferredGateLevel?: number,
): Promise<number> {
  const token = bearerToken(req);
  if (token === undefined) {
    if (mode === 'bearer') throw new ApiError('UNAUTHORIZED');
    return 0;
  }
  const claims = tokens.verifyAccess(token);
  if (!claims) {
    if (mode === 'public') return 0;
    throw new ApiError('UNAUTHORIZED');
  }
  if (deferredGateLevel !== undefined && mode === 'bearer') {
    tx.deferSession(userViewer(claims.userId, claims.sessionId), deferredGateLevel);
    return deferredGateLevel;
  }
  const level = await tx.openWithSession(userViewer(claims.userId, claims.sessionId));
  if (level === null) {
    if (mode === 'public') return 0;
    throw new ApiError('UNAUTHORIZED');
  }
  return level;
}

/** The one gate: answers the code of the first level the viewer lacks (access-levels.ts). */
export function requireLevel(level: number, required: AccessLevel): void {
  const missing = missingLevelCode(level, required);
  if (missing) throw new ApiError(missing);
}
