// npm run admin -- default-feed-users add|remove|list [username]: internal tooling over the same
// database settings as `npm start` (DATABASE_URL, or the embedded PostgreSQL under the data folder:
// the running service's when `npm start` is up, else started for the command and stopped after).
// Each command runs as app_admin through the same SQL functions internal GraphQL exposes, so the
// CLI and GraphQL apply one rule. Exit codes: 0 done, 1 failed (e.g. unknown user), 2 usage.
import pg from 'pg';
import { loadConfig } from '../../config.ts';
import { openDatabase, type Database } from '../database.ts';
import { runningEmbeddedUrl } from '../embedded.ts';

const usage = 'usage: npm run admin -- default-feed-users add <username> | remove <username> | list';

function fail(message: string, code: number): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

const [resource, action, username, ...extra] = process.argv.slice(2);
const needsName = action === 'add' || action === 'remove';
if (resource !== 'default-feed-users' || !(needsName || action === 'list') || needsName !== (username !== undefined) || extra.length > 0) {
  fail(usage, 2);
}

async function run(client: pg.Client): Promise<string> {
  if (action === 'list') {
    const { rows } = await client.query<{ username: string; added_at: Date }>(
      `select u.username, d.added_at from app.default_feed_users d join app.users u on u.id = d.user_id order by u.username`,
    );
    return rows.length === 0 ? 'no default feed users' : rows.map((row) => `${row.username}\tadded ${row.added_at.toISOString()}`).join('\n');
  }
  if (action === 'add') {
    await client.query('select app.add_default_feed_user($1)', [username]);
    return `${username} is a default feed user`;
  }
  const { rows } = await client.query<{ removed: boolean }>('select app.remove_default_feed_user($1) as removed', [username]);
  return rows[0]?.removed ? `${username} is no longer a default feed user` : `${username} was not a default feed user`;
}

const config = loadConfig();
let database: Database | undefined;
const running = config.databaseUrl ? undefined : runningEmbeddedUrl(config.dataDir);
const url = running ?? (database = await openDatabase(config)).ownerUrl;
const client = new pg.Client({ connectionString: url });
let exitCode = 0;
try {
  await client.connect();
  await client.query('begin');
  await client.query('set local role app_admin');
  const output = await run(client);
  await client.query('commit');
  process.stdout.write(`${output}\n`);
} catch (error) {
  const { code, message } = error as { code?: string; message: string };
  exitCode = 1;
  process.stderr.write(code === 'P0001' && message === 'USER_NOT_FOUND' ? `no user with the username "${username}"\n` : `failed: ${message}\n`);
} finally {
  await client.end().catch(() => undefined);
  await database?.stop();
}
process.exit(exitCode);
