// Contract 11, clean failures and signals, with real processes: a bad setting, any port in use (the
// API's, the embedded S3 store's, the metrics') and an unreachable database each end the process
// with one line naming the problem and exit code 1, leaving nothing running; SIGINT to `npm start`,
// or SIGINT or SIGHUP (a closed terminal) to its whole process group, stops the app and then its
// embedded PostgreSQL (in its own process group), in order; and a kill -9 of the app, which leaves
// its PostgreSQL running, is recovered by the next start on the same data folder.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../db/free-port.ts';
import { answers, clusterRunning, startProcess, type RunningProcess } from '../../helpers/process.ts';

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-failures-'));
  await chmod(dataDir, 0o755);
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

async function ports() {
  return { PORT: String(await freePort()), S3_PORT: String(await freePort()) };
}

/** The pool id the process's worker registered with (worker/liveness.ts logs it). */
function registeredWorker(run: RunningProcess): string | undefined {
  const line = run
    .output()
    .split('\n')
    .find((text) => text.startsWith('{') && text.includes('worker registered'));
  return line ? (JSON.parse(line) as { worker: string }).worker : undefined;
}

/** Runs main.ts to its end; it must fail with exactly one line at fatal level and no stack. */
async function expectOneLineFailure(env: Record<string, string>, problem: RegExp, { clusterStopped = true } = {}) {
  const run = startProcess(process.execPath, ['main.ts'], { DATA_DIR: dataDir, DATABASE_URL: '', ...env });
  const code = await run.exited;
  const problems = run.problems();
  expect(code, run.output()).toBe(1);
  expect(problems, run.output()).toHaveLength(1);
  expect(problems[0]?.level).toBe(60);
  expect(problems[0]?.msg).toMatch(problem);
  expect(run.output()).not.toMatch(/\n\s+at /); // no stack trace
  if (clusterStopped) expect(clusterRunning(path.join(dataDir, 'pg'))).toBe(false);
  return run;
}

describe('a problem the operator can fix: one line, exit 1, nothing left running', () => {
  it('a bad setting names the setting', async () => {
    await expectOneLineFailure({ PORT: 'eighty' }, /^PORT must be a port number/);
    await expectOneLineFailure({ ...(await ports()), SSE_PING_SECONDS: '-1' }, /^SSE_PING_SECONDS must be a positive number/);
    await expectOneLineFailure({ ...(await ports()), S3_PUBLIC_URL: 'phone.local:3001' }, /^S3_PUBLIC_URL must be an http\(s\) URL/);
  });

  it('a port in use, whichever it is, names the port and its setting, before anything starts', { timeout: 90_000 }, async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      for (const setting of ['PORT', 'S3_PORT', 'METRICS_PORT']) {
        const run = await expectOneLineFailure(
          { ...(await ports()), [setting]: String(port) },
          new RegExp(`^port ${port} is already in use: set ${setting} to a free port`),
        );
        expect(run.output()).not.toContain('embedded PostgreSQL');
      }
    } finally {
      taken.close();
    }
  });
  it('an unreachable DATABASE_URL names the database', async () => {
    const nobody = await freePort();
    await expectOneLineFailure(
      { ...(await ports()), DATABASE_URL: `postgres://owner:secret@127.0.0.1:${nobody}/opinion` },
      new RegExp(`^cannot reach the database 127.0.0.1:${nobody}/opinion \\(DATABASE_URL\\): .*ECONNREFUSED`),
    );
  });
});

