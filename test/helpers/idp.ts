// A local identity provider: an RSA key set served over HTTP, and ID tokens signed with it.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';

export interface TestIdp {
  jwksUrl: string;
  sign(claims: Record<string, unknown>, options?: { kid?: string; key?: KeyObject; algorithm?: jwt.Algorithm }): string;
  /** A key pair whose public half is not in the key set. */
  strangerKey: KeyObject;
  close(): Promise<void>;
}

export async function startTestIdp(): Promise<TestIdp> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = 'test-key-1';
  const server = http.createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }] }));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    jwksUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`,
    strangerKey: stranger.privateKey,
    sign(claims, options = {}) {
      const algorithm = options.algorithm ?? 'RS256';
      const key = algorithm.startsWith('HS') ? 'shared-secret' : (options.key ?? privateKey);
      return jwt.sign(claims, key, { algorithm, keyid: options.kid ?? kid });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Claims of a valid token for `projectId`, at the current time. */
export function idpClaims(projectId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: `https://securetoken.google.com/${projectId}`,
    aud: projectId,
    sub: 'idp-subject-1',
    iat: now - 10,
    auth_time: now - 20,
    exp: now + 3600,
    firebase: { sign_in_provider: 'anonymous' },
    ...overrides,
  };
}
