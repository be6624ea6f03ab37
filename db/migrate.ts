// Brings a database to the current schema: the graphile-worker schema first (application
// migrations reference it), then the SQL migrations in migrations/, then the login roles' passwords.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Logger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { runner } from 'node-pg-migrate';
import { rolePassword, type LoginRole } from './roles.ts';

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'migrations');

/** The names of the migrations this checkout ships (as node-pg-migrate records them: no extension). */
export function shippedMigrations(): string[] {
  return readdirSync(migrationsDir)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => file.slice(0, -'.sql'.length));
}

export async function migrate(ownerUrl: string): Promise<void> {
  await runWorkerMigrations({ connectionString: ownerUrl, logger: new Logger(() => () => {}) });
  await runner({
    databaseUrl: ownerUrl,
    dir: migrationsDir,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    checkOrder: true,
    log: () => {},
    verbose: false,
  });
  await setLoginPasswords(ownerUrl);
}

/**
 * Roles belong to the whole cluster, so processes migrating different databases of one server (two
 * services, a CLI beside `npm start`, parallel tests) may set the same password at once; PostgreSQL
 * then refuses the later catalog update ("tuple concurrently updated", XX000). Every writer sets the
 * same value, so trying again is correct.
 */
async function setLoginPasswords(ownerUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    for (const role of ['authenticator', 'app_worker'] satisfies LoginRole[]) {
      const statement = `alter role ${role} password ${client.escapeLiteral(rolePassword(ownerUrl, role))}`;
      for (let attempt = 1; ; attempt += 1) {
        try {
          await client.query(statement);
          break;
        } catch (error) {
          if (attempt === 5 || (error as { code?: string }).code !== 'XX000') throw error;
          await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
        }
      }
    }
  } finally {
    await client.end();
  }
}
