// Push delivery (contract 12 "What is pushed", "Message", "Failures", "Badges") against a stand-in
// FCM and token endpoint on loopback (test/helpers/fcm.ts): the worker's Pusher in this process,
// over the test database, started for each case once its state is arranged (so "at send time" is
// after the arrangement), stopped when the case has what it waits for.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type FcmConfig } from '../../../config.ts';
import { createLogger } from '../../../logger.ts';
import { createMetrics } from '../../../server/metrics.ts';
import { Pusher } from '../../../worker/tasks/push/pusher.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { startFcmStandIn, type AcceptedMessage, type FcmStandIn } from '../../helpers/fcm.ts';
import { addMember, createHub } from '../../helpers/hubs.ts';
import { insertNotification, openStream } from '../../helpers/notifications.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let fcm: FcmStandIn;
let fcmConfig: FcmConfig;
const logLines: { level: number; msg: string }[] = [];
const log = createLogger(
  'info',
  new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  }),
);
const metrics = { current: undefined as ReturnType<typeof createMetrics> | undefined };

beforeAll(async () => {
  app = await startTestApp();
  fcm = await startFcmStandIn();
  fcmConfig = loadConfig({ ...fcm.env, PUSH_RETRY_BASE_SECONDS: '0.2', PUSH_LEASE_SECONDS: '3', PUSH_CONCURRENCY: '8' }).fcm as FcmConfig;
  metrics.current = createMetrics(app.pools);
});
afterAll(async () => {
  await fcm.close();
  await app.close();
});

const newToken = () => `tok-${randomBytes(24).toString('base64url')}`;
async function device(user: TestUser, platform: 'ios' | 'android' = 'ios'): Promise<string> {
  const token = newToken();
  const response = await app.post('/users/me/push-devices', { provider: 'fcm', token, platform }, { token: user.token });
  expect(response.status).toBe(201);
  return token;
}
const to = (token: string) => fcm.accepted.filter((accepted) => accepted.message.token === token).map((accepted) => accepted.message);

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs a pusher until `done` holds (then a little longer, to catch what should not come), and stops it. */
async function pushUntil(done: () => boolean | Promise<boolean>, what: string, { settleMs = 300, pushers = 1 } = {}): Promise<void> {
  const running = Array.from({ length: pushers }, () => new Pusher(app.pools.worker, fcmConfig, log, metrics.current?.push));
  for (const pusher of running) pusher.start();
  try {
    await until(done, what);
    await new Promise((resolve) => setTimeout(resolve, settleMs));
  } finally {
    await Promise.all(running.map((pusher) => pusher.stop()));
  }
}
const deliveryStates = async (token: string) =>
  (
    await app.owner.query<{ state: string; attempts: number }>(
      `select dl.state, dl.attempts from app_private.push_deliveries dl join app.push_devices d on d.id = dl.device_id where d.token = $1 and dl.notification_id is not null`,
      [token],
    )
  ).rows;

