// Bearer authentication and the access-level gate.
import type { Request } from 'express';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { userViewer } from '../../db/viewer.ts';
import type { ErrorCode } from './catalog.ts';
import { ApiError } from './errors.ts';
import type { Tokens } from '../auth/tokens.ts';

/** Whether an endpoint takes a token: never, when sent, or always. */
export type AuthMode = 'public' | 'optional' | 'bearer';
/** The access levels of spec part 5 an endpoint can require. */
export type AccessLevel = 1 | 2 | 3 | 4;

export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? '';
}

/**
 * Resolves the request's viewer. Returns the access level (0 for no token). A missing token on a
 * bearer endpoint, or an invalid, expired or revoked one where a token counts, is 401.
 */
export async function authenticate(
  req: Request,
  mode: AuthMode,
  tokens: Tokens,
  tx: RequestTransaction,
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
  const level = await tx.openWithSession(userViewer(claims.userId, claims.sessionId));
  if (level === null) {
    if (mode === 'public') return 0;
    throw new ApiError('UNAUTHORIZED');
  }
  return level;
}

const missingLevelCode: Record<AccessLevel, ErrorCode> = {
  1: 'UNAUTHORIZED',
  2: 'PROFILE_BASICS_REQUIRED',
  3: 'PHONE_VERIFICATION_REQUIRED',
  4: 'HUB_READINESS_REQUIRED',
};

/** The one gate: answers the 403 code of the first level the viewer lacks. */
export function requireLevel(level: number, required: AccessLevel): void {
  if (level >= required) return;
  const missing = Math.min(Math.max(level + 1, 1), required) as AccessLevel;
  throw new ApiError(missingLevelCode[missing]);
}
