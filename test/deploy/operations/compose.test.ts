// docker-compose.yml and the Dockerfile run the production shape (contract 11). Docker does not run
// in the test environment, so the files are read as data: what production needs is set, the
// balancer's address is the proxy the API processes trust, every image is pinned, metrics stay
// unpublished, and the image is a production install. `docker compose config` (or the older
// `docker-compose config`) validates the file too where one of them is installed.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { requiredInProduction } from '../../../config.ts';
import { projectRoot } from '../../helpers/process.ts';

const run = promisify(execFile);

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  ports?: string[];
  command?: string[];
  volumes?: string[];
  networks?: Record<string, { ipv4_address?: string }>;
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test?: string[] };
}
const compose = parse(readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const appServices = Object.entries(services).filter(([, service]) => service.image === 'opinion-backend');
/** A compose value as the service sees it when the operator sets what `${NAME:?...}` demands. */
const resolved = (value: string) => value.replace(/\$\{(\w+):\?[^}]*\}/g, 'set-by-operator').replace(/\$\{\w+:-([^}]*)\}/g, '$1');

describe('docker-compose.yml', () => {
  it('runs migrations once, two API processes behind a balancer and one worker, all as production with every required setting', () => {
    expect(appServices.map(([name, service]) => `${name}: ${service.command?.join(' ')}`).sort()).toEqual([
      'api-1: npm run server',
      'api-2: npm run server',
      'migrate: npm run migrate',
      'worker: npm run worker',
    ]);
    for (const [name, service] of appServices) {
      const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, resolved(String(value))]));
      expect(env.NODE_ENV, name).toBe('production');
      for (const required of requiredInProduction) expect(required.present(env), `${name}: ${required.setting}`).toBe(true);
    }
  });

  it('the API processes trust the X-Forwarded-For of the balancer, which alone is published', () => {
    const balancer = services.balancer as Service;
    const address = balancer.networks?.default?.ipv4_address;
    expect(address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    for (const name of ['api-1', 'api-2']) {
      expect(services[name]?.environment?.TRUST_PROXY).toBe(address);
      expect(services[name]?.ports, name).toBeUndefined(); // only through the balancer
    }
    expect(balancer.ports).toEqual(['3000:80']);
    const caddyfile = readFileSync(path.join(projectRoot, 'deploy/Caddyfile'), 'utf8');
    expect(balancer.volumes).toContain('./deploy/Caddyfile:/etc/caddy/Caddyfile:ro');
    expect(caddyfile).toMatch(/reverse_proxy api-1:3000 api-2:3000/);
    expect(caddyfile).toMatch(/health_uri \/readyz/);
  });

  it('runs a streaming replica of the PostgreSQL, health-checked as a standby, that the API processes read from', () => {
    const primary = services.postgres as Service & { command?: string[] };
    const replica = services['postgres-replica'] as Service & {
      entrypoint?: string[];
      healthcheck?: { test?: string[] };
      depends_on?: Record<string, { condition: string }>;
    };
    // The same PostgreSQL major as the primary (a standby replays only its own major's WAL).
    expect(replica.image).toBe('postgres:18');
    expect(primary.image?.split(':').at(-1)).toBe('18');
    const script = (replica.command ?? []).join('\n');
    // First start: a copy of the primary that streams from it (-R writes primary_conninfo); then a hot standby.
    expect(script).toMatch(/pg_basebackup -h postgres -U opinion -D "\$\$PGDATA" -R -X stream/);
    expect(script).toMatch(/exec postgres -c hot_standby=on/);
    expect(replica.depends_on?.postgres?.condition).toBe('service_healthy');
    expect(replica.healthcheck?.test?.join(' ')).toMatch(/pg_is_in_recovery\(\)/);
    expect(replica.volumes?.[0]).toMatch(/^postgres-replica-data:/);
    // The primary accepts replication connections (password-checked).
    expect(primary.command).toContain('hba_file=/etc/postgresql/pg_hba.conf');
    expect(primary.volumes).toContain('./deploy/pg_hba.conf:/etc/postgresql/pg_hba.conf:ro');
    expect(readFileSync(path.join(projectRoot, 'deploy/pg_hba.conf'), 'utf8')).toMatch(/^host\s+replication\s+all\s+all\s+scram-sha-256$/m);
    for (const name of ['api-1', 'api-2']) {
      const env = services[name]?.environment ?? {};
      expect(resolved(String(env.DATABASE_REPLICA_URLS)), name).toBe('postgres://opinion:opinion@postgres-replica:5432/opinion');
      // The same owner credentials as DATABASE_URL (the API derives its login's password from them).
      expect(new URL(resolved(String(env.DATABASE_REPLICA_URLS))).username).toBe(new URL(resolved(String(env.DATABASE_URL))).username);
    }
  });

  it('puts PgBouncer in transaction mode in front of PostgreSQL for the API processes; the worker and the migration stay direct', () => {
    for (const name of ['api-1', 'api-2']) {
      const service = services[name] as Service;
      const pooler = new URL(service.environment?.DATABASE_POOLER_URL ?? 'postgres://none');
      expect(`${pooler.hostname}:${pooler.port}${pooler.pathname}`, name).toBe('pgbouncer:6432/opinion');
      expect(pooler.username, name).toBe('');
      expect(service.depends_on?.pgbouncer?.condition, name).toBe('service_healthy');
    }
    for (const name of ['worker', 'migrate']) expect(services[name]?.environment?.DATABASE_POOLER_URL, name).toBeUndefined();
    const pgbouncer = services.pgbouncer as Service;
    expect(pgbouncer.build).toBe('deploy/pgbouncer');
    expect(pgbouncer.healthcheck?.test).toContain('pg_isready');
    const ini = readFileSync(path.join(projectRoot, 'deploy/pgbouncer/pgbouncer.ini'), 'utf8');
    const setting = (name: string) => new RegExp(`^${name} = (.*)$`, 'm').exec(ini)?.[1];
    expect(setting('pool_mode')).toBe('transaction');
    expect(setting('listen_port')).toBe('6432');
    expect(setting('auth_query')).toMatch(/pg_shadow/);
    expect(setting('opinion')).toMatch(/host=postgres port=5432 dbname=opinion/);
    // Debian's PgBouncer, the version the integration tests run against, from a pinned base image.
    const dockerfile = readFileSync(path.join(projectRoot, 'deploy/pgbouncer/Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM debian:bookworm[\w.-]*$/m);
    expect(dockerfile).toMatch(/apt-get install .*pgbouncer/);
  });

  it('pins every image it pulls, and keeps the metrics on loopback and unpublished', () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.build !== undefined) continue;
      expect(service.image, name).toMatch(/^[\w./-]+:(?!latest$)[\w.-]+$/);
    }
    for (const [name, service] of appServices) {
      expect(resolved(service.environment?.METRICS_HOST ?? ''), name).toBe('127.0.0.1');
      expect(JSON.stringify(service.ports ?? []), name).not.toContain(service.environment?.METRICS_PORT ?? 'none');
    }
  });

  it('is a valid compose file for docker compose, where one is installed', async () => {
    const env = {
      ...process.env,
      JWT_SECRET: 'x',
      BALLOT_KEY: 'k1:x',
      PGBACKREST_REPO1_CIPHER_PASS: 'x',
      TWILIO_ACCOUNT_SID: 'AC1',
      TWILIO_AUTH_TOKEN: 'x',
      TWILIO_FROM: '+15005550006',
    };
    // The compose plugin (`docker compose`) or the standalone `docker-compose`, whichever runs here.
    const tools: [string, string[]][] = [
      ['docker', ['compose']],
      ['docker-compose', []],
    ];
    for (const [command, prefix] of tools) {
      const installed = await run(command, [...prefix, 'version'], { env }).then(
        () => true,
        () => false,
      );
      if (!installed) continue;
      const result = await run(command, [...prefix, 'config', '--quiet'], { cwd: projectRoot, env }).then(
        () => 'valid',
        (error: { stderr?: string }) => `invalid: ${error.stderr}`,
      );
      expect(result, command).toBe('valid');
      return;
    }
  });
});

