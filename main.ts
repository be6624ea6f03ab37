// Runs the service: API and worker in one process by default; `--only=api` or `--only=worker`
// runs one of them (npm run server / npm run worker). Ctrl-C (SIGINT) or SIGTERM shuts down
// cleanly, also during startup: in-flight requests finish, the worker stops, the embedded
// database stops. Every resource registers its closer as soon as it exists; shutdown waits for
// startup to settle, then closes them in reverse order.
import type { Server } from 'node:http';
import { loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { openDatabase } from './db/database.ts';
import { createPools } from './db/pools.ts';
import { roleUrl } from './db/roles.ts';
import { createServices } from './server/services.ts';
import { createServer, basePath } from './server/app.ts';
import { internalGraphqlPath } from './server/graphql/mount.ts';
import { startWorker } from './worker/runner.ts';
import { openStorage } from './server/uploads/open-storage.ts';

const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length);
const config = loadConfig();
const log = createLogger(config.logLevel);
const started = Date.now();
const closers: (() => Promise<void>)[] = [];

let stopping = false;
async function shutdown(signal: string, exitCode = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info(`${signal}: shutting down`);
  // Requests in flight get 10 s to finish; then the process leaves regardless.
  setTimeout(() => {
    log.error('shutdown took longer than 10 s; exiting');
    process.exit(1);
  }, 10_000).unref();
  await startup.catch(() => undefined);
  for (const close of closers.reverse()) await close().catch((error: unknown) => log.error({ err: error }, 'closing failed'));
  log.info('stopped');
  process.exit(exitCode);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));

async function start(): Promise<void> {
  log.info(`starting (${config.databaseUrl ? 'DATABASE_URL' : `embedded data in ${config.dataDir}`})`);
  const database = await openDatabase(config);
  closers.push(() => database.stop());
  const objects = await openStorage(config);
  closers.push(() => objects.stop());
  const pools = createPools(database.ownerUrl);
  closers.push(() => pools.end());

  if (only !== 'worker' && !stopping) {
    const services = await createServices(config, log, pools, objects.storage);
    await services.notificationHub.start(roleUrl(database.ownerUrl, 'authenticator'));
    const server: Server = createServer(services).listen(config.port);
    closers.push(async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Open notification streams would hold the server open: end them, then the hub's connection.
      await services.notificationHub.stop();
      await closed;
      // After the last request, before the pools end (design.md: release the pgService first).
      await services.graphql.release();
    });
    await new Promise((resolve) => server.once('listening', resolve));
    log.info(`API listening on http://localhost:${config.port}${basePath} (docs: ${basePath}/docs; internal GraphQL: ${internalGraphqlPath})`);
  }
  if (only !== 'api' && !stopping) {
    const runner = await startWorker(pools.worker, log, { storage: objects.storage });
    closers.push(() => runner.stop());
    log.info('worker running');
  }
  log.info(`data: ${database.location}; files: ${objects.location}; ready in ${Date.now() - started} ms`);
}

const startup = start();
startup.catch((error: unknown) => {
  log.error({ err: error instanceof Error ? { message: error.message, stack: error.stack } : error }, 'startup failed');
  void shutdown('startup failure', 1);
});
