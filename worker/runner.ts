// The graphile-worker runner: the task list (one file per task in worker/tasks) and the schedule.
import { run, type Runner, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import { workerLogger, type Log } from '../logger.ts';
import { purgeExpiredAuth } from './tasks/purge-expired-auth.ts';

export const taskList: TaskList = {
  purge_expired_auth: purgeExpiredAuth,
};

const crontab = '0 * * * * purge_expired_auth ?max=1';

export async function startWorker(pool: pg.Pool, log: Log, { concurrency = 2 } = {}): Promise<Runner> {
  return run({
    pgPool: pool,
    taskList,
    crontab,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: workerLogger(log),
  });
}