describe('Dockerfile', () => {
  it('is a production install of the runtime files', () => {
    const dockerfile = readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:24[\w.-]*$/m);
    expect(dockerfile).toMatch(/^ENV NODE_ENV=production$/m);
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev\b/m);
    const copied = [...dockerfile.matchAll(/^COPY (.+) \S+$/gm)].flatMap(([, sources]) => (sources as string).split(' '));
    // Every TypeScript file beside main.ts is runtime code (the base layer), tool configuration aside.
    const rootFiles = readdirSync(projectRoot).filter((file) => file.endsWith('.ts') && !file.endsWith('.config.ts'));
    expect(rootFiles).toEqual(expect.arrayContaining(['config.ts', 'logger.ts', 'main.ts']));
    for (const runtime of [...rootFiles, 'db', 'migrations', 'server', 'worker', 'web']) expect(copied, runtime).toContain(runtime);
  });

  it('installs the libheif tools the worker decodes HEIC uploads with', () => {
    const dockerfile = readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^RUN apt-get update && apt-get install -y --no-install-recommends libheif-examples\b/m);
  });
});

describe('docker-compose.patroni.yml', () => {
  const patroniCompose = parse(readFileSync(path.join(projectRoot, 'docker-compose.patroni.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, Service & { build?: unknown }>;
  };
  const all = patroniCompose.services;
  const patroni = parse(readFileSync(path.join(projectRoot, 'deploy/patroni/patroni.yml'), 'utf8')) as Record<string, any>;
  const haproxy = readFileSync(path.join(projectRoot, 'deploy/haproxy/haproxy.cfg'), 'utf8');
  const nodes = Object.entries(all).filter(([, service]) => service.build === 'deploy/patroni');
  const etcds = Object.entries(all).filter(([name]) => name.startsWith('etcd-'));
  /** The settings of one `listen` section of haproxy.cfg. */
  const section = (name: string) => new RegExp(`^listen ${name}\\n((?:[ \\t]+.*\\n?)*)`, 'm').exec(haproxy)?.[1] ?? '';

  it('runs three Patroni nodes on three etcd members, each node named and addressed by its own service', () => {
    expect(nodes.map(([name]) => name)).toEqual(['pg-1', 'pg-2', 'pg-3']);
    for (const [name, service] of nodes) {
      expect(service.environment?.PATRONI_NAME).toBe(name);
      expect(service.environment?.PATRONI_RESTAPI_CONNECT_ADDRESS).toBe(`${name}:${patroni.restapi.listen.split(':')[1]}`);
      expect(service.environment?.PATRONI_POSTGRESQL_CONNECT_ADDRESS).toBe(`${name}:${patroni.postgresql.listen.split(':')[1]}`);
      expect(service.volumes?.[0]).toMatch(new RegExp(`^${name}-data:/var/lib/postgresql$`));
      expect(patroni.postgresql.data_dir.startsWith('/var/lib/postgresql/')).toBe(true);
    }
    expect(etcds.map(([name]) => name)).toEqual(['etcd-1', 'etcd-2', 'etcd-3']);
    const initial = String(etcds[0]?.[1].environment?.ETCD_INITIAL_CLUSTER);
    for (const [name, service] of etcds) {
      expect(service.environment?.ETCD_NAME).toBe(name);
      expect(initial).toContain(`${name}=${service.environment?.ETCD_INITIAL_ADVERTISE_PEER_URLS}`);
      expect(service.environment?.ETCD_ADVERTISE_CLIENT_URLS).toBe(`http://${name}:2379`);
    }
    expect(patroni.etcd3.hosts.split(',')).toEqual(etcds.map(([name]) => `${name}:2379`));
    // The image's PostgreSQL is the one patroni.yml runs.
    const dockerfile = readFileSync(path.join(projectRoot, 'deploy/patroni/Dockerfile'), 'utf8');
    const major = /^FROM postgres:(\d+)/m.exec(dockerfile)?.[1];
    expect(patroni.postgresql.bin_dir).toBe(`/usr/lib/postgresql/${major}/bin`);
    expect(dockerfile).toMatch(/apt-get install .*patroni/);
  });

  it('acknowledges a commit only once a standby has it, with production timing Patroni accepts', () => {
    const dcs = patroni.bootstrap.dcs;
    expect(dcs.synchronous_mode).toBe(true);
    expect(dcs.synchronous_mode_strict).toBe(false);
    expect([dcs.ttl, dcs.loop_wait, dcs.retry_timeout]).toEqual([30, 10, 10]);
    // Patroni's rule: loop_wait + 2 x retry_timeout <= ttl.
    expect(dcs.loop_wait + 2 * dcs.retry_timeout).toBeLessThanOrEqual(dcs.ttl);
    expect(dcs.postgresql.use_pg_rewind).toBe(true);
    expect(patroni.postgresql.basebackup).toContainEqual({ checkpoint: 'fast' });
    expect(patroni.bootstrap.post_bootstrap).toBe('/etc/patroni/post-bootstrap.sh');
  });

  it('routes the leader port by /primary and the standby port by /replica, cutting the sessions of a node marked down', () => {
    const primary = section('primary');
    const replicas = section('replicas');
    expect(primary).toMatch(/option httpchk OPTIONS \/primary/);
    expect(replicas).toMatch(/option httpchk OPTIONS \/replica/);
    for (const text of [primary, replicas]) {
      expect(text).toMatch(/on-marked-down shutdown-sessions/);
      const servers = [...text.matchAll(/^\s+server (\S+) (\S+):(\d+) .*check port (\d+)$/gm)];
      expect(servers.map(([, name, host]) => `${name} ${host}`)).toEqual(nodes.map(([name]) => `${name} ${name}`));
      for (const [, , , port, checkPort] of servers) {
        expect(port).toBe(patroni.postgresql.listen.split(':')[1]);
        expect(checkPort).toBe(patroni.restapi.listen.split(':')[1]);
      }
    }
    expect(all.haproxy?.volumes).toContain('./deploy/haproxy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro');
    expect(all.haproxy?.healthcheck?.test?.join(' ')).toMatch(/8404.*\/health/);
    expect(haproxy).toMatch(/bind \*:8404[\s\S]*monitor fail if \{ nbsrv\(primary\) lt 1 \}/);
  });

  it('points DATABASE_URL, the replicas and PgBouncer at HAProxy, with the same owner; the pooler retries a login within a second', () => {
    const port = (name: string) => new RegExp(`bind \\*:(\\d+)`).exec(section(name))?.[1];
    const apps = Object.entries(all).filter(([, service]) => service.image === 'opinion-backend');
    expect(apps.map(([name]) => name).sort()).toEqual(['api-1', 'api-2', 'migrate', 'worker']);
    for (const [name, service] of apps) {
      const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, resolved(String(value))]));
      expect(env.NODE_ENV, name).toBe('production');
      for (const required of requiredInProduction) expect(required.present(env), `${name}: ${required.setting}`).toBe(true);
      const direct = new URL(env.DATABASE_URL as string);
      expect(`${direct.hostname}:${direct.port}`, name).toBe(`haproxy:${port('primary')}`);
      const replica = new URL(env.DATABASE_REPLICA_URLS as string);
      expect(`${replica.hostname}:${replica.port}`, name).toBe(`haproxy:${port('replicas')}`);
      expect(replica.username).toBe(direct.username);
      expect(direct.username).toBe(patroni.postgresql.authentication.superuser.username);
    }
    for (const name of ['api-1', 'api-2']) expect(all[name]?.environment?.DATABASE_POOLER_URL).toBe('postgres://pgbouncer:6432/opinion');
    expect(all.pgbouncer?.environment?.POOLER_SERVER).toBe(`host=haproxy port=${port('primary')} dbname=opinion`);
    const entrypoint = readFileSync(path.join(projectRoot, 'deploy/pgbouncer/entrypoint.sh'), 'utf8');
    expect(entrypoint).toMatch(/POOLER_SERVER/);
    const ini = readFileSync(path.join(projectRoot, 'deploy/pgbouncer/pgbouncer.ini'), 'utf8');
    expect(Number(/^server_login_retry = (\d+)$/m.exec(ini)?.[1])).toBeLessThanOrEqual(2);
    for (const [name, service] of Object.entries(all)) {
      if (service.build !== undefined) continue;
      expect(service.image, name).toMatch(/^[\w./-]+:(?!latest$)[\w.-]+$/);
    }
  });
});
