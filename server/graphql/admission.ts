// How many internal GraphQL operations run at once: at most `perKey` for one user and for one client
// address (a request counts against both), and at most `total` in the process. Operations run in
// the GraphQL thread (thread.ts), off REST's event loop and below its priority, but their
// statements use the database's cores as REST's do, and eight heavy operations of one token at
// once made REST's p95 3.6 x its quiet value; held here, they run one after the other
// (docs/benchmarks.md, "GraphQL abuse"). A request that finds no room waits up to
// `waitMs`, first come first served, then gets 429 RATE_LIMITED with Retry-After
// (server/http/errors.ts rateLimited).
import { rateLimited } from '../http/errors.ts';

export interface AdmissionLimits {
  /** Operations one user, or one client address, runs at once. */
  perKey: number;
  /** Operations the process runs at once. */
  total: number;
  /** How long a request waits for room before 429. */
  waitMs: number;
}

export const graphqlAdmissionLimits: AdmissionLimits = { perKey: 1, total: 2, waitMs: 2_000 };

interface Waiter {
  keys: string[];
  admit: () => void;
}

export class Admission {
  readonly #limits: AdmissionLimits;
  readonly #running = new Map<string, number>();
  #total = 0;
  readonly #waiting: Waiter[] = [];

  constructor(limits: AdmissionLimits = graphqlAdmissionLimits) {
    this.#limits = limits;
  }

  /** Operations running now (for tests and metrics). */
  get running(): number {
    return this.#total;
  }

  /**
   * Takes room for one operation of `keys` (the user, the address), waiting up to waitMs; returns
   * the function that gives it back (call it once, when the response is done). Throws 429.
   */
  async enter(keys: string[]): Promise<() => void> {
    // Room now, and nobody of these keys waiting before it: at once.
    if (this.#fits(keys) && !this.#waiting.some((waiter) => waiter.keys.some((key) => keys.includes(key)))) return this.#take(keys);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        keys,
        admit: () => {
          clearTimeout(timer);
          resolve(this.#take(keys));
        },
      };
      const timer = setTimeout(() => {
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
        reject(rateLimited(Math.max(1, Math.ceil(this.#limits.waitMs / 1000))));
      }, this.#limits.waitMs);
      this.#waiting.push(waiter);
    });
  }

  #fits(keys: string[]): boolean {
    return this.#total < this.#limits.total && keys.every((key) => (this.#running.get(key) ?? 0) < this.#limits.perKey);
  }

  #take(keys: string[]): () => void {
    this.#total += 1;
    for (const key of keys) this.#running.set(key, (this.#running.get(key) ?? 0) + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#total -= 1;
      for (const key of keys) {
        const left = (this.#running.get(key) ?? 1) - 1;
        if (left === 0) this.#running.delete(key);
        else this.#running.set(key, left);
      }
      this.#admitWaiting();
    };
  }

  /** Admits waiting requests in arrival order, each that fits (one blocked key does not hold up others). */
  #admitWaiting(): void {
    for (let i = 0; i < this.#waiting.length && this.#total < this.#limits.total;) {
      const waiter = this.#waiting[i] as Waiter;
      if (this.#fits(waiter.keys)) {
        this.#waiting.splice(i, 1);
        waiter.admit();
      } else {
        i += 1;
      }
    }
  }
}
