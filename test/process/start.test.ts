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
import { freePort } from '../../db/embedded.ts';
import { databaseUrl } from '../helpers/global-setup.ts';

async function runService(env: Record<string, string>, { interruptWhenStarting = false } = {}) {
  const port = await freePort();
  const s3Port = await freePort();
  const started = Date.now();
  const child = spawn(process.execPath, ['main.ts'], {
    cwd: path.resolve(import.meta.dirname, '../..'),
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

  it('uses DATABASE_URL when set', { timeout: 60_000 }, async () => {
    const adminUrl = inject('adminUrl');
    const database = `opinion_start_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${database}`);
    try {
      const { answer, code, output } = await runService({ DATABASE_URL: databaseUrl(adminUrl, database), JWT_SECRET: 'start-test' });
      expect(answer?.status, output).toBe(200);
      expect(output).toContain(`data: ${new URL(adminUrl).host}/${database}`);
      expect(code).toBe(0);
    } finally {
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.end();
    }
  });
});