describe('signals', () => {
  it('SIGINT to `npm start` alone stops the app, then its database', { timeout: 90_000 }, async () => {
    const env = { ...(await ports()), DATA_DIR: dataDir, DATABASE_URL: '' };
    const npm = startProcess('npm', ['start'], env);
    await npm.waitFor(() => answers(`http://127.0.0.1:${env.PORT}/healthz`), 'the service');
    expect(clusterRunning(path.join(dataDir, 'pg'))).toBe(true);
    npm.child.kill('SIGINT');
    await npm.exited;
    await npm.waitFor(() => npm.output().includes('"stopped"'), 'the app to stop');
    expect(await answers(`http://127.0.0.1:${env.PORT}/healthz`)).toBe(false);
    expect(clusterRunning(path.join(dataDir, 'pg'))).toBe(false);
    expect(npm.problems()).toEqual([]);
  });

  it('SIGHUP (the terminal closed) stops the app and then its database, as SIGINT does', { timeout: 90_000 }, async () => {
    const env = { ...(await ports()), DATA_DIR: dataDir, DATABASE_URL: '' };
    const npm = startProcess('npm', ['start'], env);
    await npm.waitFor(() => answers(`http://127.0.0.1:${env.PORT}/healthz`), 'the service');
    process.kill(-(npm.child.pid as number), 'SIGHUP');
    // npm itself ends at once on SIGHUP; the app, which got the signal too, stops on its own.
    await npm.waitForAfterExit(() => npm.output().includes('"stopped"'), 'the app to stop');
    expect(npm.output()).toContain('SIGHUP: shutting down');
    expect(await answers(`http://127.0.0.1:${env.PORT}/healthz`)).toBe(false);
    expect(clusterRunning(path.join(dataDir, 'pg'))).toBe(false);
    expect(npm.problems()).toEqual([]);
  });

  it(
    'after a kill -9 of the app, its PostgreSQL left running is taken over by the next start on the same data folder; a start beside a running service is refused',
    { timeout: 90_000 },
    async () => {
      const env = { ...(await ports()), DATA_DIR: dataDir, DATABASE_URL: '' };
      const killed = startProcess(process.execPath, ['main.ts'], env);
      await killed.waitFor(() => answers(`http://127.0.0.1:${env.PORT}/healthz`), 'the service');
      await killed.waitFor(() => registeredWorker(killed) !== undefined, 'its worker to register');
      killed.child.kill('SIGKILL');
      await killed.exited;
      const clusterDir = path.join(dataDir, 'pg');
      expect(clusterRunning(clusterDir)).toBe(true); // the orphan

      // The next start takes back the killed worker's jobs (silent, its connection gone), here after
      // 1 s: nothing of the killed run is left for the tests after this one.
      const nextEnv = { ...env, ...(await ports()), WORKER_DEAD_AFTER_SECONDS: '1' };
      const next = startProcess(process.execPath, ['main.ts'], nextEnv);
      await next.waitFor(() => answers(`http://127.0.0.1:${nextEnv.PORT}/healthz`), 'the next start');
      await next.waitFor(() => next.problems().length === 2, "the killed worker's jobs to be taken back");
      const takeover = next.problems();
      expect(takeover, next.output()).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            level: 40,
            msg: expect.stringMatching(/was left running by a process that ended without stopping it .*: stopping it and starting again$/),
          }),
          expect.objectContaining({
            level: 40,
            msg: 'took back the jobs of 1 worker(s) silent for over 1 s',
            workers: [registeredWorker(killed)],
          }),
        ]),
      );

      // While that service runs, a second start on its folder is refused, and leaves it running.
      const second = await expectOneLineFailure(
        await ports(),
        /^the embedded PostgreSQL of .* belongs to a process that is running \(pid \d+\): stop that process first, or use another DATA_DIR$/,
        { clusterStopped: false },
      );
      expect(second.output()).not.toMatch(/kill/);
      expect((await fetch(`http://127.0.0.1:${nextEnv.PORT}/readyz`)).status).toBe(200);
      next.child.kill('SIGTERM');
      expect(await next.exited).toBe(0);
      expect(clusterRunning(clusterDir)).toBe(false);
    },
  );

  it(
    'Ctrl-C (SIGINT to the whole foreground group) reaches the app only: it closes its connections before its database stops',
    { timeout: 90_000 },
    async () => {
      const env = { ...(await ports()), DATA_DIR: dataDir, DATABASE_URL: '' };
      const npm = startProcess('npm', ['start'], env);
      await npm.waitFor(() => answers(`http://127.0.0.1:${env.PORT}/healthz`), 'the service');
      process.kill(-(npm.child.pid as number), 'SIGINT');
      await npm.exited;
      await npm.waitFor(() => npm.output().includes('"stopped"'), 'the app to stop');
      expect(clusterRunning(path.join(dataDir, 'pg'))).toBe(false);
      expect(npm.output()).not.toMatch(/UNLISTEN|terminating connection/);
      expect(npm.problems()).toEqual([]);
    },
  );
});
