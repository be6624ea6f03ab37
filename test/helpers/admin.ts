// Internal tooling as tests drive it: the real `npm run admin` command in a child process, and the
// internal GraphQL endpoint with a token.
import { spawn } from 'node:child_process';
import { expect } from 'vitest';
import { projectRoot } from './process.ts';

export interface AdminRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the admin CLI as an operator runs it (no NODE_ENV, quiet logs), with `env` added: what `npm
 * run admin -- <args>` runs (package.json), `node db/cli/admin.ts <args>`, or with `npm`, through npm
 * itself (a second process to start: one test goes that way, the others save its start-up).
 */
export function runAdmin(args: string[], env: Record<string, string>, { npm = false } = {}): Promise<AdminRun> {
  return new Promise((resolve) => {
    const { NODE_ENV: _test, ...operator } = process.env;
    const [command, commandArgs] = npm
      ? ['npm', ['run', '--silent', 'admin', '--', ...args]]
      : [process.execPath, ['db/cli/admin.ts', ...args]];
    const child = spawn(command, commandArgs, {
      cwd: projectRoot,
      env: { ...operator, LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('exit', (code) => {
      // Run without NODE_ENV, graphile's GRAPHILE_ENV warning must not show either.
      expect(stdout + stderr).not.toContain('GRAPHILE_ENV');
      resolve({ code, stdout, stderr });
    });
  });
}

/** A query or mutation to the internal GraphQL endpoint of the API at `baseUrl`, with `token`. */
export async function internalGraphql(baseUrl: string, query: string, token: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${baseUrl}/internal/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as { data?: any; errors?: { message: string }[] };
}
