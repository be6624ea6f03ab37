// Access tokens (JWT, HS256, 15 minutes, `sub` = user id, `sid` = session id) and opaque refresh
// tokens (random, stored only as SHA-256 hashes).
import { createHash, createSecretKey, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { isUuid } from '../http/ids.ts';

export const accessTokenSeconds = 900;
export const refreshTokenSeconds = 2_592_000;

export interface AccessClaims {
  userId: string;
  sessionId: string;
}

export interface Tokens {
  issueAccess(claims: AccessClaims): string;
  verifyAccess(token: string): AccessClaims | null;
  newRefresh(): { token: string; hash: Buffer };
}

export function hashRefreshToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function createTokens(secret: string): Tokens {
  // A KeyObject made once: given a string, jsonwebtoken tries to parse it as a public key (and
  // fails) on every verify.
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  return {
    issueAccess: ({ userId, sessionId }) =>
      jwt.sign({ sid: sessionId, typ: 'access' }, key, {
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
  };
}
