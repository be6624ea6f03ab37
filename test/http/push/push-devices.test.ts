// Push devices and notification settings over HTTP (contract 12 "Devices", "Settings"): idempotent
// registration per token, moves between sessions and accounts, the token never shown, devices going
// with their session however it ends, race-safe registration, and settings per type for every type
// of the enum.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { userAtLevel, verifyPhone, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const newToken = () => `fcm-${randomBytes(48).toString('base64url')}:APA91b${randomBytes(40).toString('hex')}`;
const register = (user: TestUser, token: string, extra: Record<string, unknown> = {}) =>
  app.post('/users/me/push-devices', { provider: 'fcm', token, platform: 'android', ...extra }, { token: user.token });
const devices = async (user: TestUser) =>
  (await app.get('/users/me/push-devices', { token: user.token })).body.data.items as { id: string }[];
const sessionOf = (user: TestUser): string => JSON.parse(Buffer.from(user.token.split('.')[1] as string, 'base64url').toString()).sid;
const storedDevice = async (token: string) =>
  (
    await app.owner.query<{ id: string; user_id: string; session_id: string; locale: string | null }>(
      'select id, user_id, session_id, locale from app.push_devices where token = $1',
      [token],
    )
  ).rows;

describe('POST /users/me/push-devices', () => {
  it('registers a token (201), answers the same record for it again (200, lastSeenAt refreshed), and never shows the token', async () => {
    const user = await userAtLevel(app, 1);
    const token = newToken();
    const first = await register(user, token, { platform: 'ios', locale: 'en-GB' });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data).toEqual({
      id: expect.any(String),
      provider: 'fcm',
      platform: 'ios',
      tokenSuffix: token.slice(-8),
      createdAt: expect.any(String),
      lastSeenAt: first.body.data.createdAt,
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await register(user, token, { platform: 'ios', locale: 'fr' });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: first.body.data.id, createdAt: first.body.data.createdAt });
    expect(Date.parse(again.body.data.lastSeenAt)).toBeGreaterThan(Date.parse(first.body.data.lastSeenAt));
    expect((await storedDevice(token))[0]?.locale).toBe('fr');
    const listed = await app.get('/users/me/push-devices', { token: user.token });
    expect(listed.body.data.items).toEqual([again.body.data]);
    for (const text of [first.text, again.text, listed.text]) expect(text).not.toContain(token.slice(0, 40));
  });

  it('moves a token to the session that registers it last: the same record within an account, a new one across accounts', async () => {
    const phone = await verifyPhone(app);
    const otherSession = await verifyPhone(app, phone.phone);
    expect(otherSession.id).toBe(phone.id);
    const token = newToken();
    const first = await register(phone, token);
    expect((await storedDevice(token))[0]?.session_id).toBe(sessionOf(phone));
    const moved = await register(otherSession, token);
    expect(moved.status).toBe(200);
    expect(moved.body.data.id).toBe(first.body.data.id);
    expect(await storedDevice(token)).toEqual([expect.objectContaining({ id: first.body.data.id, session_id: sessionOf(otherSession) })]);

    const someoneElse = await userAtLevel(app, 1);
    const taken = await register(someoneElse, token);
    expect(taken.status).toBe(201);
    expect(taken.body.data.id).not.toBe(first.body.data.id);
    expect(await storedDevice(token)).toEqual([expect.objectContaining({ id: taken.body.data.id, user_id: someoneElse.id })]);
    expect(await devices(phone)).toEqual([]);
  });

  it('never fails under concurrent registrations of one token, from one account or several', async () => {
    const users = [await userAtLevel(app, 1), await userAtLevel(app, 1), await userAtLevel(app, 1)];
    for (const sameAccount of [true, false]) {
      const token = newToken();
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => register(sameAccount ? (users[0] as TestUser) : (users[i % 3] as TestUser), token)),
      );
      expect(answers.map((answer) => answer.status).filter((status) => status !== 200 && status !== 201)).toEqual([]);
      expect(await storedDevice(token)).toHaveLength(1);
      if (sameAccount) expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    }
  });

  it('keeps at most 10 devices per user, forgetting the one seen longest ago', async () => {
    const user = await userAtLevel(app, 1);
    const tokens = Array.from({ length: 11 }, newToken);
    for (const token of tokens) expect((await register(user, token)).status).toBe(201);
    expect(await devices(user)).toHaveLength(10);
    expect(await storedDevice(tokens[0] as string)).toEqual([]);
  });

  it('refuses bad bodies with 422 and writes nothing', async () => {
    const user = await userAtLevel(app, 1);
    for (const [body, field] of [
      [{ provider: 'apns', token: 'abc', platform: 'ios' }, 'provider'],
      [{ provider: 'fcm', token: '', platform: 'ios' }, 'token'],
      [{ provider: 'fcm', token: 'x'.repeat(4097), platform: 'ios' }, 'token'],
      [{ provider: 'fcm', token: 'has space', platform: 'ios' }, 'token'],
      [{ provider: 'fcm', token: 'abc', platform: 'web' }, 'platform'],
      [{ provider: 'fcm', token: 'abc', platform: 'ios', locale: 'not a locale' }, 'locale'],
      [{ provider: 'fcm', token: 'abc', platform: 'ios', extra: 1 }, 'extra'],
    ] as const) {
      const response = await app.post('/users/me/push-devices', body, { token: user.token });
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error.details.fields).toHaveProperty(field);
    }
    expect(await devices(user)).toEqual([]);
    expect((await app.post('/users/me/push-devices', { provider: 'fcm', token: 'abc', platform: 'ios' })).status).toBe(401);
  });

  it('accepts a token of 4,096 characters', async () => {
    const user = await userAtLevel(app, 1);
    const token = 'a'.repeat(4088) + randomBytes(4).toString('hex');
    expect((await register(user, token)).status).toBe(201);
    expect((await register(user, token)).status).toBe(200);
  });
});

