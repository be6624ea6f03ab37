// Liveness of worker processes, for every task: a dead worker's jobs come back within seconds, and a
// live one keeps them however long it goes without CPU.
//
// graphile-worker locks a job with the id of the worker pool that runs it (`locked_by`) and by
// itself unlocks only jobs locked for 4 hours. So each worker process records its pool id in the
// database before any of its workers takes a job (the `startWorker` hook runs before a worker's
// first fetch), and beats every `deadAfterSeconds / 5`; each beat also takes back, with
// graphile-worker's own force_unlock_workers, the jobs of dead workers (app_private.worker_heartbeat,
// db/sql/worker.sql). Dead is silent for `deadAfterSeconds` by the database's clock *and* without
// its presence connection: the beats run on one connection this process keeps open, holding a
// session advisory lock on its id (app_private.worker_present). A process starved of CPU misses
// beats but keeps that connection (the kernel holds it and answers its keepalives), so its jobs
// stay its own; a killed process's connection closes with it, and a vanished host's fails the
// server's TCP keepalives (set on that connection, bounded by `deadAfterSeconds`).
// A worker that stops cleanly forgets itself.
import type { WorkerPool } from 'graphile-worker';
import pg from 'pg';
import type { Log, OutageLog } from '../logger.ts';

export interface Liveness {
  /** graphile-worker plugin: registers the pool before its first job, then beats. */
  plugin: GraphileConfig.Plugin;
  /** The pool is shutting down: beats go on while its jobs finish, but nudge no worker. */
  stopping(): void;
  /** Stops beating and forgets this worker (after the runner stopped). */
  stop(): Promise<void>;
}

const retryMillis = 1000;

/**
 * `pool`: the worker's; the presence connection is opened with its settings. `outage`: the worker's,
 * so a database outage is one warning for the whole worker (logger.ts).
 */
export function workerLiveness(pool: pg.Pool, log: Log, deadAfterSeconds: number, outage: OutageLog): Liveness {
  let registration: Promise<void> | undefined;
  let workerPool: WorkerPool | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopping = false;
  let stopped = false;
  const deadAfter = `${deadAfterSeconds} seconds`;
  // The server drops the presence connection of a host that vanished: after deadAfterSeconds idle,
  // three probes deadAfterSeconds / 5 apart (a starved process's kernel still answers them).
  const probeSeconds = Math.max(1, Math.round(deadAfterSeconds / 5));
  const keepalives = `-c tcp_keepalives_idle=${Math.max(1, Math.round(deadAfterSeconds))} -c tcp_keepalives_interval=${probeSeconds} -c tcp_keepalives_count=3`;
  let presence: pg.Client | undefined;
  let beating: Promise<void> = Promise.resolve();

  /** The connection the beats run on, holding this worker's presence lock; opened again after a loss. */
  async function present(id: string): Promise<pg.Client> {
    if (presence) return presence;
    const options = [pool.options.options, keepalives].filter(Boolean).join(' ');
    const client = new pg.Client({ ...pool.options, options, application_name: 'worker presence' });
    client.on('error', () => {}); // a lost connection fails the next beat, which opens another
    try {
      await client.connect();
      await client.query('select app_private.worker_present($1)', [id]);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    presence = client;
    return client;
  }

  async function beatOnce(): Promise<void> {
    if (!workerPool || stopped) return;
    const client = await present(workerPool.id);
    try {
      const { rows } = await client.query<{ dead: string[] }>('select app_private.worker_heartbeat($1, $2::interval) as dead', [
        workerPool.id,
        deadAfter,
      ]);
      const dead = rows[0]?.dead ?? [];
      if (dead.length > 0) {
        log.warn({ workers: dead }, `took back the jobs of ${dead.length} worker(s) silent for over ${deadAfterSeconds} s`);
        // Wakes this pool's idle workers for them; a stopping pool leaves them to the others.
        if (!stopping) workerPool.nudge(dead.length);
      }
    } catch (error) {
      presence = undefined;
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  /** One beat at a time on the presence connection. */
  function beat(): Promise<void> {
    beating = beating.then(beatOnce, beatOnce);
    return beating;
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
    if (stopped) return;
    // Names the pool id that locks this process's jobs (and that a neighbour's takeover line names).
    log.info(
      { worker: workerPool?.id },
      `worker registered: beats every ${deadAfterSeconds / 5} s, taken for dead after ${deadAfterSeconds} s silent without its connection`,
    );
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
    stopping() {
      stopping = true;
    },
    async stop() {
      stopping = true;
      stopped = true;
      clearInterval(timer);
      if (!workerPool || !registration) return;
      await registration.catch(() => undefined);
      clearInterval(timer); // set by a registration that ended just now
      await beating.catch(() => undefined);
      await pool.query('select app_private.worker_stopped($1)', [workerPool.id]).catch(() => undefined);
      await presence?.end().catch(() => undefined);
      presence = undefined;
    },
  };
}
