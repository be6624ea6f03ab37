// npm run migrations:hash: adds the SHA-256 of each migration file db/migrations.sha256 does not list
// yet (your new migration), and leaves every listed line as it is: a landed migration's hash is
// never rewritten, so a changed landed file keeps failing test/sql/database/migration-hashes.test.ts.
import { createLogger } from '../../logger.ts';
import { addNewHashes } from '../migration-hashes.ts';

const log = createLogger(process.env.LOG_LEVEL ?? 'info');
const added = addNewHashes();
log.info(added.length ? `db/migrations.sha256: added ${added.join(', ')}` : 'db/migrations.sha256: every migration is listed');
