// Idempotency keys (contract part 15). A POST, PUT, PATCH or DELETE of a bearer endpoint may carry
// `Idempotency-Key` (1-255 printable ASCII characters). The request then:
//   1. claims the key ahead of the request's first statement, in its round trip (a prelude of the
//      transaction: app.claim_idempotency_key_first, the key's transaction-scoped advisory lock,
//      then the kept answer): another request with the key still running answers 409
//      IDEMPOTENCY_KEY_IN_USE (Retry-After: 1); a kept answer with another fingerprint 422
//      IDEMPOTENCY_KEY_REUSED; either aborts the transaction, so nothing behind the claim runs. A
//      kept answer with this fingerprint aborts it too (IK001), and is then read in a transaction of
//      its own (app.claim_idempotency_key) and replayed byte for byte with `Idempotent-Replayed:
//      true`: a replay costs two round trips, a first request none of its own;
//   2. else runs with its commit held (RequestTransaction.holdCommit) behind a savepoint;
//   3. keeps its answer (app.keep_idempotent_answer) in the statement that travels with the
//      commit: the effect and the kept answer commit together, or neither does. An error answer
//      the handler gave (404, 409, ...) is kept too, after a rollback to the savepoint (nothing of
//      the handler's remains, as without a key); 401, 429 and 5xx answers are not kept.
// What the database holds cannot be read without the client's key: the key itself is never
// stored, only a digest derived from it and the user (HKDF-SHA256); the fingerprint of method,
// path and body is an HMAC under a second derived key (a vote's body names its position: a plain
// hash of five possible bodies would give it away) and the answer's body is AES-256-GCM ciphertext
// under a third (a vote's answer shows the tally right after the vote). Logs never see either.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { Endpoint } from './endpoint.ts';
import { ApiError } from './errors.ts';

export const idempotencyKeyHeader = 'Idempotency-Key';
export const replayedHeader = 'Idempotent-Replayed';
const keyPattern = /^[\x20-\x7e]{1,255}$/;
const jsonType = 'application/json; charset=utf-8';

/** Whether an endpoint takes the header: writes with a bearer token (a stream writes its own answer). */
export function takesIdempotencyKey(definition: Endpoint): boolean {
  return definition.auth === 'bearer' && definition.method !== 'get' && !definition.stream;
}

/** The request's key: undefined when not sent (or not taken here), a field error when malformed. */
export function idempotencyKeyOf(definition: Endpoint, req: Request): { key: string } | { error: string } | undefined {
  if (!takesIdempotencyKey(definition)) return undefined;
  const value = req.headers['idempotency-key'];
  if (value === undefined) return undefined;
  return typeof value === 'string' && keyPattern.test(value) ? { key: value } : { error: 'Must be 1-255 printable ASCII characters' };
}

/** A whole answer: what is kept, and what is sent (the first time and on each replay). */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export function successAnswer(status: number, message: string, data: unknown): Answer {
  return { status, headers: { 'Content-Type': jsonType }, body: Buffer.from(JSON.stringify({ success: true, message, data })) };
}

/** The envelope of a catalogued error, as server/http/envelope.ts sendError writes it. */
export function errorAnswer(error: ApiError): Answer {
  const body = JSON.stringify({ success: false, error: { code: error.code, message: error.message, details: error.details } });
  return { status: error.status, headers: { ...error.headers, 'Content-Type': jsonType }, body: Buffer.from(body) };
}

/** 401 (the session), 429 (a limit) and 5xx (the server) say nothing final about the request: a retry runs again. */
export function isKept(status: number): boolean {
  return status < 500 && status !== 401 && status !== 429;
}

export function sendAnswer(res: Response, answer: Answer, replayed = false): void {
  res.status(answer.status);
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  if (replayed) res.setHeader(replayedHeader, 'true');
  res.end(answer.body);
}

/**
 * What a claim sent with the first statement (claimWithFirstStatement) refused with: 'kept' (an
 * answer to replay), the 409 or 422 to answer, or undefined when `error` is the request's own.
 */
export function claimRefusal(error: unknown): 'kept' | ApiError | undefined {
  const { code, message } = error as { code?: string; message?: string };
  if (code === 'IK001') return 'kept';
  if (code !== 'P0001') return undefined;
  if (message === 'IDEMPOTENCY_KEY_IN_USE') return new ApiError('IDEMPOTENCY_KEY_IN_USE', {}, { 'Retry-After': '1' });
  if (message === 'IDEMPOTENCY_KEY_REUSED') return new ApiError('IDEMPOTENCY_KEY_REUSED');
  return undefined;
}

/** JSON with object keys sorted: one fingerprint for one body, however the client's library orders or spaces it. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonicalJson((value as Record<string, unknown>)[name])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const savepoint = 'idempotency_claimed';

/** One request's key: the digests derived from it and the user, and the claim, keep and replay. */
export class IdempotentRequest {
  readonly #digest: Buffer;
  readonly #fingerprint: Buffer;
  readonly #answerKey: Buffer;

