// The graphile-worker runner: the task list (one file per task in worker/tasks), the schedule, and
// the liveness that takes back a dead worker's jobs within seconds, whatever the task
// (worker/liveness.ts): a job may run again after its worker died, so every task is idempotent per
// effect (a key per effect, `on conflict`).
import { run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import { OutageLog, workerLogger, type Log } from '../logger.ts';
import { workerLiveness } from './liveness.ts';
import type { ObjectStore } from './object-store.ts';
import type { ImageProcessor } from './images/processor.ts';
import { deleteAsset } from './tasks/delete-asset.ts';
import { deleteObject } from './tasks/delete-object.ts';
import { exportAccount } from './tasks/export-account.ts';
import { hubNotificationFanout } from './tasks/hub-notification-fanout.ts';
import { liftSuspension } from './tasks/lift-suspension.ts';
import { propagateHubActivity } from './tasks/propagate-hub-activity.ts';
import { purgeAccount } from './tasks/purge-account.ts';
import { purgeExpiredAuth } from './tasks/purge-expired-auth.ts';
import { purgeExpiredUploads } from './tasks/purge-expired-uploads.ts';
import { purgeIdempotentAnswers } from './tasks/purge-idempotent-answers.ts';
import { sweepSessionReadFloors } from './tasks/sweep-session-read-floors.ts';
import { processImage, processImageBackfill } from './tasks/process-image.ts';
import { purgePush } from './tasks/purge-push.ts';
import { tallyBallots, tallySweep } from './tasks/tally-ballots.ts';
import type { BallotBox } from '../db/ballots.ts';

export interface WorkerDeps {
  storage: ObjectStore;
  /** Opens sealed ballots for the tallier (BALLOT_KEY), and its batch size k (BALLOT_BATCH). */
  ballots: { box: BallotBox; batch: number };
  /** Decodes uploaded images in processes of its own (worker/images); the images the backfill queues a minute. */
  images: { processor: ImageProcessor; backfillPerMinute: number };
}

export function createTaskList({ storage, ballots, images }: WorkerDeps): TaskList {
  return {
    tally_ballots: tallyBallots(ballots.box, ballots.batch),
    tally_sweep: tallySweep(ballots.batch),
    delete_asset: deleteAsset(storage),
    delete_object: deleteObject(storage),
    process_image: processImage(storage, images.processor),
    process_image_backfill: processImageBackfill(images.backfillPerMinute),
    export_account: exportAccount(storage),
    hub_notification_fanout: hubNotificationFanout,
    lift_suspension: liftSuspension,
    propagate_hub_activity: propagateHubActivity,
    purge_account: purgeAccount(storage),
    purge_expired_auth: purgeExpiredAuth,
    purge_expired_uploads: purgeExpiredUploads(storage),
    purge_push: purgePush,
    purge_idempotent_answers: purgeIdempotentAnswers,
    sweep_session_read_floors: sweepSessionReadFloors,
  };
}

const crontab = [
  '0 * * * * purge_expired_auth ?max=1',
  '*/15 * * * * purge_expired_uploads ?max=1',
  '30 * * * * purge_push ?max=1',
  '45 * * * * purge_idempotent_answers ?max=1',
  '*/15 * * * * sweep_session_read_floors ?max=1',
  '* * * * * tally_sweep ?max=1',
  '* * * * * propagate_hub_activity ?max=1',
  '* * * * * process_image_backfill ?max=1',
].join('\n');

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
