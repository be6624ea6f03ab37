// Runs the service: API and worker in one process by default; `--only=api` or `--only=worker`
// runs one of them (npm run server / npm run worker). Ctrl-C (SIGINT) or SIGTERM shuts down
// cleanly: in-flight requests finish, the worker stops, the embedded database stops.
import type { Server } from 'node:http';
import { loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { openDatabase } from './db/database.ts';
import { createPools } from './db/pools.ts';
import { roleUrl } from './db/roles.ts';
import { createServices } from './server/services.ts';
import { createApp, basePath } from './server/app.ts';
import { internalGraphqlPath } from './server/graphql/mount.ts';
import { startWorker } from './worker/runner.ts';
import { openStorage } from './server/uploads/open-storage.ts';

const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length);
const config = loadConfig();
const log = createLogger(config.logLevel);
const started = Date.now();

const database = await openDatabase(config);
const pools = createPools(database.ownerUrl);
const objects = await openStorage(config);
const stops: (() => Promise<void>)[] = [];

if (only !== 'worker') {
  const services = await createServices(config, log, pools, objects.storage);
  await services.notificationHub.start(roleUrl(database.ownerUrl, 'authenticator'));
  const server: Server = createApp(services).listen(config.port);
  await new Promise((resolve) => server.once('listening', resolve));
  stops.push(async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Open notification streams would hold the server open: end them, then the hub's connection.
    await services.notificationHub.stop();
    await closed;
    // After the last request, before the pools end (design.md: release the pgService first).
    await services.graphql.release();
  });
  log.info(`API listening on http://localhost:${config.port}${basePath} (docs: ${basePath}/docs; internal GraphQL: ${internalGraphqlPath})`);
}
if (only !== 'api') {
  const runner = await startWorker(pools.worker, log, { storage: objects.storage });
  stops.push(() => runner.stop());
  log.info('worker running');
}
log.info(`data: ${database.location}; files: ${objects.location}; ready in ${Date.now() - started} ms`);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info(`${signal}: shutting down`);
  // Requests in flight get 10 s to finish; then the process leaves regardless.
  setTimeout(() => {
    log.error('shutdown took longer than 10 s; exiting');
    process.exit(1);
  }, 10_000).unref();
  await Promise.allSettled(stops.map((stop) => stop()));
  await pools.end();
  await objects.stop();
  await database.stop();
  log.info('stopped');
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
