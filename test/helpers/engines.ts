// The engines an operator runs beside the service, which the integration tests start on free ports:
// PgBouncer, pgBackRest, PostgreSQL 15's server binaries (streaming replicas, pg_basebackup), and the
// failover cluster's Patroni, etcd and HAProxy (test/helpers/patroni.ts), from Debian's packages;
// and the tools the image tests use: libheif's (the service decodes HEIC with heif-convert, the
// tests make HEIC files with heif-enc) and exiftool (writes the metadata a phone photo carries, and
// reads what a variant carries). The test run installs what is missing (as root, with apt-get:
// tools/debian-packages.ts, which the restore drill uses too), so `npm test` on a fresh machine sets
// everything up; elsewhere it stops with one line naming the packages.
import { ensureDebianPackages } from '../../tools/debian-packages.ts';

export const engines = {
  pgbouncer: '/usr/sbin/pgbouncer',
  pgbackrest: '/usr/bin/pgbackrest',
  postgres15: '/usr/lib/postgresql/15/bin',
  heifEnc: '/usr/bin/heif-enc',
  exiftool: '/usr/bin/exiftool',
  patroni: '/usr/bin/patroni',
  etcd: '/usr/bin/etcd',
  haproxy: '/usr/sbin/haproxy',
} as const;

const packages: [path: string, pkg: string][] = [
  [engines.pgbouncer, 'pgbouncer'],
  [engines.pgbackrest, 'pgbackrest'],
  [`${engines.postgres15}/pg_basebackup`, 'postgresql-15'],
  ['/usr/bin/heif-convert', 'libheif-examples'],
  [engines.heifEnc, 'libheif-examples'],
  [engines.exiftool, 'libimage-exiftool-perl'],
  [engines.patroni, 'patroni'],
  [engines.etcd, 'etcd-server'],
  [engines.haproxy, 'haproxy'],
];

export function ensureEngines(): void {
  ensureDebianPackages(packages, 'the tests');
}
