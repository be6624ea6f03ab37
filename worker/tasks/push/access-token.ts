// OAuth 2 access tokens for FCM from the service account (contract 12): a JWT signed with the
// account's private key (RS256; iss = client_email, scope firebase.messaging, aud = token_uri, one
// hour), exchanged at the account's token_uri (the JWT-bearer grant, RFC 7523), and reused until a
// minute before it expires. One exchange at a time: concurrent senders wait for the same one.
import jwt from 'jsonwebtoken';
import { request, type Dispatcher } from 'undici';
import type { FcmConfig } from '../../../config.ts';

export const fcmScope = 'https://www.googleapis.com/auth/firebase.messaging';
const refreshBeforeMs = 60_000;

/** The token endpoint refused the grant or could not be reached: a configuration problem (or an outage). */
export class AccessTokenError extends Error {}

export class AccessTokens {
  readonly #fcm: FcmConfig;
  readonly #dispatcher: Dispatcher;
  #current: { value: string; expiresAt: number } | undefined;
  #pending: Promise<string> | undefined;

  constructor(fcm: FcmConfig, dispatcher: Dispatcher) {
    this.#fcm = fcm;
    this.#dispatcher = dispatcher;
  }

  /** A valid access token, from the cache or a new exchange. */
  async get(): Promise<string> {
    if (this.#current && this.#current.expiresAt - refreshBeforeMs > Date.now()) return this.#current.value;
    this.#pending ??= this.#exchange().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  /** Forgets a token FCM refused (401), so the next send exchanges a new one. */
  invalidate(value: string): void {
    if (this.#current?.value === value) this.#current = undefined;
  }

  async #exchange(): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const assertion = jwt.sign(
      { iss: this.#fcm.clientEmail, scope: fcmScope, aud: this.#fcm.tokenUri, iat: now, exp: now + 3600 },
      this.#fcm.privateKey,
      {
        algorithm: 'RS256',
      },
    );
    let status: number;
    let body: { access_token?: unknown; expires_in?: unknown; error?: unknown; error_description?: unknown };
    try {
      const response = await request(this.#fcm.tokenUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
        dispatcher: this.#dispatcher,
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      status = response.statusCode;
      body = (await response.body.json().catch(() => ({}))) as typeof body;
    } catch (error) {
      throw new AccessTokenError(`the token endpoint ${this.#fcm.tokenUri} could not be reached (${(error as Error).message})`);
    }
    if (status !== 200 || typeof body.access_token !== 'string') {
      throw new AccessTokenError(
        `the token endpoint answered ${status} ${String(body.error ?? '')} ${String(body.error_description ?? '')}`.trim(),
      );
    }
    const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : 3600;
    this.#current = { value: body.access_token, expiresAt: Date.now() + expiresIn * 1000 };
    return body.access_token;
  }
}