describe('DELETE /users/me/push-devices/{deviceId}', () => {
  it("deletes the caller's own device, and answers 404 for another user's, an unknown or a malformed id", async () => {
    const [user, other] = [await userAtLevel(app, 1), await userAtLevel(app, 1)];
    const mine = (await register(user, newToken())).body.data.id;
    const theirs = (await register(other, newToken())).body.data.id;
    for (const id of [theirs, randomUUID(), 'not-an-id']) {
      const response = await app.delete(`/users/me/push-devices/${id}`, { token: user.token });
      expect(response.status, id).toBe(404);
      expect(response.body.error.code).toBe('PUSH_DEVICE_NOT_FOUND');
    }
    expect((await app.delete(`/users/me/push-devices/${mine}`, { token: user.token })).body.data).toEqual({ deleted: true });
    expect((await app.delete(`/users/me/push-devices/${mine}`, { token: user.token })).status).toBe(404);
    expect(await devices(other)).toHaveLength(1);
  });
});

describe('devices go with their session', () => {
  it('on logout, on logout from all devices, on refresh-token reuse, and on expiry', async () => {
    const phone = await verifyPhone(app);
    const sessions = [phone, await verifyPhone(app, phone.phone), await verifyPhone(app, phone.phone), await verifyPhone(app, phone.phone)];
    const tokens = sessions.map(() => newToken());
    for (const [i, session] of sessions.entries()) expect((await register(session, tokens[i] as string)).status).toBe(201);
    const remaining = async () =>
      (await app.owner.query<{ token: string }>('select token from app.push_devices where user_id = $1', [phone.id])).rows
        .map((row) => row.token)
        .sort();

    // Logout of session 0.
    expect(
      (
        await app.post(
          '/auth/logout',
          { refreshToken: sessions[0]?.refreshToken, logoutFromAllDevices: false },
          { token: sessions[0]?.token },
        )
      ).status,
    ).toBe(200);
    expect(await remaining()).toEqual([tokens[1], tokens[2], tokens[3]].sort());

    // Refresh-token reuse revokes session 1.
    const s1 = sessions[1] as TestUser;
    const rotated = await app.post('/auth/session/refresh', { refreshToken: s1.refreshToken });
    expect(rotated.status).toBe(200);
    await app.owner.query(
      `update app_private.refresh_tokens set rotated_at = now() - interval '1 hour' where session_id = $1 and rotated_at is not null`,
      [sessionOf(s1)],
    );
    expect((await app.post('/auth/session/refresh', { refreshToken: s1.refreshToken })).status).toBe(401);
    expect(await remaining()).toEqual([tokens[2], tokens[3]].sort());

    // Session 2 expires: not listed (nor pushed to) at once.
    await app.owner.query(`update app.sessions set expires_at = now() - interval '1 second' where id = $1`, [
      sessionOf(sessions[2] as TestUser),
    ]);
    const listed = await app.get('/users/me/push-devices', { token: sessions[3]?.token });
    expect(listed.body.data.items.map((item: { tokenSuffix: string }) => item.tokenSuffix)).toEqual([(tokens[3] as string).slice(-8)]);

    // Logout from all devices ends the rest (the expired session is revoked too).
    expect(
      (
        await app.post(
          '/auth/logout',
          { refreshToken: sessions[3]?.refreshToken, logoutFromAllDevices: true },
          { token: sessions[3]?.token },
        )
      ).status,
    ).toBe(200);
    expect(await remaining()).toEqual([]);
  });

  it('holds in the database, whatever revokes the session', async () => {
    const user = await userAtLevel(app, 1);
    await register(user, newToken());
    await app.owner.query('update app.sessions set revoked_at = now() where id = $1', [sessionOf(user)]);
    expect((await app.owner.query('select count(*)::int as n from app.push_devices where user_id = $1', [user.id])).rows[0].n).toBe(0);
  });
});