describe('what is pushed', () => {
  it('a vote: generic text that names nobody, string-only data, the badge after it, one collapse key per post', async () => {
    const author = await userAtLevel(app, 3);
    const [ios, android] = [await device(author, 'ios'), await device(author, 'android')];
    const post = await createPost(app, author, slider);
    const voters = [await userAtLevel(app, 2, 'voter_one'), await userAtLevel(app, 2)];
    for (const voter of voters) expect((await vote(app, voter, post.id)).status).toBe(201);
    await pushUntil(() => to(ios).length === 2 && to(android).length === 2, 'two votes on two devices');
    const messages = [...to(ios), ...to(android)];
    for (const message of messages) {
      const text = JSON.stringify(message);
      for (const voter of voters) expect(text).not.toContain(voter.id);
      expect(text).not.toContain('voter_one');
      expect(text).not.toContain('Test Person');
      expect(Object.values(message.data).every((value) => typeof value === 'string')).toBe(true);
      expect(message.data).toMatchObject({ type: 'post_voted', postId: post.id, notificationId: expect.any(String) });
      expect(message.notification).toEqual({ title: 'New vote', body: 'Someone voted on your post' });
    }
    const ids = new Set(messages.map((message) => message.data.notificationId));
    expect(ids.size).toBe(2);
    const badges = to(ios)
      .map((message) => message.data.badge)
      .sort();
    // The iPhone's badge counts the unread notifications when each is sent: the second says two,
    // the first one or two (two when both votes were in before it went).
    expect([
      ['1', '2'],
      ['2', '2'],
    ]).toContainEqual(badges);
    const iosMessage = to(ios).find((message) => message.data.badge === '2') as Record<string, any>;
    expect(iosMessage.apns).toMatchObject({ headers: { 'apns-collapse-id': `post_voted:${post.id}` }, payload: { aps: { badge: 2 } } });
    expect(iosMessage.apns.payload.aps['thread-id']).toBeUndefined();
    const androidMessage = to(android).find((message) => message.data.badge === '2') as Record<string, any>;
    expect(androidMessage.android).toMatchObject({ collapse_key: `post_voted:${post.id}`, notification: { notification_count: 2 } });
    // Counted: sent by kind, and the lag from the row's commit to FCM's answer.
    const scraped = await scrape();
    expect(scraped).toMatch(/push_sent_total\{[^}]*kind="notification"[^}]*\} [1-9]/);
    expect(scraped).toMatch(/push_lag_seconds_count\{[^}]*kind="notification"[^}]*\} [1-9]/);
  });

  it('hub rows thread per hub; publication alerts are never pushed', async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner);
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    await app.patch('/notifications/read', { markAll: true }, { token: member.token }); // the invitation: a row read is not pushed
    const token = await device(member);
    await insertNotification(app, member.id, { type: 'hub_post_created', hubId: hub.id });
    await insertNotification(app, member.id, { type: 'post_shared_to_hub', hubId: hub.id });
    const role = await insertNotification(app, member.id, { type: 'hub_role_changed', hubId: hub.id });
    await pushUntil(() => to(token).length >= 1, 'the role change');
    expect(
      to(token)
        .map((message) => message.data.type)
        .filter((type) => type !== 'badge'),
    ).toEqual(['hub_role_changed']);
    expect(to(token).find((message) => message.data.type !== 'badge')).toMatchObject({
      data: { notificationId: role, hubId: hub.id },
      apns: { payload: { aps: { 'thread-id': `hub:${hub.id}` } } },
    });
  });

  it('follows the settings: nothing with push off, nothing of a type turned off', async () => {
    const [muted, picky] = [await userAtLevel(app, 1), await userAtLevel(app, 1)];
    const [mutedToken, pickyToken] = [await device(muted), await device(picky)];
    expect((await app.patch('/users/me/notification-settings', { push: { enabled: false } }, { token: muted.token })).status).toBe(200);
    expect(
      (await app.patch('/users/me/notification-settings', { push: { types: { user_followed: false } } }, { token: picky.token })).status,
    ).toBe(200);
    await insertNotification(app, muted.id, { type: 'post_commented' });
    await insertNotification(app, picky.id, { type: 'user_followed' });
    const commented = await insertNotification(app, picky.id, { type: 'post_commented' });
    await pushUntil(() => to(pickyToken).length >= 1, "the picky user's comment");
    expect(to(pickyToken).map((message) => message.data.notificationId)).toEqual([commented]);
    expect(to(mutedToken)).toEqual([]);
  });

  it("checks visibility again at send time: a hub row of a leaver is not pushed; nor is a row of an expired session's device", async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner);
    const leaver = await userAtLevel(app, 4);
    await addMember(app, hub, leaver);
    await app.patch('/notifications/read', { markAll: true }, { token: leaver.token });
    const token = await device(leaver);
    // One row planned (pending) while its recipient was still a member, one written just before the
    // removal: the first is checked when a claim takes it, the second when the planner takes it.
    const planned = await insertNotification(app, leaver.id, { type: 'hub_member_joined', hubId: hub.id });
    const plannedState = async () =>
      (await app.owner.query('select state from app_private.push_deliveries where notification_id = $1', [planned])).rows;
    // Planned once every older transaction of the cluster has ended (the range ends at the oldest running one).
    await until(
      async () => (await app.pools.worker.query('select * from app_private.plan_pushes(0, 3)'), (await plannedState()).length > 0),
      'the row planned',
    );
    expect(await plannedState()).toEqual([{ state: 'pending' }]);
    const hidden = await insertNotification(app, leaver.id, { type: 'hub_member_joined', hubId: hub.id });
    expect((await app.post(`/hubs/${hub.id}/members/${leaver.id}/remove`, undefined, { token: owner.token })).status).toBe(200);
    const expiring = await userAtLevel(app, 1);
    const expiredToken = await device(expiring);
    await insertNotification(app, expiring.id, { type: 'user_followed' });
    await app.owner.query(`update app.sessions set expires_at = now() where user_id = $1`, [expiring.id]);
    // The removal itself is a global row: that one goes.
    await pushUntil(() => to(token).length >= 1, 'the removal');
    expect(
      to(token)
        .map((message) => message.data.type)
        .filter((type) => type !== 'badge'),
    ).toEqual(['hub_member_removed']);
    expect(to(expiredToken)).toEqual([]);
    const { rows } = await app.owner.query(
      'select notification_id, state from app_private.push_deliveries where notification_id = any ($1) order by id',
      [[planned, hidden]],
    );
    expect(rows).toEqual([
      { notification_id: planned, state: 'skipped' },
      { notification_id: hidden, state: 'skipped' },
    ]);
  });
});

