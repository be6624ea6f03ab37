// The restore drill (tools/restore-drill.ts, `npm run drill:restore`, docs/backups.md) as part of
// the suite: a PostgreSQL 15 cluster of the machine's binaries archiving with Debian's pgBackRest,
// the API and the worker as processes, a backup, a point-in-time restore into a new data directory,
// the service on the restored database, and the drill's own checks (what was committed before the
// noted time is there and nothing after it, counters agree, pending sealed ballots open and tally
// with the same BALLOT_KEY, `pgbackrest verify` passes). Run with a plain repository (neither
// compressed nor encrypted) and kept, so that this test's own search of the repository's files for
// BALLOT_KEY reads what PostgreSQL wrote: a post's text written through the API is found there,
// the key (raw, hex or base64) is not.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { engines } from '../../helpers/engines.ts';
import { projectRoot, startProcess } from '../../helpers/process.ts';

const run = promisify(execFile);

/** The files under a folder that hold any of the byte strings. */
async function filesHolding(folder: string, needles: Buffer[]): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const bytes = await readFile(file);
    if (needles.some((needle) => bytes.includes(needle))) found.push(path.relative(folder, file));
  }
  return found;
}

interface DrillResult {
  ok: boolean;
  restoreSeconds: number;
  dataBytes: number;
  unarchivedBytes: number;
  keyFiles: number;
  markerFiles: number;
  failures: string[];
}

describe('npm run drill:restore', () => {
  it('stops with one line naming the package when a program it needs is missing, before it starts anything', async () => {
    const drill = startProcess(process.execPath, ['tools/restore-drill.ts'], { PGBACKREST: '/nonexistent/pgbackrest' });
    expect(await drill.exited).toBe(1);
    expect(drill.output()).toBe(
      "drill failed: PGBACKREST names no program (/nonexistent/pgbackrest is missing): install Debian's pgbackrest (apt-get install pgbackrest) or set PGBACKREST to where it is\n1 check(s) failed\n",
    );
  });

  it('names the Debian packages it lacks in one line where it cannot install them (not root)', async () => {
    // As another user than root (nobody, when the tests run as root), nothing is installed.
    const script = `import { ensureDebianPackages } from ${JSON.stringify(path.join(projectRoot, 'tools/debian-packages.ts'))};
      try { ensureDebianPackages([['/nonexistent/bin/initdb', 'postgresql-15'], ['/nonexistent/pgbackrest', 'pgbackrest'], ['/nonexistent/bin/pg_ctl', 'postgresql-15']], 'the restore drill'); }
      catch (error) { process.stdout.write(error.message); }`;
    const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: '/', ...asNobody });
    expect(stdout).toBe(
      "the restore drill: Debian's postgresql-15, pgbackrest missing (install them as root: apt-get install postgresql-15 pgbackrest)",
    );
  });

  it(
    'restores a backup to a point in time and the service runs on it with everything before the point and nothing after',
    { timeout: 300_000 },
    async () => {
      const key = randomBytes(32);
      const drill = startProcess(process.execPath, ['tools/restore-drill.ts', '--plain-repository', '--keep'], {
        DRILL_BALLOT_KEY: key.toString('hex'),
        PG_BIN: engines.postgres15,
        PGBACKREST: engines.pgbackrest,
      });
      // A timeout stops the drill, which stops what it started.
      onTestFinished(() => {
        if (drill.child.exitCode === null) drill.child.kill('SIGTERM');
      });
      const code = await drill.exited;
      const output = drill.output();
      const kept = /^kept (\S+) \(repository: (\S+)\)$/m.exec(output);
      if (kept) onTestFinished(() => rm(kept[1] as string, { recursive: true, force: true }));
      expect(code, output).toBe(0);
      const line = output.split('\n').find((text) => text.startsWith('drill result: '));
      expect(line, output).toBeDefined();
      const result = JSON.parse((line as string).slice('drill result: '.length)) as DrillResult;
      expect(result.failures, output).toEqual([]);
      expect(result.ok).toBe(true);
      // The key is in no file of the repository, which holds what the API wrote in the clear.
      expect(result.keyFiles, output).toBe(0);
      expect(result.markerFiles, output).toBeGreaterThan(0);
      expect(output).toMatch(/^restored [\d.]+ MB to .* in [\d.]+ s: files/m);
      expect(output).toMatch(/^recovery point: last transaction replayed committed at /m);
      expect(output).toContain('ok    pgbackrest verify passes on the repository');
      expect(output).toMatch(/drill passed\n$/);

      // The repository, searched here: the key in none of its files, in any form the service reads it in.
      const repository = kept?.[2] as string;
      const marker = /^written through the API in a post's text: (\S+)$/m.exec(output)?.[1] as string;
      expect(marker).toMatch(/^drill-marker-/);
      expect((await filesHolding(repository, [Buffer.from(marker)])).length).toBeGreaterThan(0);
      const forms = [
        key,
        Buffer.from(key.toString('hex')),
        Buffer.from(key.toString('hex').toUpperCase()),
        Buffer.from(key.toString('base64')),
        Buffer.from(key.toString('base64url')),
      ];
      expect(await filesHolding(repository, forms)).toEqual([]);

      // deploy/backup/backup-check.sh on the drill's repository: current, and stale past a limit.
      const folder = kept?.[1] as string;
      const check = (limits: Record<string, string>) =>
        run('sh', [path.join(projectRoot, 'deploy/backup/backup-check.sh')], {
          env: {
            ...process.env,
            PGBACKREST_CONFIG: path.join(folder, 'pgbackrest.conf'),
            PGBACKREST_CONFIG_INCLUDE_PATH: path.join(folder, 'conf.d'),
            PGBACKREST_STANZA: 'drill',
            ...limits,
          },
        }).then(
          ({ stdout }) => ({ code: 0, stdout }),
          (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
        );
      expect(await check({})).toEqual({ code: 0, stdout: 'backup-check: ok (stanza drill, newest backup 0 h old, newest full 0 h old)\n' });
      expect(await check({ BACKUP_MAX_AGE_HOURS: '0' })).toEqual({
        code: 1,
        stdout: 'backup-check: the newest backup is 0 h old (limit 0 h)\n',
      });
    },
  );
});
