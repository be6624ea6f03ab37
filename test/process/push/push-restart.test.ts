// Push delivery across a real worker process killed with kill -9 (contract 12 "Failures": exactly
// once per notification and device, whatever retries, crashes and restarts happen): a worker started
// without a service account says push is off in one line; one with the stand-in FCM is killed in the
// middle of sending and while a delivery waits for its Retry-After; a new one finishes the work.
// Nothing is lost; a message recorded as sent is never sent again; one is sent twice only if FCM
// accepted it and the process died before its outcome was recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { startFcmStandIn, type FcmStandIn } from '../../helpers/fcm.ts';
import { killAll, type RunningProcess } from '../../helpers/process.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { processOnApp } from '../../helpers/worlds.ts';

const concurrency = 4;
const rows = 200;
let app: TestApp;
let fcm: FcmStandIn;
let user: TestUser;
const workers: RunningProcess[] = [];

beforeAll(async () => {
  app = await startTestApp();
  fcm = await startFcmStandIn();
  user = await userAtLevel(app, 1);
}, 60_000);

afterAll(async () => {
  await killAll(workers);
  await fcm.close();
  await app.close();
});

async function startWorkerProcess(env: Record<string, string>): Promise<RunningProcess> {
  const worker = await processOnApp(app, 'worker', env);
  workers.push(worker);
  await worker.waitFor(() => worker.output().includes('worker running'), 'the worker process');
  return worker;
}
const pushEnv = () => ({ ...fcm.env, PUSH_CONCURRENCY: String(concurrency), PUSH_LEASE_SECONDS: '2', PUSH_RETRY_BASE_SECONDS: '0.2' });
const kill9 = (worker: RunningProcess) => {
  process.kill(-(worker.child.pid as number), 'SIGKILL');
  return worker.exited;
};
async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
async function registerDevice(token: string): Promise<void> {
  expect((await app.post('/users/me/push-devices', { provider: 'fcm', token, platform: 'android' }, { token: user.token })).status).toBe(
    201,
  );
}

describe('a worker process', () => {
  it('without a service account says push is off, in one line', async () => {
    const worker = await startWorkerProcess({});
    expect(
      worker
        .output()
        .split('\n')
        .filter((line) => line.includes('push: off')),
    ).toHaveLength(1);
    await kill9(worker);
  }, 60_000);

  it('killed with kill -9 in the middle of sending: a new one sends the rest, nothing lost, nothing twice but what FCM accepted and the dead worker had not recorded', async () => {
    await registerDevice('restart-bulk');
    fcm.delayMs = 15;
    const first = await startWorkerProcess(pushEnv());
    expect(first.output()).toContain('push: on');
    await app.owner.query(`insert into app.notifications (recipient_id, type) select $1, 'post_commented' from generate_series(1, $2)`, [
      user.id,
      rows,
    ]);
    const bulk = () => fcm.accepted.filter((accepted) => accepted.message.token === 'restart-bulk');
    await until(() => bulk().length >= rows / 4, 'a quarter of the pushes');
    await kill9(first);
    // Answers already on their way still land in the stand-in's record.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const acceptedAtKill = bulk().length;
    expect(acceptedAtKill).toBeLessThan(rows);
    const { rows: recorded } = await app.owner.query<{ id: string }>(
      `select dl.notification_id as id from app_private.push_deliveries dl join app.push_devices d on d.id = dl.device_id
       where d.token = 'restart-bulk' and dl.state = 'sent'`,
    );
    const sentAtKill = new Set(recorded.map((row) => row.id));
    fcm.delayMs = 0;
    const second = await startWorkerProcess(pushEnv());
    await until(() => new Set(bulk().map((accepted) => accepted.message.data.notificationId)).size === rows, 'every row pushed');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const ids = bulk().map((accepted) => accepted.message.data.notificationId as string);
    expect(new Set(ids).size).toBe(rows);
    // Sent twice: only deliveries FCM accepted that the dead worker had not recorded yet.
    const twice = ids.filter((id, index) => ids.indexOf(id) !== index);
    expect(twice.filter((id) => sentAtKill.has(id))).toEqual([]);
    expect(twice.length).toBeLessThanOrEqual(acceptedAtKill - sentAtKill.size);
    await kill9(second);
  }, 90_000);

  it('killed while a delivery waits for its Retry-After: the next one retries it and it arrives once', async () => {
    await registerDevice('restart-retry');
    fcm.script('restart-retry', [{ status: 503, retryAfter: 3 }]);
    const first = await startWorkerProcess(pushEnv());
    await app.owner.query(`insert into app.notifications (recipient_id, type) values ($1, 'user_followed')`, [user.id]);
    const tries = () => fcm.requests.filter((request) => request.token === 'restart-retry');
    await until(() => tries().length === 1, 'the 503');
    // Killed once the worker recorded the wait (Retry-After, 3 s from the answer; the claim's lease
    // was 2 s): killed before that, its claim would simply run out after the lease.
    const answeredAt = (tries()[0] as { at: number }).at;
    await until(
      async () =>
        (
          await app.owner.query(
            `select 1 from app_private.push_deliveries dl join app.push_devices d on d.id = dl.device_id
           where d.token = 'restart-retry' and dl.next_attempt_at >= to_timestamp($1 / 1000.0) + interval '2.9 seconds'`,
            [answeredAt],
          )
        ).rows.length === 1,
      'the retry recorded',
    );
    await kill9(first);
    const second = await startWorkerProcess(pushEnv());
    await until(() => fcm.accepted.some((accepted) => accepted.message.token === 'restart-retry'), 'the retry');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(tries().map((request) => request.status)).toEqual([503, 200]);
    expect((tries()[1] as { at: number }).at - (tries()[0] as { at: number }).at).toBeGreaterThanOrEqual(2900);
    await kill9(second);
  }, 90_000);
});
