// Liveness of worker processes, for every task: a dead worker's jobs come back within seconds.
//
// graphile-worker locks a job with the id of the worker pool that runs it (`locked_by`) and by
// itself unlocks only jobs locked for 4 hours. So each worker process records its pool id in the
// database before any of its workers takes a job (the `startWorker` hook runs before a worker's
// first fetch), and beats every `deadAfterSeconds / 5`; each beat also takes back, with
// graphile-worker's own force_unlock_workers, the jobs of workers silent for `deadAfterSeconds`
// (app_private.worker_heartbeat, db/sql/worker.sql). A worker that stops cleanly forgets itself.
import type { WorkerPool } from 'graphile-worker';
import type pg from 'pg';
import type { Log, OutageLog } from '../logger.ts';

export interface Liveness {
  /** graphile-worker plugin: registers the pool before its first job, then beats. */
  plugin: GraphileConfig.Plugin;
  /** Stops beating and forgets this worker (after the runner stopped). */
  stop(): Promise<void>;
}

const retryMillis = 1000;

/** `outage`: the worker's, so a database outage is one warning for the whole worker (logger.ts). */
export function workerLiveness(pool: pg.Pool, log: Log, deadAfterSeconds: number, outage: OutageLog): Liveness {
  let registration: Promise<void> | undefined;
  let workerPool: WorkerPool | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const deadAfter = `${deadAfterSeconds} seconds`;

  async function beat(): Promise<void> {
    if (!workerPool) return;
    const { rows } = await pool.query<{ dead: string[] }>('select app_private.worker_heartbeat($1, $2::interval) as dead', [workerPool.id, deadAfter]);
    const dead = rows[0]?.dead ?? [];
    if (dead.length > 0) {
      log.warn({ workers: dead }, `took back the jobs of ${dead.length} worker(s) silent for over ${deadAfterSeconds} s`);
      workerPool.nudge(dead.length);
    }
  }

  function tick(): void {
    beat().then(
      () => outage.recovered(),
      (error: unknown) => outage.failed(error),
    );
  }

  /** The first beat, retried until it lands: no worker of this pool takes a job before. */
  async function register(): Promise<void> {
    for (;;) {
      try {
        await beat();
        break;
      } catch (error) {
        if (stopped) throw error;
        outage.failed(error);
        await new Promise((resolve) => setTimeout(resolve, retryMillis));
      }
    }
    outage.recovered();
    timer = setInterval(tick, (deadAfterSeconds * 1000) / 5);
    timer.unref();
  }

  return {
    plugin: {
      name: 'WorkerLivenessPlugin',
      version: '1.0.0',
      worker: {
        hooks: {
          startWorker(_context, event) {
            workerPool ??= event.worker.workerPool;
            registration ??= register();
            return registration;
          },
        },
      },
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (!workerPool || !registration) return;
      await registration.catch(() => undefined);
      await pool.query('select app_private.worker_stopped($1)', [workerPool.id]).catch(() => undefined);
    },
  };
}
