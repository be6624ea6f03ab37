// One FCM HTTP v1 send (contract 12): POST {FCM_API_URL}/v1/projects/{project_id}/messages:send with
// the service account's access token, over the worker's keep-alive connections (FCM v1 has no batch
// endpoint), and what its answer means for the delivery:
//   * 200: sent;
//   * 404 UNREGISTERED, 400 INVALID_ARGUMENT naming the registration token, 403 SENDER_ID_MISMATCH:
//     the token is dead, its device is deleted;
//   * 429 and 5xx (and a request that fails or times out): try again later, after Retry-After when
//     it says so;
//   * 401 (or a token endpoint that refuses the grant): the credentials, not the message: nothing
//     is deleted and the try does not count;
//   * any other 4xx: this message was refused (a bug of ours, not of the device): failed.
import { request, type Dispatcher } from 'undici';
import type { FcmConfig } from '../../../config.ts';
import { AccessTokenError, type AccessTokens } from './access-token.ts';
import type { FcmMessage } from './message.ts';

export type SendOutcome =
  | { kind: 'sent' }
  | { kind: 'dead'; reason: 'unregistered' | 'invalid_token' | 'sender_mismatch' }
  | { kind: 'retry'; reason: 'rate_limited' | 'unavailable' | 'network'; retryAfterMs: number | undefined }
  | { kind: 'unauthorized'; detail: string }
  | { kind: 'failed'; reason: string };

interface FcmErrorBody {
  error?: {
    code?: number;
    message?: string;
    status?: string;
    details?: { '@type'?: string; errorCode?: string; fieldViolations?: { field?: string }[] }[];
  };
}

/** Retry-After as seconds or an HTTP date, in milliseconds from now. */
export function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

export function classify(status: number, body: FcmErrorBody, retryAfter: number | undefined): SendOutcome {
  if (status >= 200 && status < 300) return { kind: 'sent' };
  const details = body.error?.details ?? [];
  const fcmCode = details.find((detail) => detail['@type']?.endsWith('google.firebase.fcm.v1.FcmError'))?.errorCode ?? body.error?.status;
  const namesToken =
    details.some((detail) => detail.fieldViolations?.some((violation) => violation.field === 'message.token')) ||
    /registration token/i.test(body.error?.message ?? '');
  if (status === 404 && (fcmCode === 'UNREGISTERED' || fcmCode === 'NOT_FOUND')) return { kind: 'dead', reason: 'unregistered' };
  if (status === 400 && fcmCode === 'INVALID_ARGUMENT' && namesToken) return { kind: 'dead', reason: 'invalid_token' };
  if (status === 403 && fcmCode === 'SENDER_ID_MISMATCH') return { kind: 'dead', reason: 'sender_mismatch' };
  if (status === 401 || (status === 403 && fcmCode === 'THIRD_PARTY_AUTH_ERROR'))
    return { kind: 'unauthorized', detail: `${status} ${body.error?.status ?? ''}`.trim() };
  if (status === 429) return { kind: 'retry', reason: 'rate_limited', retryAfterMs: retryAfter };
  if (status >= 500) return { kind: 'retry', reason: 'unavailable', retryAfterMs: retryAfter };
  return { kind: 'failed', reason: `${status} ${fcmCode ?? ''}`.trim() };
}

export class FcmClient {
  readonly #url: string;
  readonly #tokens: AccessTokens;
  readonly #dispatcher: Dispatcher;
  readonly #timeoutMs: number;

  constructor(fcm: FcmConfig, tokens: AccessTokens, dispatcher: Dispatcher) {
    this.#url = `${fcm.apiUrl}/v1/projects/${encodeURIComponent(fcm.projectId)}/messages:send`;
    this.#tokens = tokens;
    this.#dispatcher = dispatcher;
    // Well inside the lease: a delivery is never taken back while its request may still succeed.
    this.#timeoutMs = Math.max(1000, (fcm.leaseSeconds * 1000) / 3);
  }

  async send(message: FcmMessage): Promise<SendOutcome> {
    let accessToken: string;
    try {
      accessToken = await this.#tokens.get();
    } catch (error) {
      if (error instanceof AccessTokenError) return { kind: 'unauthorized', detail: error.message };
      throw error;
    }
    try {
      const response = await request(this.#url, {
        method: 'POST',
        headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message }),
        dispatcher: this.#dispatcher,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      const body = (await response.body.json().catch(() => ({}))) as FcmErrorBody;
      const outcome = classify(response.statusCode, body, retryAfterMs(response.headers['retry-after']));
      if (outcome.kind === 'unauthorized') this.#tokens.invalidate(accessToken);
      return outcome;
    } catch (error) {
      return { kind: 'retry', reason: 'network', retryAfterMs: undefined, ...{ detail: (error as Error).message } };
    }
  }
}