describe('the token in the database', () => {
  it('has no column grant for any API role, and GraphQL cannot select it', async () => {
    const { rows } = await app.owner.query(
      `select r, c from unnest(array['app_anonymous', 'app_user', 'app_admin', 'authenticator', 'app_worker']) r,
              unnest(array['token', 'token_hash', 'session_id', 'user_id', 'locale']) c
       where has_column_privilege(r, 'app.push_devices', c, 'select')`,
    );
    expect(rows).toEqual([]);
  });
});

describe('GET/PATCH /users/me/notification-settings', () => {
  it('has every type of the enum, all on by default, and changes only what a PATCH names', async () => {
    const user = await userAtLevel(app, 1);
    const enumTypes = (await app.owner.query<{ t: string }>('select unnest(enum_range(null::app.notification_type))::text as t')).rows.map(
      (row) => row.t,
    );
    const initial = await app.get('/users/me/notification-settings', { token: user.token });
    expect(initial.body.data).toEqual({ push: { enabled: true, types: Object.fromEntries(enumTypes.map((type) => [type, true])) } });

    const off = await app.patch(
      '/users/me/notification-settings',
      { push: { types: { post_voted: false, user_followed: false } } },
      { token: user.token },
    );
    expect(off.status).toBe(200);
    expect(off.body.data.push).toMatchObject({ enabled: true, types: { post_voted: false, user_followed: false, post_commented: true } });
    const master = await app.patch(
      '/users/me/notification-settings',
      { push: { enabled: false, types: { user_followed: true } } },
      { token: user.token },
    );
    expect(master.body.data.push).toMatchObject({ enabled: false, types: { post_voted: false, user_followed: true } });
    expect((await app.get('/users/me/notification-settings', { token: user.token })).body.data).toEqual(master.body.data);
    expect((await app.patch('/users/me/notification-settings', {}, { token: user.token })).body.data).toEqual(master.body.data);
  });

  it('refuses unknown types and fields with 422', async () => {
    const user = await userAtLevel(app, 1);
    for (const body of [
      { push: { types: { not_a_type: false } } },
      { push: { enabled: 'no' } },
      { email: true },
      { push: { types: { post_voted: 1 } } },
    ]) {
      expect((await app.patch('/users/me/notification-settings', body, { token: user.token })).status, JSON.stringify(body)).toBe(422);
    }
  });

  it('never fails under concurrent changes', async () => {
    const user = await userAtLevel(app, 1);
    const answers = await Promise.all(
      ['post_voted', 'post_commented', 'user_followed', 'hub_role_changed'].map((type) =>
        app.patch('/users/me/notification-settings', { push: { types: { [type]: false } } }, { token: user.token }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
  });
});
