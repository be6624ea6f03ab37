// What the service writes to its log: request lines with method, route pattern, status, time and
// ids, and never a body, token, OTP code, phone number or vote position.
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { runOnce } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger, workerLogger } from '../../../logger.ts';
import { createApp } from '../../../server/app.ts';
import { createServices } from '../../../server/services.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createClient, type Client } from '../../helpers/client.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { userAtLevel } from '../../helpers/users.ts';

let app: TestApp;
let logged: string[];
let client: Client;
let base: string;
let metricsUrl: string;
let close: () => void;
const sentCodes: string[] = [];

beforeAll(async () => {
  app = await startTestApp();
  logged = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(String(chunk));
      done();
    },
  });
  // The same application and database, logging at debug level into memory.
  const services = await createServices(app.config, createLogger('debug', sink), app.pools, app.storage, {
    otpSender: { send: async (_phone, code) => void sentCodes.push(code) },
  });
  const server = createApp(services).listen(0, '127.0.0.1');
  const metricsServer = services.metrics.app().listen(0, '127.0.0.1');
  await Promise.all([server, metricsServer].map((listening) => new Promise((resolve) => listening.once('listening', resolve))));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  metricsUrl = `http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`;
  client = createClient(base);
  close = () => {
    server.close();
    metricsServer.close();
  };
});
afterAll(async () => {
  close();
  await app.close();
});

describe('request logs', () => {
  it('carry no bodies, tokens, codes, phone numbers or positions', async () => {
    const phone = { phoneCountryCode: '+44', phoneNumber: '7700900777' };
    await client.post('/auth/otp/request', phone);
    const code = sentCodes.at(-1) as string;
    const session = await client.post('/auth/otp/verify', { ...phone, code }, { headers: { 'x-request-id': 'log-test-1' } });
    const { accessToken, refreshToken } = session.body.data;
    await client.put(
      '/users/me/onboarding/profile-basics',
      { fullName: 'Secret Name', username: 'log_probe', acceptTerms: true },
      { token: accessToken },
    );
    await client.get('/search/users?q=%2B447700900777', { token: accessToken });
    const author = await userAtLevel(app, 3);
    const post = await createPost(app, author, slider);
    // With an Idempotency-Key, sent twice: the kept answer (the tally just after the vote) is replayed, never logged.
    const key = 'log-probe-idempotency-key';
    await client.post(`/posts/${post.id}/vote`, { position: 'strong_right' }, { token: accessToken, headers: { 'Idempotency-Key': key } });
    const replay = await client.post(
      `/posts/${post.id}/vote`,
      { position: 'strong_right' },
      { token: accessToken, headers: { 'Idempotency-Key': key } },
    );
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    await client.post('/auth/session/refresh', { refreshToken });

    const text = logged.join('');
    expect(logged.length).toBeGreaterThan(5);
    const line = logged.map((l) => JSON.parse(l)).find((l) => l.requestId === 'log-test-1');
    expect(line).toMatchObject({ method: 'POST', route: '/api/v1/auth/otp/verify', status: 200, msg: 'request' });
    for (const secret of [
      '7700900777',
      accessToken,
      refreshToken,
      'strong_right',
      'Secret Name',
      'log_probe',
      key,
      'rightCount',
      'totalVotes',
    ]) {
      expect(text, secret).not.toContain(secret);
    }
    // The 4-digit code as a value of its own (digits of timestamps do not count).
    expect(text).not.toMatch(new RegExp(`(^|[^0-9.])${code}($|[^0-9])`));
  });
});

