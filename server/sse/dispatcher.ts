// The notification dispatcher: exactly one across every API process of a database. On the hub's
// dedicated connection it tries to take the leadership lock (app_private.take_notification_dispatch)
// every second; the process that holds it calls app_private.dispatch_notifications every 50 ms,
// which sends at most one notify per tick for all rows written since the previous one
// (db/sql/notifications.sql). The lock goes with the connection: when the leader's connection dies, another
// process takes over within a second, from the watermark stored in the database.
import type pg from 'pg';
import type { Log, OutageLog } from '../../logger.ts';

const tickMs = 50;
const leadershipRetryMs = 1000;

export class Dispatcher {
  #log: Log;
  #client: pg.Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #leading = false;
  #lastTickAt = 0;
  #outage: OutageLog;

  /** `outage`: the hub's, since the dispatcher runs on the hub's connection. */
  constructor(log: Log, outage: OutageLog) {
    this.#log = log;
    this.#outage = outage;
  }

  /** Starts competing for leadership on a freshly connected client. */
  attach(client: pg.Client): void {
    this.detach();
    this.#client = client;
    this.#schedule(client, 0);
  }

  /** Stops using the client (lost or closing); its lock ends with its connection. */
  detach(): void {
    clearTimeout(this.#timer);
    this.#client = undefined;
    this.#leading = false;
  }

  /** Seconds since this process, leading, last completed a dispatch; undefined when it does not lead. */
  get lagSeconds(): number | undefined {
    return this.#leading && this.#lastTickAt > 0 ? (Date.now() - this.#lastTickAt) / 1000 : undefined;
  }

  async #run(client: pg.Client): Promise<void> {
    try {
      if (!this.#leading) {
        const { rows } = await client.query<{ lead: boolean }>('select app_private.take_notification_dispatch() as lead');
        this.#leading = rows[0]?.lead === true;
        if (this.#leading) this.#log.info('notification dispatcher: this process leads');
      }
      if (this.#leading) {
        await client.query('select app_private.dispatch_notifications()');
        this.#lastTickAt = Date.now();
      }
      this.#outage.recovered();
    } catch (error) {
      if (this.#client === client) this.#outage.failed(error);
    }
    this.#schedule(client, this.#leading ? tickMs : leadershipRetryMs);
  }

  #schedule(client: pg.Client, delayMs: number): void {
    if (this.#client !== client) return;
    this.#timer = setTimeout(() => void this.#run(client), delayMs);
  }
}
