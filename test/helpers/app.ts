// One test file's world: its own database cloned from the migrated template, the real Express app
// on a real socket, and an owner connection for SQL-level assertions. With `pooler` (or
// TEST_THROUGH_POOLER=1 in the environment: vitest.config.ts runs a set of files that way) the API
// and GraphQL pools go through a real PgBouncer in transaction mode of the file's own
// (test/helpers/pgbouncer.ts), as DATABASE_POOLER_URL makes them.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../config.ts';
import { createLogger, workerLogger } from '../../logger.ts';
import { createPools, survivesServerLoss, type Pools } from '../../db/pools.ts';
import { roleUrl } from '../../db/roles.ts';
import { createServer } from '../../server/app.ts';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { run, runOnce, type Runner } from 'graphile-worker';
import { createServices, type ServiceOverrides, type Services } from '../../server/services.ts';
import { openStorage } from '../../server/uploads/open-storage.ts';
import { s3Client, type Storage } from '../../server/uploads/storage.ts';
import { heicSupport, startImageProcessor, type ImageProcessor } from '../../worker/tasks/uploads/images/processor.ts';
import { createTaskList } from '../../worker/runner.ts';
import { databaseUrl } from './global-setup.ts';
import { createClient, type Client } from './client.ts';
import { startPgBouncer, type PgBouncer } from './pgbouncer.ts';

/** Test phones +1555000NNNN (N < 500) answer the code 1234 and receive nothing (testCodes: OTP_TEST_CODES for them). */
export const testOtpCode = '1234';
export function testPhone(n: number): { phoneCountryCode: string; phoneNumber: string; e164: string } {
  const national = `555000${String(n).padStart(4, '0')}`;
  return { phoneCountryCode: '+1', phoneNumber: national, e164: `+1${national}` };
}
export const testCodes = Array.from({ length: 500 }, (_, n) => `${testPhone(n).e164}=${testOtpCode}`).join(',');

/** The application name of the connections of a test app's image worker. */
export const testImageWorker = 'test image worker';

export interface TestApp extends Client {
  url: string;
  config: Config;
  ownerUrl: string;
  /** Owner connection (policies do not apply): for arranging and inspecting state. */
  owner: pg.Pool;
  pools: Pools;
  storage: Storage;
  /** The app's services (the notification hub with its open streams, among others). */
  services: Services;
  /** The PgBouncer the API and GraphQL pools go through, when started with `pooler`. */
  pooler: PgBouncer | undefined;
  /** Runs every queued worker job once, as the worker role (graphile-worker runOnce). */
  runJobs(): Promise<void>;
  /** The image processor of the app's image worker (decoder processes start with the first image). */
  images: ImageProcessor;
  close(): Promise<void>;
}

/** A database the test brought (migrated, left in place at close), with its streaming replicas (test/helpers/replica.ts). */
export interface OwnDatabase {
  ownerUrl: string;
  replicaUrls?: string[];
  replicaMaxLagMillis?: number;
}

export interface TestAppOptions {
  /** Through a PgBouncer in transaction mode (default: TEST_THROUGH_POOLER=1). */
  pooler?: boolean;
  /** This database instead of a clone of the template. */
  database?: OwnDatabase;
}

export async function startTestApp(
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
  { pooler: throughPooler = process.env.TEST_THROUGH_POOLER === '1', database: own }: TestAppOptions = {},
): Promise<TestApp> {
  const adminUrl = inject('adminUrl');
  const database = `opinion_test_${randomBytes(6).toString('hex')}`;
  if (!own) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${database} template ${inject('templateDatabase')}`);
    await admin.end();
  }
  const ownerUrl = own?.ownerUrl ?? databaseUrl(adminUrl, database);

  const config = loadConfig({
    NODE_ENV: 'test',
    JWT_SECRET: 'test-secret-not-for-production',
    BALLOT_KEY: `test:${'ab'.repeat(32)}`,
    OTP_TEST_CODES: testCodes,
    IDP_PROJECT_ID: 'opinion-test',
    PUBLIC_WEB_BASE_URL: 'https://opinion.example',
    // The test client is a proxy's worth of devices: see test/helpers/client.ts.
    TRUST_PROXY: 'loopback',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    S3_ENDPOINT: inject('s3Endpoint'),
    S3_BUCKET: database.replaceAll('_', '-'),
    ...env,
  });
  const bucketClient = s3Client(config.s3, config.s3.endpoint);
  await bucketClient.send(new CreateBucketCommand({ Bucket: config.s3.bucket }));
  bucketClient.destroy();
  const objects = await openStorage(config);
  const log = createLogger(config.logLevel);
  const pooler = throughPooler ? await startPgBouncer(ownerUrl) : undefined;
  const replicas = own?.replicaUrls ? { urls: own.replicaUrls, maxLagMillis: own.replicaMaxLagMillis ?? 2000 } : undefined;
  const pools = createPools(ownerUrl, { poolerUrl: pooler?.url, replicas });
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 4 });
  // The database is dropped with (force) at close: a client still closing then loses its server.
  survivesServerLoss(owner);
  const services = await createServices(config, log, pools, objects.storage, {
    heic: heicSupport(config.images.heic).available,
    ...overrides,
  });
  await services.notificationHub.start(roleUrl(ownerUrl, 'authenticator'));
  // Images are processed while a request waits (POST /uploads/complete): a worker of the image
  // tasks alone runs beside the app, so every other job still runs only when a test says (runJobs).
  const images = startImageProcessor({ ...config.images, concurrency: 1, log });
  const taskList = createTaskList({
    storage: objects.storage,
    ballots: { box: services.ballots, batch: config.ballotBatch },
    images: { processor: images, backfillPerMinute: config.images.backfillPerMinute },
  });
  // On a pool of its own, named, so that a file counting a worker process's connections can leave it out.
  const imagePool = survivesServerLoss(
    new pg.Pool({ connectionString: roleUrl(ownerUrl, 'app_worker'), max: 2, application_name: testImageWorker }),
  );
  const imageWorker: Runner = await run({
    pgPool: imagePool,
    taskList: { process_image: taskList.process_image, delete_object: taskList.delete_object } as typeof taskList,
    concurrency: 1,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: workerLogger(log),
  });
  const server = createServer(services).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    ...createClient(url),
    url,
    config,
    ownerUrl,
    owner,
    pools,
    storage: objects.storage,
    services,
    pooler,
    runJobs: () => runOnce({ pgPool: pools.worker, taskList, logger: workerLogger(log) }),
    images,
    async close() {
      await imageWorker.stop();
      await imagePool.end();
      await images.close();
      await services.notificationHub.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await services.graphql.release();
      await Promise.all([pools.end(), owner.end(), objects.stop()]);
      await pooler?.close();
      if (own) return;
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${database} with (force)`);
      await cleanup.end();
    },
  };
}
