// Users at each access level, made through the public API only.
import { expect } from 'vitest';
import { testOtpCode, testPhone, type TestApp } from './app.ts';

export interface TestUser {
  id: string;
  token: string;
  refreshToken: string;
  phone?: ReturnType<typeof testPhone>;
  username?: string;
}

let phoneCounter = 0;
let deviceCounter = 0;
let handleCounter = 0;

export function nextPhone(): ReturnType<typeof testPhone> {
  phoneCounter += 1;
  return testPhone(phoneCounter);
}

export function nextHandle(prefix = 'user'): string {
  handleCounter += 1;
  return `${prefix}_${process.pid % 1000}_${handleCounter}`;
}

function asUser(data: { accessToken: string; refreshToken: string; user: { id: string } }): TestUser {
  return { id: data.user.id, token: data.accessToken, refreshToken: data.refreshToken };
}

export async function anonymousUser(app: TestApp): Promise<TestUser> {
  deviceCounter += 1;
  const response = await app.post('/auth/anonymous/session', { deviceId: `test-device-${process.pid}-${deviceCounter}` });
  expect(response.status).toBe(200);
  return asUser(response.body.data);
}

/** Verifies a test phone, optionally as an existing signed-in user (upgrade or merge). */
export async function verifyPhone(app: TestApp, phone = nextPhone(), token?: string): Promise<TestUser> {
  const request = await app.post('/auth/otp/request', { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber });
  expect(request.status).toBe(200);
  const verify = await app.post(
    '/auth/otp/verify',
    { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber, code: testOtpCode },
    token ? { token } : {},
  );
  expect(verify.status).toBe(200);
  return { ...asUser(verify.body.data), phone };
}

export async function completeBasics(app: TestApp, user: TestUser, username = nextHandle()): Promise<TestUser> {
  const response = await app.put(
    '/users/me/onboarding/profile-basics',
    { fullName: 'Test Person', username, acceptTerms: true },
    { token: user.token },
  );
  expect(response.status).toBe(200);
  return { ...user, username };
}

/** A user at the given access level (1 anonymous, 2 profile basics, 3 phone-confirmed, 4 Hub-ready). */
export async function userAtLevel(app: TestApp, level: 1 | 2 | 3 | 4, username?: string): Promise<TestUser> {
  let user = await anonymousUser(app);
  if (level === 1) return user;
  user = await completeBasics(app, user, username);
  if (level === 2) return user;
  expect((await app.put('/users/me/onboarding/media', {}, { token: user.token })).status).toBe(200);
  const phoneUser = await verifyPhone(app, nextPhone(), user.token);
  expect(phoneUser.id).toBe(user.id);
  user = { ...user, ...phoneUser };
  if (level === 3) return user;
  expect((await app.put('/users/me/onboarding/contacts', undefined, { token: user.token })).status).toBe(200);
  return user;
}
