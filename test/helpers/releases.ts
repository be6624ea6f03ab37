// Releases other than this checkout, for the deploy tests and the deploy benchmark: the previous
// release (the commit deploy/previous-release names) checked out into a folder, and a "next release"
// made from this checkout by editing a copy of it (one function body, one policy expression, one
// added column). No vitest import: the benchmarks use it too.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cp, mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const checkoutRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The commit of the previous release, as deploy/previous-release records it (its first line that is not a comment). */
export function previousReleaseCommit(root = checkoutRoot): string {
  const file = path.join(root, 'deploy', 'previous-release');
  const commit = readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '' && !line.startsWith('#'));
  if (!commit || !/^[0-9a-f]{40}$/.test(commit)) throw new Error(`deploy/previous-release names no commit id (40 hex digits): ${file}`);
  return commit;
}

interface LockedPackage {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
}

/**
 * Whether this checkout's node_modules serve a release locked by `theirLock`: every package it
 * locks (at every path under node_modules) is locked here at the same version and integrity, and
 * none of its packages holds a nested one it does not lock, so Node resolves each of its imports to
 * the same files. Packages only this checkout adds at the top (a release's new dependencies) are
 * there unused.
 */
function lockServes(theirLock: string, ourLock: string): boolean {
  const theirs = (JSON.parse(theirLock) as { packages?: Record<string, LockedPackage> }).packages ?? {};
  const ours = (JSON.parse(ourLock) as { packages?: Record<string, LockedPackage> }).packages ?? {};
  const same = Object.entries(theirs).every(([where, locked]) => {
    if (where === '') return true; // the project itself
    const our = ours[where];
    return our !== undefined && our.version === locked.version && our.integrity === locked.integrity && our.link === locked.link;
  });
  // A package nested inside one of theirs that they do not have would shadow what it resolves.
  const shadowing = Object.keys(ours).some((where) => {
    const parent = where.slice(0, Math.max(0, where.lastIndexOf('/node_modules/')));
    return !(where in theirs) && parent !== '' && parent in theirs;
  });
  return same && !shadowing;
}

/**
 * Writes the tree of `commit` into `dest` (git archive). Its node_modules: this checkout's when they
 * hold every package its package-lock.json locks, at the same version (lockServes), else its own
 * `npm ci`. Throws, naming the commit, when the repository does not have it (a shallow clone): a
 * deploy test must not pass without its old release.
 */
export async function checkoutCommit(commit: string, dest: string, root = checkoutRoot): Promise<void> {
  try {
    execFileSync('git', ['-C', root, 'cat-file', '-e', `${commit}^{commit}`], { stdio: 'ignore' });
  } catch {
    throw new Error(
      `the previous release ${commit} (deploy/previous-release) is not in this repository's history: fetch it (git fetch --unshallow, or the release tag) before running this test`,
    );
  }
  await mkdir(dest, { recursive: true });
  execFileSync('sh', ['-c', 'git -C "$1" archive "$2" | tar -x -C "$3"', 'sh', root, commit, dest]);
  const theirLock = readFileSync(path.join(dest, 'package-lock.json'), 'utf8');
  const ourLock = readFileSync(path.join(root, 'package-lock.json'), 'utf8');
  if (lockServes(theirLock, ourLock) && existsSync(path.join(root, 'node_modules'))) {
    await symlink(path.join(root, 'node_modules'), path.join(dest, 'node_modules'));
  } else {
    execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dest, stdio: 'ignore' });
  }
}

/** Copies this checkout's files (tracked and untracked, not ignored: what the next commit would hold) into `dest`, with this checkout's node_modules. */
export async function copyCheckout(dest: string, root = checkoutRoot): Promise<void> {
  const files = execFileSync('git', ['-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'])
    .toString()
    .split('\0')
    .filter((file) => file !== '' && file !== 'node_modules' && existsSync(path.join(root, file)));
  for (const file of files) {
    await mkdir(path.dirname(path.join(dest, file)), { recursive: true });
    await cp(path.join(root, file), path.join(dest, file), { verbatimSymlinks: true });
  }
  await symlink(path.join(root, 'node_modules'), path.join(dest, 'node_modules'));
}

function edit(file: string, change: (text: string) => string): void {
  const before = readFileSync(file, 'utf8');
  const after = change(before);
  if (after === before) throw new Error(`nothing changed in ${file}`);
  writeFileSync(file, after);
}

/**
 * Changes the body of one function in a db/sql folder without changing what it does: a comment
 * line at the start of its body. `name` as the file writes it (`app.can_see_post`).
 */
export function changeFunctionBody(sqlDir: string, file: string, name: string, note = 'changed by the next release'): void {
  edit(path.join(sqlDir, file), (text) => {
    const start = text.indexOf(`create or replace function ${name}(`);
    if (start < 0) throw new Error(`db/sql/${file} has no function ${name}`);
    const open = text.indexOf('$$', start);
    if (open < 0) throw new Error(`db/sql/${file}: no $$ body after function ${name}`);
    return `${text.slice(0, open + 2)}\n  -- ${note}${text.slice(open + 2)}`;
  });
}

/**
 * Changes one policy's expression without changing what it allows: `using (x)` becomes
 * `using (true and x)` (and binds tighter than or, so the value is x's whatever x is).
 */
export function changePolicyExpression(sqlDir: string, file: string, policy: string): void {
  edit(path.join(sqlDir, file), (text) => {
    const start = text.search(new RegExp(`create policy ${policy} on `));
    if (start < 0) throw new Error(`db/sql/${file} has no policy ${policy}`);
    const end = text.indexOf(';', start);
    const statement = text.slice(start, end);
    const changed = statement.replace(/\b(using|with check) \(/, '$1 (true and ');
    if (changed === statement) throw new Error(`db/sql/${file}: policy ${policy} has no using or with check expression`);
    return text.slice(0, start) + changed + text.slice(end);
  });
}

/** Adds a versioned migration (after every shipped one) adding a nullable column: the expand step of a release. */
export function addColumnMigration(treeDir: string, table: string, column: string): string {
  const name = '9999_next_release_column';
  writeFileSync(path.join(treeDir, 'migrations', `${name}.sql`), `-- Up Migration\nalter table ${table} add column ${column} text;\n`);
  return name;
}
