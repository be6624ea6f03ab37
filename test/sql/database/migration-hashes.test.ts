// A landed migration is never edited: db/migrations.sha256 holds each migration file's SHA-256, and a
// file whose content differs from its committed hash fails here. A new migration needs its line
// (`npm run migrations:hash`, which adds only files not listed yet).
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { committedHashes, hashOf, migrationFiles } from '../../../db/migration-hashes.ts';

const addHint = 'a new migration needs its hash: run `npm run migrations:hash` and commit db/migrations.sha256';
const landedHint =
  'a landed migration changed: never edit a migration that is on main (restore it with `git checkout main -- <file>`) ' +
  'and put the change in a new migration';

it('every migration file has a committed hash', () => {
  const listed = committedHashes();
  expect(
    migrationFiles().filter((file) => !listed.has(file)),
    addHint,
  ).toEqual([]);
});

it('no listed migration is gone', () => {
  const present = new Set(migrationFiles());
  expect(
    [...committedHashes().keys()].filter((file) => !present.has(file)),
    landedHint,
  ).toEqual([]);
});

it('every landed migration has the content it was committed with', () => {
  const changed = [...committedHashes()].filter(([file, hash]) => migrationFiles().includes(file) && hashOf(file) !== hash);
  expect(
    changed.map(([file]) => file),
    landedHint,
  ).toEqual([]);
});

// docs/database.md: down sections are never run, so a migration has none (found as node-pg-migrate
// finds one: a `-- Down Migration` line in any case and spacing). The frozen migrations
// (migrations/frozen/) landed with theirs (copies of earlier bodies) before the rule was enforced,
// and stay as landed.
it('no migration outside migrations/frozen/ has a down section', () => {
  const later = migrationFiles().filter((file) => !file.startsWith('migrations/frozen/'));
  const withDown = later.filter((file) =>
    /^\s*--[\s-]*down\s+migration/im.test(readFileSync(new URL(`../../../${file}`, import.meta.url), 'utf8')),
  );
  expect(withDown, 'a new migration has no `-- Down Migration` section (docs/database.md)').toEqual([]);
});