describe('failures', () => {
  it('deletes the device on UNREGISTERED, on INVALID_ARGUMENT naming the token and on SENDER_ID_MISMATCH, and keeps it otherwise', async () => {
    const user = await userAtLevel(app, 1);
    const cases = [
      { answer: { status: 404 as const, error: 'UNREGISTERED' as const }, deleted: true, reason: 'unregistered' },
      { answer: { status: 400 as const, error: 'INVALID_ARGUMENT' as const }, deleted: true, reason: 'invalid_token' },
      { answer: { status: 403 as const, error: 'SENDER_ID_MISMATCH' as const }, deleted: true, reason: 'sender_mismatch' },
      { answer: { status: 400 as const, error: 'INVALID_PAYLOAD' as const }, deleted: false, reason: undefined },
    ];
    const tokens: string[] = [];
    for (const { answer } of cases) {
      const token = await device(user);
      fcm.script(token, [answer]);
      tokens.push(token);
    }
    await insertNotification(app, user.id, { type: 'user_followed' });
    await pushUntil(async () => fcm.requests.filter((request) => tokens.includes(request.token)).length >= 4, 'one answer per device');
    const left = (await app.owner.query<{ token: string }>('select token from app.push_devices where user_id = $1', [user.id])).rows.map(
      (row) => row.token,
    );
    expect(left).toEqual([tokens[3]]);
    expect(await deliveryStates(tokens[3] as string)).toEqual([{ state: 'failed', attempts: 1 }]);
    const scraped = await scrape();
    for (const { reason } of cases)
      if (reason) expect(scraped).toMatch(new RegExp(`push_devices_deleted_total\\{[^}]*reason="${reason}"[^}]*\\} [1-9]`));
    expect(scraped).toMatch(/push_failed_total\{[^}]*outcome="refused"[^}]*\} [1-9]/);
  });

  it('retries 429 and 5xx honouring Retry-After, then delivers once; gives up after 5 tries', async () => {
    const user = await userAtLevel(app, 1);
    const [patient, hopeless] = [await device(user), await device(user)];
    fcm.script(patient, [
      { status: 503, retryAfter: 1 },
      { status: 429, retryAfter: 1 },
    ]);
    fcm.script(
      hopeless,
      Array.from({ length: 5 }, () => ({ status: 500 as const })),
    );
    await insertNotification(app, user.id, { type: 'post_commented' });
    await pushUntil(async () => to(patient).length === 1 && (await deliveryStates(hopeless))[0]?.state === 'given_up', 'the retries', {
      settleMs: 500,
    });
    const tries = fcm.requests.filter((request) => request.token === patient);
    expect(tries.map((request) => request.status)).toEqual([503, 429, 200]);
    expect((tries[1] as { at: number }).at - (tries[0] as { at: number }).at).toBeGreaterThanOrEqual(950);
    expect((tries[2] as { at: number }).at - (tries[1] as { at: number }).at).toBeGreaterThanOrEqual(950);
    expect(fcm.requests.filter((request) => request.token === hopeless)).toHaveLength(5);
    expect(to(hopeless)).toEqual([]);
    expect(await scrape()).toMatch(/push_failed_total\{[^}]*outcome="given_up"[^}]*\} [1-9]/);
    expect(await scrape()).toMatch(/push_retried_total\{[^}]*reason="rate_limited"[^}]*\} [1-9]/);
  });

  it('treats 401 as configuration: one log line for the outage, nothing deleted, no try used; delivers once it passes', async () => {
    const user = await userAtLevel(app, 1);
    const token = await device(user);
    fcm.rejectCredentials = true;
    const before = logLines.length;
    await insertNotification(app, user.id, { type: 'post_commented' });
    const pusher = new Pusher(app.pools.worker, { ...fcmConfig, retryBaseSeconds: 0.1 }, log);
    pusher.start();
    try {
      // Three refusals, and the last one recorded (a claim under way holds its try until its outcome is
      // written): the try is given back each time, so the count is back at 0, never 3.
      await until(
        async () =>
          fcm.requests.filter((request) => request.token === token && request.status === 401).length >= 3 &&
          (await deliveryStates(token))[0]?.attempts === 0,
        'three refused sends, each try given back',
      );
      expect((await deliveryStates(token))[0]).toMatchObject({ state: 'pending', attempts: 0 });
      expect((await app.owner.query('select 1 from app.push_devices where token = $1', [token])).rows).toHaveLength(1);
      fcm.rejectCredentials = false;
      await until(() => to(token).length === 1, 'the push once credentials work');
    } finally {
      fcm.rejectCredentials = false;
      await pusher.stop();
    }
    const outage = logLines.slice(before).filter((line) => line.level >= 50);
    expect(outage).toHaveLength(1);
    expect(outage[0]?.msg).toMatch(/401/);
    expect(logLines.slice(before).some((line) => /accepts the credentials again/.test(line.msg))).toBe(true);
  });
});

