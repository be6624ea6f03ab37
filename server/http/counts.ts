// How a number in a response is computed, stated in the OpenAPI document (docs/performance.md): a
// maintained counter, written in the transaction of every write of the rows it counts and read in
// constant time, or a bounded count, exact up to a cap.
import { z } from 'zod';

/** A count kept by the writes of the rows it counts; `what` says what it counts. */
export function maintainedCount(what: string) {
  return z
    .number()
    .int()
    .describe(`Maintained counter (kept with every write of the rows it counts, never counted at read time): ${what}.`);
}

/** A count read at request time and exact up to `cap`; `cap` means `cap` or more. */
export function boundedCount(what: string, cap: number) {
  return z
    .number()
    .int()
    .max(cap)
    .describe(
      `Bounded count (counted at read time, at most ${cap} rows read): ${what}; exact below ${cap}, and ${cap} means at least ${cap}.`,
    );
}
