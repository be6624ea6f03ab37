// The push worker (contract 12; db/sql/push.sql): plans deliveries from finished transaction
// ranges (claiming at once those it has room to send), claims due ones, sends each to FCM with up
// to `concurrency` requests in flight over keep-alive connections, and records the outcomes that
// arrive within 20 ms together (one statement for all of them), so the window between FCM
// accepting a message and the database knowing it is 20 ms and one such statement. Any number of worker processes may run it: planning is one at a time,
// claims are SKIP LOCKED with a lease, and a dead worker's claims come back after the lease.
//
// Retries: a 429, a 5xx or a failed request waits max(retryBase * 2^(try - 1), Retry-After) and is
// tried again, at most 5 tries in all, then given up (counted). A 401 (FCM refuses the credentials)
// is one error line per outage: the delivery goes back without using a try and claiming pauses for
// a few seconds; the first success after it logs one line.
import type pg from 'pg';
import { Agent } from 'undici';
import type { FcmConfig } from '../../../config.ts';
import type { Log } from '../../../logger.ts';
import { AccessTokens } from './access-token.ts';
import { FcmClient, type SendOutcome } from './fcm.ts';
import { buildMessage, type ClaimedDelivery } from './message.ts';

export const maxTries = 5;
const planEveryMs = 50;
const pollEveryMs = 200;
/** Outcomes are recorded at most this long after FCM answered (the window in which a crash sends a message twice). */
const recordEveryMs = 20;

/** What the process's metrics count (server/metrics.ts implements it; main.ts connects the two). */
export interface PushObserver {
  sent(kind: 'notification' | 'badge', lagSeconds: number): void;
  failed(outcome: 'given_up' | 'refused'): void;
  retried(reason: string): void;
  deviceDeleted(reason: string): void;
}

interface Result {
  delivery: ClaimedDelivery;
  outcome: SendOutcome;
}

export class Pusher {
  readonly #pool: pg.Pool;
  readonly #fcm: FcmConfig;
  readonly #log: Log;
  readonly #observer: PushObserver | undefined;
  readonly #agent: Agent;
  readonly #client: FcmClient;
  #stopped = false;
  #timers: NodeJS.Timeout[] = [];
  #queue: ClaimedDelivery[] = [];
  #inFlight = 0;
  #claiming = false;
  #claimAgain = false;
  #planning = false;
  #results: Result[] = [];
  #flushing: Promise<void> | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  #pausedUntil = 0;
  #outage = false;
  #idle: (() => void)[] = [];

  constructor(pool: pg.Pool, fcm: FcmConfig, log: Log, observer?: PushObserver) {
    this.#pool = pool;
    this.#fcm = fcm;
    this.#log = log.child({ component: 'push' });
    this.#observer = observer;
    this.#agent = new Agent({ connections: fcm.concurrency, keepAliveTimeout: 30_000 });
    this.#client = new FcmClient(fcm, new AccessTokens(fcm, this.#agent), this.#agent);
  }

  start(): void {
    this.#timers.push(
      setInterval(() => void this.#plan(), planEveryMs),
      setInterval(() => void this.#claim(), pollEveryMs),
    );
    void this.#plan();
  }

  /** Stops claiming, waits for the messages in flight and their outcomes, and gives back what was claimed but not sent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    // A planning step or claim under way adds what it took to the queue when it returns.
    while (this.#planning || this.#claiming) await new Promise((resolve) => setTimeout(resolve, 10));
    const unsent = this.#queue.splice(0);
    for (const delivery of unsent) this.#results.push({ delivery, outcome: { kind: 'unauthorized', detail: 'stopping' } });
    while (this.#inFlight > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
    clearTimeout(this.#flushTimer);
    this.#flush();
    await this.#flushing;
    await this.#agent.close();
  }

  /** Room for more claimed deliveries: at most two per connection queued or in flight. */
  #room(): number {
    return this.#fcm.concurrency * 2 - this.#queue.length - this.#inFlight;
  }