describe('exactly once', () => {
  it('across two workers at once: every (notification, device) once, with one access token each', async () => {
    const users = [await userAtLevel(app, 1), await userAtLevel(app, 1)];
    const tokens = [await device(users[0] as TestUser), await device(users[0] as TestUser), await device(users[1] as TestUser)];
    await app.owner.query(
      `insert into app.notifications (recipient_id, type) select u, 'post_commented' from unnest($1::uuid[]) u, generate_series(1, 150)`,
      [users.map((user) => user.id)],
    );
    const exchanges = fcm.tokenExchanges;
    await pushUntil(() => tokens.every((token) => to(token).length >= 150), '150 pushes per device', { pushers: 2, settleMs: 500 });
    for (const token of tokens) {
      const ids = to(token).map((message) => message.data.notificationId);
      expect(ids).toHaveLength(150);
      expect(new Set(ids).size).toBe(150);
    }
    expect(fcm.tokenExchanges - exchanges).toBeLessThanOrEqual(2);
  });
});

describe('the access token', () => {
  it('is exchanged once (JWT-bearer grant) and reused until a minute before it expires, then exchanged again', async () => {
    const user = await userAtLevel(app, 1);
    const token = await device(user);
    fcm.tokenLifetimeSeconds = 62; // reused for 2 s
    const pusher = new Pusher(app.pools.worker, fcmConfig, log);
    const exchanges = fcm.tokenExchanges;
    pusher.start();
    try {
      await insertNotification(app, user.id, { type: 'post_commented' });
      await until(() => to(token).length === 1, 'the first push');
      const firstAt = Date.now();
      await insertNotification(app, user.id, { type: 'post_commented' });
      await until(() => to(token).length === 2, 'the second push');
      // Both within the first token's life, unless this machine is very slow.
      if (Date.now() - firstAt < 1500) expect(fcm.tokenExchanges - exchanges).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2100 - (Date.now() - firstAt))));
      await insertNotification(app, user.id, { type: 'post_commented' });
      await until(() => to(token).length === 3, 'the third push');
      expect(fcm.tokenExchanges - exchanges).toBeGreaterThanOrEqual(2);
    } finally {
      fcm.tokenLifetimeSeconds = 3600;
      await pusher.stop();
    }
  });
});

describe('badges', () => {
  it('after mark-read: a data-only badge push (collapse key badge) and event: badge on the open streams', async () => {
    const user = await userAtLevel(app, 1);
    const token = await device(user, 'android');
    const stream = await openStream(app.url, user.token);
    const rows = [await insertNotification(app, user.id), await insertNotification(app, user.id)];
    await stream.waitForEvents(2);
    await pushUntil(() => to(token).length === 2, 'the two rows');
    expect((await app.patch('/notifications/read', { notificationIds: [rows[0]] }, { token: user.token })).body.data).toEqual({
      updated: 1,
    });
    const badge = (await stream.waitForEvents(3))[2];
    expect(badge).toMatchObject({ id: undefined, event: 'badge', data: { unreadCount: 1, hubUnreadCount: 0 } });
    await pushUntil(() => to(token).length === 3, 'the badge push');
    const pushed = to(token)[2] as AcceptedMessage['message'];
    expect(pushed).toEqual({
      token,
      data: { type: 'badge', badge: '1' },
      android: { collapse_key: 'badge' },
      apns: { headers: { 'apns-collapse-id': 'badge', 'apns-priority': '5' }, payload: { aps: { badge: 1 } } },
    });
    stream.close();
  });
});

async function scrape(): Promise<string> {
  const server = (metrics.current as ReturnType<typeof createMetrics>).app().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    return await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text();
  } finally {
    server.close();
  }
}
