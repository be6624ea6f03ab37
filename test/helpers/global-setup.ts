// Once per run: a PostgreSQL (DATABASE_URL when set, else a throwaway embedded cluster) and one
// migrated template database. Each test file clones the template (create database ... template),
// so files run in parallel on isolated data in milliseconds.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../db/embedded.ts';
import { migrate } from '../../db/migrate.ts';
import S3rver from 's3rver';
import { freePort } from '../../db/free-port.ts';
import { ensureEngines } from './engines.ts';
import { keepFolders } from '../../server/uploads/s3rver-folders.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
    s3Endpoint: string;
  }
}

export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export default async function setup(project: TestProject) {
  ensureEngines();
  let embedded: EmbeddedDatabase | undefined;
  let dataDir: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-test-'));
    await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user
    embedded = await startEmbeddedPostgres(dataDir, { persistent: false, durable: false });
    adminUrl = embedded.url;
  }
  const templateDatabase = `opinion_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDatabase}`);
  await admin.query(`create database ${templateDatabase}`);
  await migrate(databaseUrl(adminUrl, templateDatabase));
  project.provide('adminUrl', adminUrl);
  project.provide('templateDatabase', templateDatabase);

  // One local S3-compatible store for the run; each test file makes its own bucket.
  const s3Directory = await mkdtemp(path.join(os.tmpdir(), 'opinion-s3-'));
  const s3Port = await freePort();
  const s3 = keepFolders(new S3rver({ address: '127.0.0.1', port: s3Port, directory: s3Directory, silent: true }));
  await s3.run();
  project.provide('s3Endpoint', `http://127.0.0.1:${s3Port}`);

  return async () => {
    await admin.query(`drop database if exists ${templateDatabase} with (force)`);
    await admin.end();
    await s3.close();
    await rm(s3Directory, { recursive: true, force: true });
    await embedded?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  };
}
