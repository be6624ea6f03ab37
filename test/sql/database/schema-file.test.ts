// db/schema.sql is what the migrations produce: the migrated template dumped like `npm run schema`
// dumps it. On the PostgreSQL major the file is generated on (the embedded 18 of the default run)
// the text must be equal; on another major (DATABASE_URL on PostgreSQL 15) pg_dump writes the same
// schema slightly differently, so both sides are compared without that noise (acrossMajors).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { expect, inject, it } from 'vitest';
import { acrossMajors, currentSchema, schemaFileMajor, schemaFilePath } from '../../../db/schema/schema-file.ts';
import { databaseUrl } from '../../helpers/global-setup.ts';

const regenerate = 'db/schema.sql is stale: run `npm run schema` and commit the result';

it('db/schema.sql is the schema the migrations produce', async () => {
  // A clone of the template: connecting to the template itself would stop other files cloning it.
  const adminUrl = inject('adminUrl');
  const database = `opinion_schema_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${database} template ${inject('templateDatabase')}`);
    const { rows } = await admin.query<{ major: number }>(`select current_setting('server_version_num')::int / 10000 as major`);
    const major = rows[0]?.major ?? 0;
    const produced = await currentSchema(databaseUrl(adminUrl, database), major);
    const committed = await readFile(schemaFilePath, 'utf8');
    if (major === schemaFileMajor) expect(produced, regenerate).toBe(committed);
    else
      expect(acrossMajors(produced), `${regenerate} (compared across PostgreSQL ${major} and ${schemaFileMajor})`).toBe(
        acrossMajors(committed),
      );
  } finally {
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  }
});
