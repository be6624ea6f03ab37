// npm run seed on a fresh database: it builds the demo world through the API, prints the phones and
// the OTP_TEST_CODES line to sign in with, and a second run changes nothing.
import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { databaseUrl } from '../helpers/global-setup.ts';
import { startProcess } from '../helpers/process.ts';

const adminUrl = inject('adminUrl');
const database = `opinion_seed_${randomBytes(4).toString('hex')}`;
let env: Record<string, string>;
let owner: pg.Client;

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${database} template ${inject('templateDatabase')}`);
  await admin.end();
  const bucket = database.replaceAll('_', '-');
  const s3 = new S3Client({ endpoint: inject('s3Endpoint'), region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  s3.destroy();
  env = { DATABASE_URL: databaseUrl(adminUrl, database), JWT_SECRET: 'seed-test', S3_ENDPOINT: inject('s3Endpoint'), S3_BUCKET: bucket };
  owner = new pg.Client({ connectionString: env.DATABASE_URL });
  await owner.connect();
});

afterAll(async () => {
  await owner.end();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.end();
});

const count = async (sql: string) => Number((await owner.query<{ n: string }>(`select count(*) as n from ${sql}`)).rows[0]?.n);

describe('npm run seed', () => {
  it('builds people, follows, hubs with members, posts with sliders and votes, and prints how to sign in', { timeout: 90_000 }, async () => {
    const seed = startProcess('npm', ['run', 'seed'], env);
    expect(await seed.exited, seed.output()).toBe(0);
    expect(seed.output()).toContain('Seeded 8 people');
    expect(seed.output()).toContain('6 discussion messages');
    expect(seed.output()).toContain('5550100001  Maria Kovacs (@maria_k)');
    expect(seed.output()).toMatch(/OTP_TEST_CODES='\+15550100001=\d{4},/);

    expect(await count(`app.users where username like '%\\_%'`)).toBe(8);
    expect(await count('app.follows')).toBe(15);
    expect(await count(`app.hub_memberships`)).toBe(7);
    expect(await count('app.posts where slider_left_label is not null')).toBe(5);
    expect(await count('app.vote_receipts')).toBe(20);

    const again = startProcess('npm', ['run', 'seed'], env);
    expect(await again.exited, again.output()).toBe(0);
    expect(again.output()).toContain('seeded already');
    expect(await count('app.posts')).toBe(6);
  });
});
