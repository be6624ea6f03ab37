// docker-compose.yml and the Dockerfile run the production shape (contract 11). Docker does not run
// in the test environment, so the files are read as data: what production needs is set, the
// balancer's address is the proxy the API processes trust, every image is pinned, metrics stay
// unpublished, and the image is a production install. `docker compose config` (or the older
// `docker-compose config`) validates the file too where one of them is installed.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { requiredInProduction } from '../../config.ts';
import { projectRoot } from '../helpers/process.ts';

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
const compose = parse(readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, Service> };
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
    const replica = services['postgres-replica'] as Service & { entrypoint?: string[]; healthcheck?: { test?: string[] }; depends_on?: Record<string, { condition: string }> };
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
    const env = { ...process.env, JWT_SECRET: 'x', BALLOT_KEY: 'k1:x', PGBACKREST_REPO1_CIPHER_PASS: 'x', TWILIO_ACCOUNT_SID: 'AC1', TWILIO_AUTH_TOKEN: 'x', TWILIO_FROM: '+15005550006' };
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
    for (const runtime of ['config.ts', 'logger.ts', 'main.ts', 'db', 'migrations', 'server', 'worker', 'web']) expect(copied, runtime).toContain(runtime);
  });

  it('installs the libheif tools the worker decodes HEIC uploads with', () => {
    const dockerfile = readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^RUN apt-get update && apt-get install -y --no-install-recommends libheif-examples\b/m);
  });
});
