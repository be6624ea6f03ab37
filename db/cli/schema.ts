// npm run schema: writes db/schema.sql from a freshly migrated database. Always a throwaway embedded
// PostgreSQL 18 (DATABASE_URL is not used): the file is the schema the migrations and db/sql produce, on the
// major it is checked against by default, whatever the development database holds.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../logger.ts';
import { startEmbeddedPostgres } from '../embedded.ts';
import { migrate } from '../migrate.ts';
import { currentSchema, schemaFileMajor, schemaFilePath } from '../schema/schema-file.ts';

const log = createLogger(process.env.LOG_LEVEL ?? 'info');
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-schema-'));
await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user
const embedded = await startEmbeddedPostgres(dataDir, { persistent: false, durable: false });
try {
  await migrate(embedded.url);
  await writeFile(schemaFilePath, await currentSchema(embedded.url, schemaFileMajor));
  log.info(`wrote ${path.relative(process.cwd(), schemaFilePath)}`);
} finally {
  await embedded.stop();
  await rm(dataDir, { recursive: true, force: true });
}