  /**
   * One planning step: the deliveries of rows written since the last one, the first `room` of them
   * claimed by this worker and sent at once (db/sql/push.sql); a larger range leaves the rest to
   * claiming.
   */
  async #plan(): Promise<void> {
    if (this.#planning || this.#stopped) return;
    this.#planning = true;
    // While FCM refuses the credentials (401), plan without claiming: nothing is sent until the pause ends.
    const room = Date.now() < this.#pausedUntil ? 0 : Math.max(0, this.#room());
    try {
      const { rows } = await this.#pool.query<ClaimedDelivery>('select * from app_private.plan_pushes($1, $2)', [
        room,
        Math.ceil(this.#fcm.leaseSeconds),
      ]);
      if (rows.length > 0) {
        this.#queue.push(...rows);
        this.#pump();
      }
      if (rows.length >= room) void this.#claim();
    } catch (error) {
      this.#log.warn({ err: error }, 'push planning failed; trying again');
    } finally {
      this.#planning = false;
    }
  }

  async #claim(): Promise<void> {
    if (this.#claiming) {
      // Asked again meanwhile (a planning step that just committed, say): claim once more when this
      // one ends, instead of leaving its deliveries to the next poll.
      this.#claimAgain = true;
      return;
    }
    if (this.#stopped || Date.now() < this.#pausedUntil) return;
    const room = this.#room();
    if (room < Math.max(1, this.#fcm.concurrency / 2)) return;
    this.#claiming = true;
    this.#claimAgain = false;
    let claimed = 0;
    try {
      const { rows } = await this.#pool.query<ClaimedDelivery>('select * from app_private.claim_pushes($1, $2)', [
        room,
        Math.ceil(this.#fcm.leaseSeconds),
      ]);
      claimed = rows.length;
      this.#queue.push(...rows);
    } catch (error) {
      this.#log.warn({ err: error }, 'claiming pushes failed; trying again');
    } finally {
      this.#claiming = false;
    }
    this.#pump();
    if (claimed === room || this.#claimAgain) void this.#claim();
  }

  #pump(): void {
    while (this.#inFlight < this.#fcm.concurrency && this.#queue.length > 0 && !this.#stopped) {
      const delivery = this.#queue.shift() as ClaimedDelivery;
      this.#inFlight += 1;
      void this.#client
        .send(buildMessage(delivery))
        .catch((error: unknown): SendOutcome => ({
          kind: 'retry',
          reason: 'network',
          retryAfterMs: undefined,
          ...{ detail: String(error) },
        }))
        .then((outcome) => {
          this.#inFlight -= 1;
          this.#results.push({ delivery, outcome });
          this.#flushSoon();
          if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
          this.#pump();
          void this.#claim();
        });
    }
  }

  /**
   * Records the outcomes that arrive within `recordEveryMs` together: one statement (and one commit)
   * for all of them, instead of one per answer or few (a commit costs more than the rows it writes).
   */
  #flushSoon(): void {
    if (this.#flushTimer) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.#flush();
    }, recordEveryMs);
  }

  /** Records every outcome that arrived, one statement at a time, until none is left. */
  #flush(): void {
    if (this.#flushing || this.#results.length === 0) return;
    this.#flushing = (async () => {
      while (this.#results.length > 0) {
        const batch = this.#results.splice(0);
        try {
          await this.#record(batch);
        } catch (error) {
          // Not recorded: the claims run out and the deliveries are tried again (a sent one twice).
          this.#log.error({ err: error, outcomes: batch.length }, 'recording push outcomes failed');
        }
      }
    })().finally(() => {
      this.#flushing = undefined;
      this.#flush();
    });
  }

  async #record(batch: Result[]): Promise<void> {
    const sent: string[] = [];
    const retry: string[] = [];
    const retryMs: number[] = [];
    const givenUp: string[] = [];
    const failed: string[] = [];
    const released: string[] = [];
    const dead: string[] = [];
    const releaseMs = Math.min(5000, this.#fcm.retryBaseSeconds * 5000);
    for (const { delivery, outcome } of batch) {
      switch (outcome.kind) {
        case 'sent':
          sent.push(delivery.delivery_id);
          break;
        case 'dead':
          dead.push(delivery.device_id);
          break;
        case 'retry':
          if (delivery.attempt >= maxTries) givenUp.push(delivery.delivery_id);
          else {
            retry.push(delivery.delivery_id);
            retryMs.push(Math.max(this.#fcm.retryBaseSeconds * 1000 * 2 ** (delivery.attempt - 1), outcome.retryAfterMs ?? 0));
          }
          break;
        case 'unauthorized':
          released.push(delivery.delivery_id);
          break;
        case 'failed':
          failed.push(delivery.delivery_id);
          break;
      }
    }
    await this.#pool.query('select app_private.record_pushes($1, $2, $3, $4, $5, $6, $7, $8)', [
      sent,
      retry,
      retryMs,
      givenUp,
      failed,
      released,
      releaseMs,
      dead,
    ]);
    for (const { delivery, outcome } of batch) this.#observe(delivery, outcome, releaseMs);
  }

  #observe(delivery: ClaimedDelivery, outcome: SendOutcome, releaseMs: number): void {
    if (outcome.kind === 'unauthorized') {
      if (this.#stopped && outcome.detail === 'stopping') return;
      this.#pausedUntil = Date.now() + releaseMs;
      if (!this.#outage) {
        this.#outage = true;
        this.#log.error(
          `FCM refuses the service account's credentials (${outcome.detail}): pushes wait until it accepts them; check FCM_SERVICE_ACCOUNT_FILE`,
        );
      }
      return;
    }
    if (this.#outage && outcome.kind === 'sent') {
      this.#outage = false;
      this.#log.info('FCM accepts the credentials again: pushes resume');
    }
    switch (outcome.kind) {
      case 'sent':
        this.#observer?.sent(delivery.notification_id ? 'notification' : 'badge', (Date.now() - delivery.written_at.getTime()) / 1000);
        break;
      case 'dead':
        this.#observer?.deviceDeleted(outcome.reason);
        break;
      case 'retry':
        if (delivery.attempt >= maxTries) {
          this.#observer?.failed('given_up');
          this.#log.warn({ deliveryId: delivery.delivery_id, reason: outcome.reason }, `push given up after ${maxTries} tries`);
        } else this.#observer?.retried(outcome.reason);
        break;
      case 'failed':
        this.#observer?.failed('refused');
        this.#log.warn({ deliveryId: delivery.delivery_id, reason: outcome.reason }, 'FCM refused a push message');
        break;
    }
  }
}
