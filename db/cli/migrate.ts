// npm run migrate: brings the database to the current schema and exits (DATABASE_URL, or the
// embedded PostgreSQL under the data folder, which is started for the run and stopped after).
import { loadConfig } from '../../config.ts';
import { createLogger } from '../../logger.ts';
import { openDatabase } from '../database.ts';

const config = loadConfig();
const log = createLogger(config.logLevel);
const database = await openDatabase({ ...config, migrateOnStart: true });
log.info(`migrated: ${database.location}`);
await database.stop();
