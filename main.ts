// Runs the service: API and worker in one process by default; `--only=api` or `--only=worker`
// runs one of them (npm run server / npm run worker). SIGINT (Ctrl-C), SIGTERM or SIGHUP (a closed
// terminal) shuts down cleanly, also during startup: in-flight requests finish, the worker stops,
// the embedded database stops. Every resource registers its closer as soon as it exists; shutdown
// waits for startup to settle, then closes them in reverse order. A problem the operator can fix
// (a bad or missing setting, a port in use, an unreachable database) is one line and exit code 1,
// with whatever had started (the embedded database) stopped first.
import { createServer as createHttpServer } from 'node:http';
import { loadConfig, StartupError, type Config } from './config.ts';
import { createLogger } from './logger.ts';
import { openDatabase } from './db/database.ts';
import { createPools } from './db/pools.ts';
import { BallotBox } from './server/votes/ballots.ts';
import { roleUrl } from './db/roles.ts';
import { createServices } from './server/services.ts';
import { createServer, basePath } from './server/app.ts';
import { internalGraphqlPath } from './server/graphql/mount.ts';
import { heicSupport, startImageProcessor } from './worker/tasks/uploads/images/processor.ts';
import { startWorker } from './worker/runner.ts';
import { Pusher } from './worker/tasks/push/pusher.ts';
import { embeddedStoreBinding, openStorage } from './server/uploads/open-storage.ts';
import { createMetrics } from './server/metrics.ts';
import { checkPorts, close, listen, type Binding } from './server/listen.ts';

const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length);
let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof StartupError)) throw error;
  createLogger('info').fatal(error.message);
  process.exit(1);
}
const log = createLogger(config.logLevel);
const started = Date.now();
const closers: (() => Promise<void>)[] = [];

let stopping = false;
const startupAborted = new AbortController();
async function shutdown(signal: string, exitCode = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  startupAborted.abort();
  log.info(`${signal}: shutting down`);
  // Requests in flight get 10 s to finish; then the process leaves regardless.
  setTimeout(() => {
    log.error('shutdown took longer than 10 s; exiting');
    process.exit(1);
  }, 10_000).unref();
  await startup.catch(() => undefined);
  for (const closer of closers.reverse()) await closer().catch((error: unknown) => log.error({ err: error }, 'closing failed'));
  log.info('stopped');
  process.exit(exitCode);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));

const ports = {
  api: { port: config.port, host: undefined, portSetting: 'PORT', what: 'the API' },
  metrics: {
    port: config.metricsPort ?? 0,
    host: config.metricsHost,
    portSetting: 'METRICS_PORT',
    hostSetting: 'METRICS_HOST',
    what: 'the metrics',
  },
  s3: embeddedStoreBinding(config),
} satisfies Record<string, Binding>;

async function start(): Promise<void> {
  log.info(
    `starting (${config.databaseUrl ? 'DATABASE_URL' : `embedded data in ${config.dataDir}`}${config.databasePoolerUrl ? '; API and GraphQL through DATABASE_POOLER_URL' : ''})`,
  );
  await checkPorts([
    ...(only !== 'worker' ? [ports.api] : []),
    ...(config.metricsPort !== undefined ? [ports.metrics] : []),
    ...(config.s3.endpoint === undefined ? [ports.s3] : []),
  ]);
  const database = await openDatabase(config, { signal: startupAborted.signal, notice: (message) => log.warn(message) });
  closers.push(() => database.stop());
  const objects = await openStorage(config);
  closers.push(() => objects.stop());
  // The worker reads and writes the primary only (a job reads what its cause wrote where it is visible).
  const replicas = only === 'worker' ? undefined : { urls: config.databaseReplicaUrls, maxLagMillis: config.replicaMaxLagMillis };
  const pools = createPools(database.ownerUrl, {
    poolerUrl: config.databasePoolerUrl,
    replicas,
    statementTimeoutMs: config.apiTimeouts.statementTimeoutMs,
  });
  closers.push(() => pools.end());
  const metrics = createMetrics(pools);
  if (config.metricsPort !== undefined && !stopping) {
    const metricsServer = createHttpServer(metrics.app());
    closers.push(() => close(metricsServer));
    await listen(metricsServer, ports.metrics);
  }

  if (only !== 'worker' && !stopping) {
    const heic = heicSupport(config.images.heic);
    // The worker says so when it starts; an API alone says it here.
    if (only === 'api' && !heic.available) log.warn(`HEIC uploads are refused: ${heic.reason}`);
    const services = await createServices(config, log, pools, objects.storage, { metrics, heic: heic.available });
    await services.notificationHub.start(roleUrl(database.ownerUrl, 'authenticator'));
    // Until the API listens, stopping means ending the hub's connection (stop() is idempotent).
    closers.push(() => services.notificationHub.stop());
    const server = createServer(services);
    closers.push(async () => {
      const closed = close(server);
      // Open notification streams would hold the server open: end them, then the hub's connection.
      await services.notificationHub.stop();
      await closed;
      // After the last request, before the pools end (design.md: release the pgService first).
      await services.graphql.release();
    });
    await listen(server, ports.api);
    log.info(
      `API listening on http://localhost:${config.port}${basePath} (docs: ${basePath}/docs; internal GraphQL: ${internalGraphqlPath})`,
    );
  }
  if (only !== 'api' && !stopping) {
    // Images are decoded in processes this worker owns, never in this one (worker/tasks/uploads/images).
    const processor = startImageProcessor({ ...config.images, log });
    closers.push(() => processor.close());
    const images = { processor, backfillPerMinute: config.images.backfillPerMinute };
    const runner = await startWorker(
      pools.worker,
      log,
      { storage: objects.storage, ballots: { box: new BallotBox(config.ballotKeys), batch: config.ballotBatch }, images },
      {
        deadAfterSeconds: config.workerDeadAfterSeconds,
        watch: (events) => metrics.watchWorker(events),
      },
    );
    closers.push(() => runner.stop());
    if (config.fcm) {
      const pusher = new Pusher(pools.worker, config.fcm, log, metrics.push);
      pusher.start();
      closers.push(() => pusher.stop());
      log.info(`push: on (FCM project ${config.fcm.projectId} at ${config.fcm.apiUrl})`);
    } else {
      log.info('push: off (no FCM_SERVICE_ACCOUNT_FILE)');
    }
    log.info('worker running');
  }
  const metricsNote = config.metricsPort === undefined ? '' : `; metrics: http://${config.metricsHost}:${config.metricsPort}/metrics`;
  log.info(`data: ${database.location}; files: ${objects.location}${metricsNote}; ready in ${Date.now() - started} ms`);
}

const startup = start();
startup.catch((error: unknown) => {
  if (stopping) return; // a shutdown during startup: it ends the process
  if (error instanceof StartupError) log.fatal(error.message);
  else log.fatal({ err: error instanceof Error ? { message: error.message, stack: error.stack } : error }, 'startup failed');
  void shutdown('startup failure', 1);
});
