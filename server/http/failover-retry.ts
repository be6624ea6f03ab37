// Requests the server runs again when the primary changes under them (contract part 19). While
// Patroni promotes a standby and HAProxy moves to it, a request's connection dies, or it reaches a
// node that is still read-only (25006, "during recovery"), shutting down (57P01-57P03) or not
// answering (a connection time-out). Such a request is run again from the start on a fresh
// connection, after a short pause, for up to `retryBudgetMs` from its first such failure (a request
// is bounded anyway: statement_timeout, and the pool's connection wait); past that it answers 503 with
// Retry-After as before (server/http/database-errors.ts). So a planned switchover shows a client a
// slower answer, not an error.
//
// Which requests:
//   - a read (GET, the notification stream aside: its client resumes with Last-Event-ID);
//   - a write carrying an Idempotency-Key: its retry claims the key again, so an effect that did
//     commit before the connection died is replayed, not doubled (server/http/idempotency.ts);
//   - a write without a key only when its transaction never reached a server (the connection was
//     refused or not opened in time) and nothing of it committed: one whose commit may have
//     happened is never run again.
// Nothing is retried once a byte of the answer left.
import type { Request, Response } from 'express';
import { isFailoverError } from '../../db/failover-errors.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { Endpoint } from './endpoint.ts';
import { ApiError } from './errors.ts';
import { idempotencyKeyOf } from './idempotency.ts';

/** How long a request may go on retrying, from its first failover error. */
export const retryBudgetMs = 5000;
/**
 * The pause before each retry doubles from the first, up to the last (with jitter). The last is short:
 * HAProxy lets a new leader take traffic within 250 ms of its promotion (deploy/haproxy), so a
 * longer pause would only add to what a client waits.
 */
const pauseMs = { first: 50, max: 250 };

const connectErrnos = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENOTFOUND']);

/** Whether the error came before any statement reached a server: the connection was refused, not opened in time, or the server is still starting. */
function beforeAnyStatement(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: string };
  if (typeof code === 'string' && (connectErrnos.has(code) || code === '57P03')) return true;
  return /timeout exceeded when trying to connect|terminated due to connection timeout/i.test(message ?? '');
}

type Kind = 'read' | 'keyed' | 'unkeyed';

/** One request's retries: which kind it is, and the time left. */
export class FailoverRetry {
  readonly #kind: Kind | undefined;
  readonly #budgetMs: number;
  /** Set at the first failover error. */
  #deadline: number | undefined;
  #pauseMs = pauseMs.first;
  /** Retries run so far. */
  attempts = 0;

  constructor(definition: Endpoint, req: Request, budgetMs = retryBudgetMs) {
    this.#budgetMs = budgetMs;
    const key = idempotencyKeyOf(definition, req);
    if (definition.stream) this.#kind = undefined;
    else if (definition.method === 'get') this.#kind = 'read';
    else this.#kind = key && 'key' in key ? 'keyed' : 'unkeyed';
  }

  /**
   * After an attempt failed with `error` (its transaction already ended): true, after a pause, when
   * the request is to run again; false when the error stands (not a failover error, a write whose
   * commit may have happened, an answer already started, or no time left).
   */
  async again(error: unknown, tx: RequestTransaction, res: Response): Promise<boolean> {
    if (this.#kind === undefined || res.headersSent || error instanceof ApiError || !isFailoverError(error)) return false;
    if (this.#kind === 'unkeyed' && (tx.limitCounts.committed || !beforeAnyStatement(error))) return false;
    this.#deadline ??= performance.now() + this.#budgetMs;
    const pause = Math.round(this.#pauseMs * (0.5 + Math.random() / 2));
    if (performance.now() + pause >= this.#deadline) return false;
    this.#pauseMs = Math.min(this.#pauseMs * 2, pauseMs.max);
    await new Promise((resolve) => setTimeout(resolve, pause));
    if (res.destroyed) return false;
    this.attempts += 1;
    return true;
  }
}
