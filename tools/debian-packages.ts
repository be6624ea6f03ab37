// The programs an operator runs beside the service (PgBouncer, pgBackRest, PostgreSQL 15's server
// binaries) come from Debian's packages. What needs them (the test run: test/helpers/engines.ts; the
// restore drill: tools/restore-drill.ts) names the file it runs and the package that ships it; the
// missing ones are installed here with apt-get when this runs as root on Debian, and elsewhere the
// caller stops with one line naming the packages to install.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Installs the packages of the files that are missing (as root, with apt-get). Elsewhere throws
 * one line: `<who>: Debian's <packages> missing (install them as root: apt-get install <packages>)`.
 */
export function ensureDebianPackages(files: readonly (readonly [file: string, pkg: string])[], who: string): void {
  const missing = [...new Set(files.filter(([file]) => !existsSync(file)).map(([, pkg]) => pkg))];
  if (missing.length === 0) return;
  const apt = existsSync('/usr/bin/apt-get') && process.getuid?.() === 0;
  if (!apt) throw new Error(`${who}: Debian's ${missing.join(', ')} missing (install them as root: apt-get install ${missing.join(' ')})`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'ignore', env });
}
