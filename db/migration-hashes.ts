// Landed migrations are protected by content: db/migrations.sha256 holds the SHA-256 of every
// migration file on main (migrations/frozen/ included), one `<hash>  migrations/<file>` line each (the format of `sha256sum`, so
// `sha256sum -c db/migrations.sha256` checks a checkout without Node). test/sql/database/migration-hashes.test.ts
// fails when a listed file's content changes, when a listed file is gone, or when a migration has no
// line yet; `npm run migrations:hash` adds the lines of new files and never rewrites a listed one.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
export const hashListPath = path.join(root, 'db', 'migrations.sha256');

/** `migrations/<file>` and `migrations/frozen/<file>` for every migration in the checkout, sorted by path. */
export function migrationFiles(): string[] {
  return ['migrations', 'migrations/frozen']
    .flatMap((dir) =>
      readdirSync(path.join(root, dir), { withFileTypes: true })
        .filter((entry) => entry.isFile() && entry.name.endsWith('.sql'))
        .map((entry) => `${dir}/${entry.name}`),
    )
    .sort();
}

export function hashOf(file: string): string {
  return createHash('sha256')
    .update(readFileSync(path.join(root, file)))
    .digest('hex');
}

/** The committed list: file → hash. */
export function committedHashes(): Map<string, string> {
  const hashes = new Map<string, string>();
  if (!existsSync(hashListPath)) return hashes;
  for (const line of readFileSync(hashListPath, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const match = /^([0-9a-f]{64}) {2}(migrations\/\S+\.sql)$/.exec(line);
    if (!match) throw new Error(`db/migrations.sha256: not a "<sha256>  migrations/<file>.sql" line: ${line}`);
    hashes.set(match[2]!, match[1]!);
  }
  return hashes;
}

/** Adds the lines of migrations the list does not name yet; returns their names. Listed lines stay as they are. */
export function addNewHashes(): string[] {
  const hashes = committedHashes();
  const added = migrationFiles().filter((file) => !hashes.has(file));
  for (const file of added) hashes.set(file, hashOf(file));
  const lines = [...hashes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([file, hash]) => `${hash}  ${file}\n`);
  writeFileSync(hashListPath, lines.join(''));
  return added;
}
