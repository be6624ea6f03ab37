// Access tokens (JWT, HS256, 15 minutes, `sub` = user id, `sid` = session id) and opaque refresh
// tokens (random, stored only as SHA-256 hashes). A refresh rotates a token into its successor,
// derived from the token with a key of the server's (HMAC): the same presented token always names
// the same successor, so a repeat inside the grace window (db/sql/auth.sql) answers the same pair
// while the database keeps hashes only.
import { createHash, createHmac, createSecretKey, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { isUuid } from '../http/ids.ts';

export const accessTokenSeconds = 900;
export const refreshTokenSeconds = 2_592_000;

export interface AccessClaims {
  userId: string;
  sessionId: string;
}

export interface Tokens {
  /** `issuedAt`: the token's `iat` (default now); the same claims and time sign the same token. */
  issueAccess(claims: AccessClaims, issuedAt?: Date): string;
  verifyAccess(token: string): AccessClaims | null;
  newRefresh(): { token: string; hash: Buffer };
  /** The token a refresh of `token` rotates it into (always the same one for the same token). */
  successorRefresh(token: string): { token: string; hash: Buffer };
}

export function hashRefreshToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function createTokens(secret: string): Tokens {
  // A KeyObject made once: given a string, jsonwebtoken tries to parse it as a public key (and
  // fails) on every verify.
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  // Its own key, not the signing key itself: a successor is no JWT signature.
  const successorKey = createHmac('sha256', Buffer.from(secret, 'utf8')).update('refresh-token-successor').digest();
  return {
    issueAccess: ({ userId, sessionId }, issuedAt = new Date()) =>
      jwt.sign({ sid: sessionId, typ: 'access', iat: Math.floor(issuedAt.getTime() / 1000) }, key, {
        algorithm: 'HS256',
        subject: userId,
        expiresIn: accessTokenSeconds,
      }),
    verifyAccess(token) {
      try {
        const claims = jwt.verify(token, key, { algorithms: ['HS256'] });
        // jsonwebtoken checks `exp` only when present: a token without one would never expire.
        if (typeof claims !== 'object' || claims.typ !== 'access' || typeof claims.exp !== 'number') return null;
        if (!isUuid(claims.sub) || !isUuid(claims.sid)) return null;
        return { userId: claims.sub, sessionId: claims.sid };
      } catch {
        return null;
      }
    },
    newRefresh() {
      const token = `rt_${randomBytes(32).toString('base64url')}`;
      return { token, hash: hashRefreshToken(token) };
    },
    successorRefresh(token) {
      const successor = `rt_${createHmac('sha256', successorKey).update(token).digest('base64url')}`;
      return { token: successor, hash: hashRefreshToken(successor) };
    },
  };
}
