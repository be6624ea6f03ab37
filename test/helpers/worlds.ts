// The worlds several test files start from, one function each: a file calls the function in its
// set-up instead of writing the same steps again. Each answers what the tests then use.
import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import pg from 'pg';
import { inject } from 'vitest';
import { freePort } from '../../db/free-port.ts';
import { generate, type ScaleSize } from '../bench/scale-data.ts';
import { startTestApp, type TestApp } from './app.ts';
import { databaseUrl } from './global-setup.ts';
import { addMember, createHub, type TestHub } from './hubs.ts';
import { vacuumUntilAllVisible } from './plans.ts';
import { startProcess, type RunningProcess } from './process.ts';
import { userAtLevel, type TestUser } from './users.ts';

type Level = 1 | 2 | 3 | 4;

type Users<L extends readonly Level[]> = { [K in keyof L]: TestUser };

/** Users at the given access levels, made one after another in that order. */
export async function usersAtLevels<const L extends readonly Level[]>(app: TestApp, ...levels: L): Promise<Users<L>> {
  const users: TestUser[] = [];
  for (const level of levels) users.push(await userAtLevel(app, level));
  return users as Users<L>;
}

/** A test app of the file's own (the caller closes it), then users at the given levels in it. */
export async function appWithUsers<const L extends readonly Level[]>(...levels: L): Promise<[TestApp, ...Users<L>]> {
  const app = await startTestApp();
  return [app, ...(await usersAtLevels(app, ...levels))];
}

/**
 * A test app whose database holds the scale benchmark's data of `size` (test/bench/scale-data.ts),
 * with what `more` adds, vacuumed until the planner sees every page all-visible.
 */
export async function appWithScaleData(
  size: ScaleSize,
  more: (client: pg.PoolClient) => Promise<unknown> = async () => {},
): Promise<TestApp> {
  const app = await startTestApp();
  const client = await app.owner.connect();
  try {
    await generate(client, size, () => {});
    await more(client);
    await vacuumUntilAllVisible(client);
  } finally {
    client.release();
  }
  return app;
}

/** A hub of `owner` with `members` as active members (each through an admin invitation). */
export async function hubWithMembers(app: TestApp, owner: TestUser, ...members: TestUser[]): Promise<TestHub> {
  const hub = await createHub(app, owner);
  for (const member of members) await addMember(app, hub, member);
  return hub;
}

/** A database of the test's own: a clone of the migrated template, or empty (`template: false`). */
export interface ScratchDatabase {
  database: string;
  ownerUrl: string;
  /** Drops it, with every connection still on it. */
  drop(): Promise<void>;
}

export async function scratchDatabase(prefix: string, { template = true } = {}): Promise<ScratchDatabase> {
  const adminUrl = inject('adminUrl');
  const database = `${prefix}_${randomBytes(5).toString('hex')}`;
  await asAdmin(adminUrl, `create database ${database}${template ? ` template ${inject('templateDatabase')}` : ''}`);
  return {
    database,
    ownerUrl: databaseUrl(adminUrl, database),
    drop: () => asAdmin(adminUrl, `drop database if exists ${database} with (force)`),
  };
}

async function asAdmin(adminUrl: string, statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/** An empty bucket in the test object store (S3rver) at `endpoint`. */
export async function createBucket(bucket: string, endpoint = inject('s3Endpoint')): Promise<void> {
  const s3 = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    s3.destroy();
  }
}

/** An empty database (`npm run migrate` makes the schema) and a bucket named after it: what a fresh install starts from. */
export async function emptyInstall(prefix: string): Promise<ScratchDatabase & { bucket: string }> {
  const scratch = await scratchDatabase(prefix, { template: false });
  const bucket = scratch.database.replaceAll('_', '-');
  await createBucket(bucket);
  return { ...scratch, bucket };
}

/**
 * A process of this checkout (`node main.ts --only=<role>`) on the test app's database, bucket and
 * token secret (tokens the test app signs are valid there), on a free port; `env` adds or overrides
 * settings. The caller waits for what it needs and ends it (killAll).
 */
export async function processOnApp(
  app: TestApp,
  role: 'api' | 'worker',
  env: Record<string, string> = {},
): Promise<RunningProcess & { port: number }> {
  const port = await freePort();
  const running = startProcess(process.execPath, ['main.ts', `--only=${role}`], {
    DATABASE_URL: app.ownerUrl,
    MIGRATE_ON_START: 'false',
    JWT_SECRET: app.config.jwtSecret,
    S3_ENDPOINT: app.config.s3.endpoint as string,
    S3_BUCKET: app.config.s3.bucket,
    PORT: String(port),
    ...env,
  });
  return { ...running, port };
}
