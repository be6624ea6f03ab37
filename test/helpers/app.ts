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
import { runOnce } from 'graphile-worker';
import { createServices, type ServiceOverrides, type Services } from '../../server/services.ts';
import { openStorage } from '../../server/uploads/open-storage.ts';
import { s3Client, type Storage } from '../../server/uploads/storage.ts';
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
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Through a PgBouncer in transaction mode (default: TEST_THROUGH_POOLER=1). */
  pooler?: boolean;
}

export async function startTestApp(
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
  { pooler: throughPooler = process.env.TEST_THROUGH_POOLER === '1' }: TestAppOptions = {},
): Promise<TestApp> {
  const adminUrl = inject('adminUrl');
  const database = `opinion_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${database} template ${inject('templateDatabase')}`);
  await admin.end();
  const ownerUrl = databaseUrl(adminUrl, database);

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
  const pools = createPools(ownerUrl, { poolerUrl: pooler?.url });
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 4 });
  // The database is dropped with (force) at close: a client still closing then loses its server.
  survivesServerLoss(owner);
  const services = await createServices(config, log, pools, objects.storage, overrides);
  await services.notificationHub.start(roleUrl(ownerUrl, 'authenticator'));
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
    runJobs: () => runOnce({ pgPool: pools.worker, taskList: createTaskList({ storage: objects.storage, ballots: { box: services.ballots, batch: config.ballotBatch } }), logger: workerLogger(log) }),
    async close() {
      await services.notificationHub.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await services.graphql.release();
      await Promise.all([pools.end(), owner.end(), objects.stop()]);
      await pooler?.close();
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${database} with (force)`);
      await cleanup.end();
    },
  };
}
