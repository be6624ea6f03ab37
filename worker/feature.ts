// What a feature contributes to the worker: worker/tasks/<feature>/index.ts exports one
// workerFeature with its tasks, by the name their jobs are queued under, and the cron schedule of
// those that run by the clock. The runner (worker/runner.ts) collects them from its one list of
// features. A task's name is a contract with the database: SQL queues jobs by it
// (graphile_worker.add_job), and a job one release queues runs on the other
// (test/sql/database/expand-only.test.ts), so a name, once queued, stays.
import type { Task } from 'graphile-worker';
import type { ObjectStore } from './object-store.ts';
import type { ImageProcessor } from './tasks/uploads/images/processor.ts';
import type { BallotOpener } from './tasks/votes/ballot-opener.ts';

/** What main.ts hands the worker; each task takes what it needs. */
export interface WorkerDeps {
  storage: ObjectStore;
  /** Opens sealed ballots for the tallier (BALLOT_KEY), and its batch size k (BALLOT_BATCH). */
  ballots: { box: BallotOpener; batch: number };
  /** Decodes uploaded images in processes of its own (worker/tasks/uploads/images); the images the backfill queues a minute. */
  images: { processor: ImageProcessor; backfillPerMinute: number };
}

export interface WorkerFeature<Name extends string = string> {
  /** Its tasks by the name their jobs are queued under, each made from what the worker was handed. */
  tasks: Record<Name, (deps: WorkerDeps) => Task>;
  /**
   * When those of its tasks that run by the clock run: a cron time (minute hour day month weekday,
   * graphile-worker's crontab) by task name. A scheduled run is tried once: the next is its retry.
   */
  schedules?: Partial<Record<NoInfer<Name>, string>>;
}

/** A feature's contribution to the worker; it schedules only tasks of its own (checked by the compiler). */
export function workerFeature<Name extends string>(feature: WorkerFeature<Name>): WorkerFeature<Name> {
  return feature;
}
