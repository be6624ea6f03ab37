// Statements that must run before a request's own, in its transaction (a write limit,
// server/http/write-limits.ts), held until the next message to the server carries them: the
// opening (db/transaction-opening.ts), or the pipeline of the next statement. They cost no round
// trip of their own; when one fails, the transaction is aborted and its error is what the request
// throws.
import type pg from 'pg';

export class StatementPrelude {
  #text = '';
  readonly #onResult: ((result: pg.QueryResult | pg.QueryResult[]) => void) | undefined;

  /** `onResult` sees the held statements' results when they were sent on their own (send). */
  constructor(onResult?: (result: pg.QueryResult | pg.QueryResult[]) => void) {
    this.#onResult = onResult;
  }

  /** Adds a simple-query statement, without its `;` (held statements are joined with `; `). */
  add(text: string): void {
    this.#text = this.#text ? `${this.#text}; ${text}` : text;
  }

  get pending(): boolean {
    return this.#text !== '';
  }

  /** The held statements' text, or '' when none; they are no longer held. */
  take(): string {
    const text = this.#text;
    this.#text = '';
    return text;
  }

  /** Sends the held statements on an open connection (pipelined: not awaited here), or undefined when none. */
  send(client: pg.PoolClient): Promise<unknown> | undefined {
    if (!this.#text) return undefined;
    const sent = client.query(this.take());
    const onResult = this.#onResult;
    if (onResult) void sent.then((result) => onResult(result), () => undefined);
    return sent;
  }
}

/** Awaits a prelude sent ahead of `next`; when it failed, `next` (aborted with it) is settled and the prelude's error thrown. */
export async function settlePrelude(prelude: Promise<unknown>, next: Promise<unknown>): Promise<void> {
  try {
    await prelude;
  } catch (error) {
    await next.catch(() => undefined);
    throw error;
  }
}
