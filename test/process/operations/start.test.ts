// `npm start` as a user runs it: the real entry point in a child process, on its embedded
// PostgreSQL (a fresh data folder) and on DATABASE_URL; it answers, then stops cleanly on SIGINT.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../db/free-port.ts';
import { databaseUrl } from '../../helpers/global-setup.ts';
import { answers, projectRoot } from '../../helpers/process.ts';

async function runService(env: Record<string, string>, { interruptWhenStarting = false } = {}) {
  const port = await freePort();
  const s3Port = await freePort();
  const started = Date.now();
  const child = spawn(process.execPath, ['main.ts'], {
    cwd: path.resolve(import.meta.dirname, '../../..'),
    env: { ...process.env, NODE_ENV: 'development', LOG_LEVEL: 'info', PORT: String(port), S3_PORT: String(s3Port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let answer: Response | undefined;
  while (interruptWhenStarting && !output.includes('starting') && Date.now() - started < 30_000) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  while (!interruptWhenStarting && !answer && Date.now() - started < 30_000 && child.exitCode === null) {
    answer = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login-config`).catch(() => undefined);
    if (!answer) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const readyMs = Date.now() - started;
  child.kill('SIGINT');
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await exited;
  clearTimeout(killer);
  return { answer, readyMs, code, output };
}

describe('npm start', () => {
  it('serves the API on an embedded PostgreSQL in a fresh data folder within 30 s and stops cleanly', { timeout: 90_000 }, async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-start-'));
    await chmod(dataDir, 0o755);
    try {
      const { answer, readyMs, code, output } = await runService({ DATA_DIR: dataDir, DATABASE_URL: '' });
      expect(answer?.status, output).toBe(200);
      expect(readyMs).toBeLessThan(30_000);
      expect(output).toContain('API listening on http://localhost:');
      expect(output).toContain(`embedded PostgreSQL in ${dataDir}`);
      expect(output).toContain('stopped');
      expect(code).toBe(0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('stops cleanly when interrupted during startup, leaving no database running', { timeout: 60_000 }, async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-start-'));
    await chmod(dataDir, 0o755);
    try {
      const { code, output } = await runService({ DATA_DIR: dataDir, DATABASE_URL: '' }, { interruptWhenStarting: true });
      expect(output).toContain('SIGINT: shutting down');
      expect(output).toContain('stopped');
      expect(code).toBe(0);
      expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it(
    'in a terminal, on DATABASE_URL: readable log lines, no GRAPHILE_ENV warning even once internal GraphQL loads, and Ctrl-C stops it',
    { timeout: 60_000 },
    async () => {
      const adminUrl = inject('adminUrl');
      const database = `opinion_start_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`create database ${database} template ${inject('templateDatabase')}`);
      const port = await freePort();
      // A newcomer's terminal: no NODE_ENV, no GRAPHILE_ENV, stdout a terminal (util-linux `script`
      // runs `npm start` on a pseudo-terminal; what is typed into it goes to the terminal).
      const env: Record<string, string | undefined> = {
        ...process.env,
        PORT: String(port),
        DATABASE_URL: databaseUrl(adminUrl, database),
        S3_ENDPOINT: inject('s3Endpoint'),
        JWT_SECRET: 'start-test',
        ADMIN_API_TOKEN: 'start-test-admin',
        LOG_LEVEL: 'info',
      };
      delete env.NODE_ENV;
      delete env.GRAPHILE_ENV;
      const terminal = spawn('script', ['--quiet', '--flush', '--return', '--command', 'npm start', '/dev/null'], {
        cwd: projectRoot,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let output = '';
      terminal.stdout.on('data', (chunk) => (output += chunk));
      terminal.stderr.on('data', (chunk) => (output += chunk));
      const exited = new Promise<number | null>((resolve) => terminal.once('exit', (code) => resolve(code)));
      try {
        const deadline = Date.now() + 40_000;
        while (!(await answers(`http://127.0.0.1:${port}/readyz`))) {
          if (Date.now() > deadline || terminal.exitCode !== null) throw new Error(`the service did not start; output:\n${output}`);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        const graphql = await fetch(`http://127.0.0.1:${port}/internal/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer start-test-admin' },
          body: JSON.stringify({ query: '{ __typename }' }),
        });
        expect(graphql.status).toBe(200);
        terminal.stdin.write('\x03'); // Ctrl-C
        // Ctrl-C reaches npm and the service at once, and npm forwards its copy to the service too.
        // When that copy lands while Node is already tearing down after `stopped` (its signal handlers
        // gone), the service ends by the signal and npm reports it the shell's way, 130; otherwise 0.
        // Either is a clean stop: the lines below prove the shutdown ran to its end.
        expect([0, 130], output).toContain(await exited);
        expect(output).toMatch(/INFO.*API listening on http:\/\/localhost:/);
        expect(output).toContain(`data: ${new URL(adminUrl).host}/${database}`);
        expect(output).toMatch(/INFO.*stopped/);
        expect(output).not.toContain('{"level"');
        expect(output).not.toContain('GRAPHILE_ENV');
        expect(output).not.toMatch(/WARN|ERROR/);
      } finally {
        if (terminal.exitCode === null) terminal.kill('SIGKILL');
        await admin.query(`drop database if exists ${database} with (force)`);
        await admin.end();
      }
    },
  );
});
