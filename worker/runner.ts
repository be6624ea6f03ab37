// The graphile-worker runner: the task list (one file per task in worker/tasks) and the schedule.
import { run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import { workerLogger, type Log } from '../logger.ts';
import type { ObjectStore } from './object-store.ts';
import { deleteAsset } from './tasks/delete-asset.ts';
import { hubNotificationFanout } from './tasks/hub-notification-fanout.ts';
import { purgeExpiredAuth } from './tasks/purge-expired-auth.ts';
import { purgeExpiredUploads } from './tasks/purge-expired-uploads.ts';

export interface WorkerDeps {
  storage: ObjectStore;
}

export function createTaskList({ storage }: WorkerDeps): TaskList {
  return {
    delete_asset: deleteAsset(storage),
    hub_notification_fanout: hubNotificationFanout,
    purge_expired_auth: purgeExpiredAuth,
    purge_expired_uploads: purgeExpiredUploads(storage),
  };
}

const crontab = ['0 * * * * purge_expired_auth ?max=1', '*/15 * * * * purge_expired_uploads ?max=1'].join('\n');

/** `watch` receives the runner's events (main.ts counts jobs for the metrics). */
export async function startWorker(
  pool: pg.Pool,
  log: Log,
  deps: WorkerDeps,
  { concurrency = 2, watch = undefined as ((events: WorkerEvents) => void) | undefined } = {},
): Promise<Runner> {
  const runner = await run({
    pgPool: pool,
    taskList: createTaskList(deps),
    crontab,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: workerLogger(log),
  });
  watch?.(runner.events);
  return runner;
}
