// Contract 11 with a real process on a real database reached through a TCP proxy the test can cut:
// /healthz and /readyz, Prometheus metrics on METRICS_PORT only, and a database outage that answers
// 503 with one warning for the whole episode (not a stack per request), then recovers.
import net from 'node:net';
import os from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../db/free-port.ts';
import { rolePassword, roleUrl } from '../../../db/roles.ts';
import { answers, startProcess, type RunningProcess } from '../../helpers/process.ts';
import { scratchDatabase, type ScratchDatabase } from '../../helpers/worlds.ts';

/** Forwards TCP connections to PostgreSQL until cut (listener closed, every connection destroyed). */
class CuttableProxy {
  #server: net.Server | undefined;
  #sockets = new Set<net.Socket>();
  readonly port: number;
  readonly target: { host: string; port: number };
  constructor(port: number, target: { host: string; port: number }) {
    this.port = port;
    this.target = target;
  }
  async open(): Promise<void> {
    this.#server = net.createServer((socket) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const end of [socket, upstream]) {
        this.#sockets.add(end);
        end.on('error', () => {});
        end.on('close', () => this.#sockets.delete(end));
      }
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((resolve) => this.#server?.listen(this.port, '127.0.0.1', resolve));
  }
  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.#server?.close(resolve));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }
}

const adminUrl = inject('adminUrl');
let clone: ScratchDatabase;
let proxy: CuttableProxy;
let service: RunningProcess;
let base: string;
let metricsUrl: string;

beforeAll(async () => {
  clone = await scratchDatabase('opinion_ops');
  const target = new URL(adminUrl);
  proxy = new CuttableProxy(await freePort(), { host: target.hostname, port: Number(target.port || 5432) });
  await proxy.open();
  const proxied = new URL(clone.ownerUrl);
  proxied.host = `127.0.0.1:${proxy.port}`;
  const [port, metricsPort] = [await freePort(), await freePort()];
  base = `http://127.0.0.1:${port}`;
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  service = startProcess(process.execPath, ['main.ts'], {
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    DATABASE_URL: proxied.toString(),
    JWT_SECRET: 'operations-test',
    S3_ENDPOINT: inject('s3Endpoint'),
  });
  await service.waitFor(() => answers(`${base}/healthz`), 'the service');
}, 60_000);

afterAll(async () => {
  service.child.kill('SIGTERM');
  await service.exited;
  await proxy.cut().catch(() => undefined);
  await clone?.drop();
});

async function metric(name: string, labels: string): Promise<number | undefined> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('a process reaching the database through a proxy', () => {
  it('derives the same login-role passwords as every other process (roles are cluster-wide)', async () => {
    const direct = clone.ownerUrl;
    const proxied = new URL(direct);
    proxied.host = `127.0.0.1:${proxy.port}`;
    for (const role of ['authenticator', 'app_worker'] as const)
      expect(rolePassword(proxied.toString(), role)).toBe(rolePassword(direct, role));
    // This file's process migrated through the proxy at startup; a direct login still works.
    const client = new pg.Client({ connectionString: roleUrl(direct, 'authenticator') });
    await client.connect();
    await client.end();
  });
});

describe('health, readiness and metrics', () => {
  it('answers /healthz and /readyz outside /api/v1 without a token', async () => {
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });

  it('serves Prometheus metrics on METRICS_PORT, on loopback only (METRICS_HOST), not on the public port', async () => {
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    // The machine's other addresses reach the API but not the metrics.
    const external = Object.values(os.networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal);
    if (external) {
      expect(await answers(`http://${external.address}:${new URL(base).port}/healthz`)).toBe(true);
      expect(await answers(`http://${external.address}:${new URL(metricsUrl).port}/metrics`)).toBe(false);
    }
    for (let i = 0; i < 3; i += 1) expect((await fetch(`${base}/api/v1/users/by-username/nobody_here`)).status).toBe(404);
    const requests = await metric('http_requests_total', 'route="/api/v1/users/by-username/{username}",status="404"');
    expect(requests).toBe(3);
    expect(await metric('http_request_duration_seconds_count', 'route="/api/v1/users/by-username/{username}",status="404"')).toBe(3);
    expect(await metric('db_pool_connections', 'pool="api"')).toBeGreaterThan(0);
    expect(await metric('db_pool_waiting', 'pool="worker"')).toBe(0);
    expect(await metric('sse_open_streams', '')).toBe(0);
    // This process is the only one on its database: it leads the dispatcher, which ticks every 50 ms.
    await service.waitFor(async () => (await metric('notification_dispatcher_lag_seconds', '')) !== undefined, 'the dispatcher lag');
    expect(await metric('notification_dispatcher_lag_seconds', '')).toBeLessThan(5);
    const text = await (await fetch(metricsUrl)).text();
    expect(text).toContain('# TYPE worker_jobs_total counter');
    expect(text).toContain('process_cpu_seconds_total');
  });
});

describe('a database outage', () => {
  it(
    'answers 503, and logs one warning and one recovery line for each component (API, notification hub, worker)',
    { timeout: 60_000 },
    async () => {
      type Line = {
        level: number;
        msg: string;
        component?: string;
        refusedRequests?: number;
        reconnectAttempts?: number;
        failures?: number;
      };
      const lines = () =>
        service
          .output()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Line);
      const before = lines().length;
      const during = () => lines().slice(before);
      const components = ['api', 'notification-hub', 'worker'];
      await proxy.cut();
      // Each read is retried for its bound (server/http/failover-retry.ts) before it answers 503: at once.
      const statuses = await Promise.all(
        Array.from({ length: 20 }, async () => (await fetch(`${base}/api/v1/users/by-username/nobody_here`)).status),
      );
      expect(statuses).toEqual(Array(20).fill(503));
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      // The worker polls for jobs every second: once it has noticed, the hub has retried several times.
      await service.waitFor(
        () => components.every((component) => during().some((line) => line.component === component && line.level === 40)),
        'a warning from each component',
      );
      // The outage lasts 3 s more: each component keeps failing meanwhile (the hub reconnects every
      // second at most, the worker polls every second), and none of that reaches the log.
      await new Promise((resolve) => setTimeout(resolve, 3000));

      await proxy.open();
      await service.waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 'readiness after the outage');
      expect((await fetch(`${base}/api/v1/users/by-username/nobody_here`)).status).toBe(404);
      const recovered = () => during().filter((line) => line.msg === 'database available again');
      await service.waitFor(
        () => components.every((component) => recovered().some((line) => line.component === component)),
        'a recovery line from each component',
      );

      const problems = during().filter((line) => line.level >= 40);
      expect(problems.map((line) => `${line.component}: ${line.msg}`).sort()).toEqual([
        'api: database unavailable: answering 503 until it is back',
        'notification-hub: database unavailable: live notifications wait until it is back (streams stay open)',
        'worker: database unavailable: jobs wait until it is back',
      ]);
      expect(
        recovered()
          .map((line) => line.component)
          .sort(),
      ).toEqual(components);
      expect(recovered().find((line) => line.component === 'api')?.refusedRequests).toBeGreaterThanOrEqual(20);
      expect(recovered().find((line) => line.component === 'notification-hub')?.reconnectAttempts).toBeGreaterThan(1);
      expect(recovered().find((line) => line.component === 'worker')?.failures).toBeGreaterThan(1);
      expect(JSON.stringify(during())).not.toContain('stack'); // no stack traces, at any level
    },
  );
});
