// Identity-provider ID tokens (contract section 3): RS256 only, signed by a key of the configured
// key set (fetched from IDP_JWKS_URL, cached, refreshed when an unknown `kid` appears), issuer,
// audience, expiry, issued-at and auth-time in the past, a subject of 1-128 characters, and the
// phone or anonymous sign-in provider. A phone token yields its E.164 phone number.
import { createPublicKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';

export interface IdpIdentity {
  subject: string;
  phoneE164: string | null;
}

export interface IdpVerifier {
  /** The verified identity, or null for any token that fails a check. */
  verify(idToken: string): Promise<IdpIdentity | null>;
}

interface Jwk {
  kid?: string;
  kty?: string;
  alg?: string;
  use?: string;
}

const refreshIntervalMs = 30_000;

export function createIdpVerifier(options: { projectId: string; issuer: string; jwksUrl: string }): IdpVerifier {
  let keys = new Map<string, KeyObject>();
  let fetchedAt = 0;
  let inflight: Promise<void> | undefined;

  async function fetchKeys(): Promise<void> {
    const response = await fetch(options.jwksUrl, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new Error(`key set answered ${response.status}`);
    const body = (await response.json()) as { keys?: Jwk[] };
    const next = new Map<string, KeyObject>();
    for (const jwk of body.keys ?? []) {
      if (!jwk.kid || jwk.kty !== 'RSA') continue;
      next.set(jwk.kid, createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }));
    }
    keys = next;
    fetchedAt = Date.now();
  }

  async function keyFor(kid: string): Promise<KeyObject | undefined> {
    if (!keys.has(kid) && Date.now() - fetchedAt > refreshIntervalMs) {
      inflight ??= fetchKeys().finally(() => {
        inflight = undefined;
      });
      await inflight.catch(() => undefined);
    }
    return keys.get(kid);
  }

  return {
    async verify(idToken) {
      const decoded = jwt.decode(idToken, { complete: true });
      if (!decoded || decoded.header.alg !== 'RS256' || !decoded.header.kid) return null;
      const key = await keyFor(decoded.header.kid);
      if (!key) return null;
      let claims: jwt.JwtPayload;
      try {
        const verified = jwt.verify(idToken, key, {
          algorithms: ['RS256'],
          audience: options.projectId,
          issuer: options.issuer,
        });
        // jsonwebtoken accepts an `aud` array naming the project among others: it must be the project.
        if (typeof verified !== 'object' || verified.aud !== options.projectId) return null;
        claims = verified;
      } catch {
        return null;
      }
      const now = Math.floor(Date.now() / 1000);
      if (typeof claims.exp !== 'number' || claims.exp <= now) return null;
      if (typeof claims.iat !== 'number' || claims.iat > now) return null;
      if (typeof claims.auth_time !== 'number' || claims.auth_time > now) return null;
      if (typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 128) return null;
      const provider = (claims.firebase as { sign_in_provider?: unknown } | undefined)?.sign_in_provider;
      if (provider === 'anonymous') return { subject: claims.sub, phoneE164: null };
      if (provider === 'phone' && typeof claims.phone_number === 'string' && /^\+[1-9]\d{6,14}$/.test(claims.phone_number)) {
        return { subject: claims.sub, phoneE164: claims.phone_number };
      }
      return null;
    },
  };
}
