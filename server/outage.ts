// Database outages in the log: while the database cannot be reached every request answers 503
// (db/errors.ts); the log gets one warning when the first request fails and one line when the API
// pool connects again, with how long it lasted and how many requests were refused meanwhile.
import type pg from 'pg';
import type { Log } from '../logger.ts';

export class DatabaseOutage {
  #log: Log;
  #since: number | undefined;
  #refused = 0;

  constructor(log: Log, pool: pg.Pool) {
    this.#log = log;
    pool.on('connect', () => this.#ended());
  }

  /** A request answered 503 because the database failed it. */
  refused(error: unknown): void {
    this.#refused += 1;
    if (this.#since !== undefined) return;
    this.#since = Date.now();
    const reason = error instanceof Error ? error.message || (error as { code?: string }).code : String(error);
    this.#log.warn({ reason }, 'database unavailable: answering 503 until it is back');
  }

  #ended(): void {
    if (this.#since === undefined) return;
    this.#log.info({ seconds: (Date.now() - this.#since) / 1000, refusedRequests: this.#refused }, 'database available again');
    this.#since = undefined;
    this.#refused = 0;
  }
}
