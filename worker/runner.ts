// The graphile-worker runner: the tasks and schedules every feature contributes (its folder
// worker/tasks/<feature>/, collected from the one list below), and the liveness that takes back a
// dead worker's jobs within seconds, whatever the task (worker/liveness.ts): a job may run again
// after its worker died, so every task is idempotent per effect (a key per effect, `on conflict`).
import { run, type Runner, type Task, type TaskList, type WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import { OutageLog, workerLogger, type Log } from '../logger.ts';
import type { WorkerDeps, WorkerFeature } from './feature.ts';
import { workerLiveness } from './liveness.ts';
import { accounts } from './tasks/accounts/index.ts';
import { auth } from './tasks/auth/index.ts';
import { hubs } from './tasks/hubs/index.ts';
import { http } from './tasks/http/index.ts';
import { notifications } from './tasks/notifications/index.ts';
import { push } from './tasks/push/index.ts';
import { reports } from './tasks/reports/index.ts';
import { uploads } from './tasks/uploads/index.ts';
import { votes } from './tasks/votes/index.ts';

/** Every folder of worker/tasks: each names its tasks and schedules in its index.ts. */
const features: WorkerFeature[] = [accounts, auth, hubs, http, notifications, push, reports, uploads, votes];

const tasks = new Map<string, (deps: WorkerDeps) => Task>();
for (const feature of features) {
  for (const [name, make] of Object.entries(feature.tasks)) {
    if (tasks.has(name)) throw new Error(`two features of worker/tasks name the task ${name}`);
    tasks.set(name, make);
  }
}

/** The names jobs are queued under (a contract with the database), of every feature. */
export const taskNames: readonly string[] = [...tasks.keys()];

export function createTaskList(deps: WorkerDeps): TaskList {
  return Object.fromEntries([...tasks].map(([name, make]) => [name, make(deps)]));
}

// `?max=1`: a scheduled run is tried once; the next run is its retry.
const crontab = features
  .flatMap((feature) => Object.entries(feature.schedules ?? {}).map(([task, time]) => `${time} ${task} ?max=1`))
  .join('\n');

/**
 * `watch` receives the runner's events (main.ts counts jobs for the metrics); `deadAfterSeconds`:
 * a worker silent that long is dead and its jobs are taken back (WORKER_DEAD_AFTER_SECONDS).
 */
export async function startWorker(
  pool: pg.Pool,
  log: Log,
  deps: WorkerDeps,
  { concurrency = 2, deadAfterSeconds = 10, watch = undefined as ((events: WorkerEvents) => void) | undefined } = {},
): Promise<Runner> {
  // One warning per database outage and one line when it ends, for the whole worker: its job
  // fetches, its listening connection, its reset of locked jobs and its cron loop (graphile-worker's
  // own lines about those are debug: see workerLogger) and its heartbeat.
  const outage = new OutageLog(log, 'worker', 'jobs wait until it is back', 'failures');
  const liveness = workerLiveness(pool, log, deadAfterSeconds, outage);
  const runner = await run({
    pgPool: pool,
    taskList: createTaskList(deps),
    crontab,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: workerLogger(log, (error) => outage.failed(error)),
    preset: { plugins: [liveness.plugin] },
  });
  runner.events.on('pool:listen:error', ({ error }) => outage.failed(error));
  runner.events.on('worker:getJob:error', ({ error }) => outage.failed(error));
  runner.events.on('pool:listen:success', () => outage.recovered());
  runner.events.on('worker:getJob:empty', () => outage.recovered());
  runner.events.on('job:start', () => outage.recovered());
  runner.events.on('resetLocked:success', () => outage.recovered());
  runner.events.on('pool:gracefulShutdown', () => liveness.stopping());
  runner.events.on('pool:forcefulShutdown', () => liveness.stopping());
  watch?.(runner.events);
  // Stopping ends the beat and forgets this worker once its jobs are done.
  return {
    ...runner,
    async stop(reason?: string) {
      await runner.stop(reason);
      await liveness.stop();
    },
  };
}