  constructor(userId: string, key: string, req: Request) {
    const derived = Buffer.from(hkdfSync('sha256', key, userId, 'idempotency-key/v1', 96));
    this.#digest = derived.subarray(0, 32);
    this.#answerKey = derived.subarray(64, 96);
    // The path as sent, with its query; the body as parsed (an empty body reads as {}).
    this.#fingerprint = createHmac('sha256', derived.subarray(32, 64))
      .update(`${req.method}\n${req.originalUrl}\n${canonicalJson(req.body ?? {})}`)
      .digest();
  }

  /**
   * Claims the key with the transaction's first message, after the session check (a prelude: no
   * round trip of its own), and holds the commit. The claim's refusals reach whatever statement
   * carried it: claimRefusal tells them from the request's own errors.
   */
  claimWithFirstStatement(tx: RequestTransaction): void {
    tx.prepend(`select app.claim_idempotency_key_first('\\x${this.#digest.toString('hex')}', '\\x${this.#fingerprint.toString('hex')}')`);
    tx.prepend(`savepoint ${savepoint}`);
    tx.holdCommit();
  }

  /**
   * The kept answer of a claim that found one (claimRefusal 'kept'), read in `tx`, a transaction of
   * its own (rolled back by the caller). 409 and 422 are thrown (the answer is gone: a retry runs).
   */
  async kept(tx: RequestTransaction): Promise<Answer> {
    const answer = await this.claim(tx);
    if (!answer) throw new ApiError('IDEMPOTENCY_KEY_IN_USE', {}, { 'Retry-After': '1' });
    return answer;
  }

  /**
   * Claims the key in `tx` (its first statement after the session check): the kept answer to
   * replay, or undefined when the request runs, with its commit held. 409 and 422 are thrown.
   */
  async claim(tx: RequestTransaction): Promise<Answer | undefined> {
    // The savepoint travels in the claim's pipeline (a replay or a refusal rolls back anyway).
    const [{ rows }] = await Promise.all([
      tx.query<{ outcome: 'new' | 'kept' | 'reused' | 'in_use'; status: number; headers: Record<string, string>; body: Buffer }>(
        'select outcome, status, headers, body from app.claim_idempotency_key($1, $2)',
        [this.#digest, this.#fingerprint],
      ),
      tx.query(`savepoint ${savepoint}`),
    ]);
    const claim = rows[0];
    if (claim?.outcome === 'in_use') throw new ApiError('IDEMPOTENCY_KEY_IN_USE', {}, { 'Retry-After': '1' });
    if (claim?.outcome === 'reused') throw new ApiError('IDEMPOTENCY_KEY_REUSED');
    if (claim?.outcome === 'kept') return { status: claim.status, headers: claim.headers, body: this.#open(claim.body) };
    tx.holdCommit();
    return undefined;
  }

  /** Keeps `answer` and commits it with the request's effect (one round trip: the statement travels with the commit). */
  async keep(tx: RequestTransaction, answer: Answer): Promise<void> {
    tx.releaseCommit();
    await tx.queryAndCommit('select app.keep_idempotent_answer($1, $2, $3, $4, $5)', [
      this.#digest,
      this.#fingerprint,
      answer.status,
      JSON.stringify(answer.headers),
      this.#seal(answer.body),
    ]);
  }

  /**
   * Replaces the kept answer in a transaction of its own (an answer finished after its commit:
   * Endpoint.afterCommit), under the key's lock; left as it is when another request with the key
   * holds the lock at that moment.
   */
  async keepAgain(tx: RequestTransaction, answer: Answer): Promise<void> {
    try {
      await this.claim(tx);
      await this.keep(tx, answer);
    } catch (error) {
      await tx.finish(false).catch(() => undefined);
      if (!(error instanceof ApiError && error.code === 'IDEMPOTENCY_KEY_IN_USE')) throw error;
    }
  }

  /** Keeps an error answer: nothing of the handler's remains (as without a key), then keep. */
  async keepError(tx: RequestTransaction, answer: Answer): Promise<void> {
    await tx.query(`rollback to savepoint ${savepoint}`);
    await this.keep(tx, answer);
  }

  /** nonce (12 bytes) | ciphertext | tag (16 bytes), bound to the key's digest. */
  #seal(body: Buffer): Buffer {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#answerKey, nonce).setAAD(this.#digest);
    return Buffer.concat([nonce, cipher.update(body), cipher.final(), cipher.getAuthTag()]);
  }

  #open(sealed: Buffer): Buffer {
    const decipher = createDecipheriv('aes-256-gcm', this.#answerKey, sealed.subarray(0, 12)).setAAD(this.#digest);
    decipher.setAuthTag(sealed.subarray(-16));
    return Buffer.concat([decipher.update(sealed.subarray(12, -16)), decipher.final()]);
  }
}
