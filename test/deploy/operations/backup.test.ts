// The backup shape of docker-compose.yml and deploy/backup (docs/backups.md), read as data where
// Docker does not run: PostgreSQL archives every WAL segment with pgBackRest, a backup container
// runs the schedule on the same data directory, socket and repository, the repository is encrypted
// with a passphrase from the environment, and BALLOT_KEY reaches neither container. The shipped
// configuration is read by the real pgBackRest (an unknown or misplaced option is a warning there);
// the restore drill (test/process/operations/restore-drill.test.ts) runs a copy of it end to end.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parse } from 'yaml';
import { projectRoot } from '../../helpers/process.ts';

const run = promisify(execFile);

interface Service {
  image?: string;
  healthcheck?: { test?: string[] };
  build?: unknown;
  user?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
}
const services = (
  parse(readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, Service> }
).services;
const postgres = services.postgres as Service;
const backup = services.backup as Service;
const configText = readFileSync(path.join(projectRoot, 'deploy/backup/pgbackrest.conf'), 'utf8');
/** The options of one section of the shipped pgbackrest.conf. */
function section(name: string): Record<string, string> {
  const options: Record<string, string> = {};
  let current = '';
  for (const line of configText.split('\n').map((text) => text.trim())) {
    if (line.startsWith('[')) current = line.slice(1, -1);
    else if (current === name && line && !line.startsWith('#')) {
      const [key, ...value] = line.split('=');
      options[key as string] = value.join('=');
    }
  }
  return options;
}
const mountOf = (service: Service, volume: string) => service.volumes?.find((entry) => entry.startsWith(`${volume}:`))?.split(':')[1];

describe('backups in docker-compose.yml', () => {
  it('archives every WAL segment with pgBackRest, at least once a minute while anything writes', () => {
    const settings = Object.fromEntries(
      (postgres.command ?? [])
        .filter((_, index, all) => all[index - 1] === '-c')
        .map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]),
    );
    expect(postgres.command?.[0]).toBe('postgres');
    expect(settings).toMatchObject({
      wal_level: 'replica',
      archive_mode: 'on',
      archive_command: 'pgbackrest --stanza=main archive-push %p',
      archive_timeout: '60',
    });
    expect(postgres.build).toBe('./deploy/backup');
    expect(backup.image).toBe(postgres.image);
  });

  it('runs the schedule in a backup container that sees the data directory, the socket and the repository where the postgres container does', () => {
    expect(backup.command).toEqual(['backup-schedule']);
    expect(backup.user).toBe('postgres');
    for (const volume of ['postgres-data', 'postgres-socket', 'pgbackrest-repo']) {
      expect(mountOf(backup, volume), volume).toBeDefined();
      expect(mountOf(backup, volume), volume).toBe(mountOf(postgres, volume));
    }
    const stanza = section('main');
    // The PostgreSQL 18 image keeps its cluster in 18/docker under the volume's mount.
    expect(stanza['pg1-path']).toBe(`${mountOf(postgres, 'postgres-data')}/18/docker`);
    expect(stanza['pg1-socket-path']).toBe(mountOf(postgres, 'postgres-socket'));
    expect(section('global')['repo1-path']).toBe(mountOf(postgres, 'pgbackrest-repo'));
    expect(section('global')['spool-path']).toBe(mountOf(postgres, 'pgbackrest-spool'));
  });

  it('encrypts the repository with a passphrase from the environment, keeps BALLOT_KEY out of both containers and the repository out of the app', () => {
    expect(section('global')).toMatchObject({
      'repo1-cipher-type': 'aes-256-cbc',
      'repo1-retention-full-type': 'count',
      'repo1-retention-full': '2',
    });
    expect(configText).not.toMatch(/^\s*repo1-cipher-pass/m);
    for (const service of [postgres, backup]) {
      expect(service.environment?.PGBACKREST_REPO1_CIPHER_PASS).toMatch(/^\$\{PGBACKREST_REPO1_CIPHER_PASS:\?/);
      expect(JSON.stringify(service)).not.toContain('BALLOT_KEY');
    }
    for (const [name, service] of Object.entries(services)) {
      if (name === 'postgres' || name === 'backup') continue;
      expect(mountOf(service, 'pgbackrest-repo'), name).toBeUndefined();
      expect(service.environment?.PGBACKREST_REPO1_CIPHER_PASS, name).toBeUndefined();
    }
  });

  it('marks the backup container unhealthy through backup-check, which the image carries', () => {
    expect(backup.healthcheck?.test).toEqual(['CMD', 'backup-check']);
    const dockerfile = readFileSync(path.join(projectRoot, 'deploy/backup/Dockerfile'), 'utf8');
    expect(dockerfile).toContain('COPY backup-check.sh /usr/local/bin/backup-check');
    expect(dockerfile).toContain('COPY backup-schedule.sh /usr/local/bin/backup-schedule');
  });

  it('takes a full backup on the full weekday and a differential on the others', async () => {
    const script = path.join(projectRoot, 'deploy/backup/backup-schedule.sh');
    await run('sh', ['-n', script]);
    const typeOn = async (weekday: number, env: Record<string, string> = {}) =>
      (await run('sh', [script, '--type-for-weekday', String(weekday)], { env: { ...process.env, ...env } })).stdout.trim();
    expect(await Promise.all([1, 2, 3, 4, 5, 6, 7].map((day) => typeOn(day)))).toEqual([
      'diff',
      'diff',
      'diff',
      'diff',
      'diff',
      'diff',
      'full',
    ]);
    expect(await typeOn(3, { BACKUP_FULL_WEEKDAY: '3' })).toBe('full');
  });

  it('is a configuration pgBackRest reads without a warning', async () => {
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-pgbackrest-'));
    onTestFinished(() => rm(scratch, { recursive: true, force: true }));
    const { stdout, stderr } = await run(
      'pgbackrest',
      [
        `--config=${path.join(projectRoot, 'deploy/backup/pgbackrest.conf')}`,
        `--config-include-path=${scratch}`,
        `--repo1-path=${scratch}`,
        `--lock-path=${scratch}`,
        '--log-level-file=off',
        '--stanza=main',
        'info',
      ],
      { env: { ...process.env, PGBACKREST_REPO1_CIPHER_PASS: 'from-the-environment' } },
    );
    expect(stderr).toBe('');
    expect(stdout).not.toMatch(/WARN|ERROR/);
    expect(stdout).toContain('stanza: main');
  });
});
