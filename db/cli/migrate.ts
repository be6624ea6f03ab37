// npm run migrate: brings the database to the current schema and exits (DATABASE_URL, or the
// embedded PostgreSQL under the data folder, which is started for the run and stopped after).
// A problem the operator can fix is one line and exit code 1, like the service's startup.
import { loadConfig, StartupError } from '../../config.ts';
import { createLogger } from '../../logger.ts';
import { openDatabase } from '../database.ts';

try {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const database = await openDatabase({ ...config, migrateOnStart: true }, { notice: (message) => log.warn(message) });
  const changed = database.migrated?.changed ?? [];
  log.info(
    `migrated: ${database.location}; db/sql: ${changed.length === 0 ? 'nothing changed' : `${changed.length} changed (${changed.join(', ')})`}`,
  );
  await database.stop();
} catch (error) {
  if (!(error instanceof StartupError)) throw error;
  createLogger('info').fatal(error.message);
  process.exitCode = 1;
}