describe('request routes', () => {
  it('name every request by its route pattern, spelled as the metrics spell it: endpoints, documents, docs assets and probes', async () => {
    const paths = [
      '/healthz',
      '/readyz',
      '/api/v1/openapi.json',
      '/api/v1/docs',
      '/api/v1/docs/assets/swagger-ui.css',
      '/api/v1/users/by-username/nobody_here',
      '/internal/graphql',
      '/no/such/page?q=secret',
    ];
    const before = logged.length;
    for (const path of paths) await (await fetch(`${base}${path}`)).arrayBuffer();
    const requestLines = () =>
      logged
        .slice(before)
        .map((line) => JSON.parse(line) as { msg: string; route: string; status: number })
        .filter((line) => line.msg === 'request');
    // A line is written when its response has ended, which may be just after the client read it.
    await vi.waitFor(() => expect(requestLines()).toHaveLength(paths.length));
    const lines = requestLines();
    expect(lines.map((line) => line.route).sort()).toEqual(
      [
        '/healthz',
        '/readyz',
        '/api/v1/openapi.json',
        '/api/v1/docs',
        '/api/v1/docs/assets/{file}',
        '/api/v1/users/by-username/{username}',
        '/internal/graphql',
        '(unmatched)',
      ].sort(),
    );
    const metrics = await (await fetch(metricsUrl)).text();
    for (const line of lines) expect(metrics, line.route).toContain(`route="${line.route}",status="${line.status}"`);
    expect(logged.join('')).not.toContain('secret');
    expect(metrics).not.toContain('nobody_here');
  });
});

describe("graphile-worker's retry lines", () => {
  // Its reset of locked jobs and its cron loop fire at random times; an outage that happens to
  // cover one of them must not add a line of its own to the one outage warning.
  it('are debug lines handed to the outage log, and its other errors stay errors', () => {
    const lines: { level: number; msg: string }[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { level: number; msg: string });
        done();
      },
    });
    const retried: unknown[] = [];
    const logger = workerLogger(createLogger('debug', sink), (error) => retried.push(error));
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    logger.error("Failed to reset locked; we'll try again in 576584ms", { error: refused });
    logger.error('Cron hit an error; restarting in 1000ms (attempt 1): Error: connect ECONNREFUSED', { error: refused });
    logger.error('Error with notify listener (trying again in 1000ms): connect ECONNREFUSED', { error: refused });
    logger.error('Error occurred fetching jobs; will try again on next poll interval.', { error: refused });
    expect(retried).toEqual([refused, refused, refused]);
    expect(lines.map((line) => [line.level, line.msg.slice(0, 20)])).toEqual([
      [20, 'Failed to reset lock'],
      [20, 'Cron hit an error; r'],
      [20, 'Error with notify li'],
      [50, 'Error occurred fetch'],
    ]);
  });
});

describe("graphile-worker's job lines", () => {
  // A real run of two jobs: one that succeeds and one that fails, through the worker's logger.
  async function runTwoJobs(level: string): Promise<{ level: number; msg: string; line: string }[]> {
    const lines: { level: number; msg: string; line: string }[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean))
          lines.push({ ...(JSON.parse(line) as { level: number; msg: string }), line });
        done();
      },
    });
    const payload = {
      marker: 'payload-marker',
      ids: Array.from({ length: 20 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`),
    };
    await app.owner.query(
      `select graphile_worker.add_job('log_test_ok', $1::json), graphile_worker.add_job('log_test_fails', $1::json, max_attempts => 1)`,
      [JSON.stringify(payload)],
    );
    await runOnce({
      pgPool: app.pools.worker,
      taskList: {
        log_test_ok: async () => {},
        log_test_fails: async () => {
          throw new Error('the test task fails');
        },
      },
      logger: workerLogger(createLogger(level, sink)),
    });
    await app.owner.query(
      `select graphile_worker.permanently_fail_jobs(array_agg(id), 'test') from graphile_worker.jobs where task_identifier like 'log\\_test\\_%'`,
    );
    return lines;
  }

  it('log a finished job at debug and a failed one at error, never with its payload', async () => {
    const info = await runTwoJobs('info');
    expect(info.filter((line) => line.msg.startsWith('Completed task'))).toEqual([]);
    const failed = info.filter((line) => line.msg.startsWith('Failed task'));
    expect(failed).toHaveLength(1);
    expect(failed[0]?.level).toBe(50);
    expect(failed[0]?.line).toContain('log_test_fails');
    for (const line of info) expect(line.line).not.toContain('payload-marker');

    const debug = await runTwoJobs('debug');
    const completed = debug.filter((line) => line.msg.startsWith('Completed task'));
    expect(completed.map((line) => line.level)).toEqual([20]);
    for (const line of debug) expect(line.line).not.toContain('payload-marker');
    // Each line short enough to read: the job is its id, task and attempts.
    for (const line of [...completed, ...debug.filter((l) => l.msg.startsWith('Failed task'))])
      expect(JSON.parse(line.line).job).toMatchObject({ task: expect.any(String), attempts: 1 });
  });
});
