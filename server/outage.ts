// Database outages of the API in the log: while the database cannot be reached every request
// answers 503 (server/http/database-errors.ts); the log gets one warning when the first request
// fails and one line when the API pool connects again, with how long it lasted and how many
// requests were refused meanwhile (OutageLog, logger.ts: the notification hub and the worker
// report their own outages the same way).
import type pg from 'pg';
import { OutageLog, type Log } from '../logger.ts';

export class DatabaseOutage {
  #outage: OutageLog;

  constructor(log: Log, pool: pg.Pool) {
    this.#outage = new OutageLog(log, 'api', 'answering 503 until it is back', 'refusedRequests');
    pool.on('connect', () => this.#outage.recovered());
  }

  /** A request answered 503 because the database failed it. */
  refused(error: unknown): void {
    this.#outage.failed(error);
  }
}
