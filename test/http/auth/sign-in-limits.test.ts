// Sign-in limits of contract section 3, kept in the database: 10 codes per phone in any 24 hours,
// 30 OTP requests and 30 anonymous-session requests per client address in any 5 minutes, the
// client address taken from X-Forwarded-For only behind a proxy listed in TRUST_PROXY.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../logger.ts';
import { createServer } from '../../../server/app.ts';
import { createServices } from '../../../server/services.ts';
import { startTestApp, testOtpCode, testPhone, type TestApp } from '../../helpers/app.ts';
import { createClient, nextClientAddress, type ApiResponse } from '../../helpers/client.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

let deviceCounter = 0;
const anonymous = (client: Pick<TestApp, 'post'>, address: string) => {
  deviceCounter += 1;
  return client.post('/auth/anonymous/session', { deviceId: `limit-device-${deviceCounter}` }, { headers: { 'x-forwarded-for': address } });
};
const otpRequest = (n: number, address: string) => {
  const phone = testPhone(n);
  return app.post(
    '/auth/otp/request',
    { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber },
    { headers: { 'x-forwarded-for': address } },
  );
};

function expectRateLimited(response: ApiResponse, atMostSeconds: number): number {
  expect(response.status, JSON.stringify(response.body)).toBe(429);
  expect(response.body.error.code).toBe('RATE_LIMITED');
  const seconds = response.body.error.details.retryAfterSeconds;
  expect(Number.isInteger(seconds)).toBe(true);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(atMostSeconds);
  expect(response.headers.get('retry-after')).toBe(String(seconds));
  return seconds;
}

describe('per client address', () => {
  it('allows 30 OTP requests in 5 minutes, then answers 429 until the oldest leaves the window; other addresses are unaffected', async () => {
    const address = nextClientAddress();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => otpRequest(300 + i, address)));
    expect(answers.map((r) => r.status)).toEqual(Array(30).fill(200));
    expectRateLimited(await otpRequest(340, address), 300);
    expect((await otpRequest(341, nextClientAddress())).status).toBe(200);
    // Once the oldest request is more than 5 minutes old, one more fits.
    await app.owner.query(
      `update app_private.sliding_limits set hits[1] = hits[1] - interval '5 minutes'
       where key = 'address:otp_request:' || app_private.client_address_key($1)`,
      [address],
    );
    expect((await otpRequest(342, address)).status).toBe(200);
    expectRateLimited(await otpRequest(343, address), 300);
  });

  it('allows 30 anonymous sessions in 5 minutes, then 429, whatever the device id', async () => {
    const address = nextClientAddress();
    const answers = await Promise.all(Array.from({ length: 30 }, () => anonymous(app, address)));
    expect(answers.map((r) => r.status)).toEqual(Array(30).fill(200));
    const { rows: before } = await app.owner.query('select count(*)::int as n from app.users');
    expectRateLimited(await anonymous(app, address), 300);
    const { rows: after } = await app.owner.query('select count(*)::int as n from app.users');
    expect(after[0].n).toBe(before[0].n);
    expect((await anonymous(app, nextClientAddress())).status).toBe(200);
  });

  it('holds across API processes sharing the database, under concurrency', async () => {
    const services = await createServices(app.config, createLogger('silent'), app.pools, app.storage);
    const server = createServer(services).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const second = createClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const address = nextClientAddress();
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => anonymous(i % 2 === 0 ? app : second, address)));
      expect(answers.filter((r) => r.status === 200)).toHaveLength(30);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(10);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await services.graphql.release();
    }
  });

  it('counts an IPv6 client by its /64: 30 addresses of one /64 get 30 sessions, the 31st address of it 429', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => anonymous(app, `2001:db8:ffff:7::${(i + 1).toString(16)}`)));
    expect(answers.map((r) => r.status)).toEqual(Array(30).fill(200));
    const { rows: before } = await app.owner.query('select count(*)::int as n from app.users');
    expectRateLimited(await anonymous(app, '2001:db8:ffff:7:a1b2:c3d4:e5f6:1'), 300);
    expect((await app.owner.query('select count(*)::int as n from app.users')).rows[0].n).toBe(before[0].n);
    // The neighbouring /64 is another client.
    expect((await anonymous(app, '2001:db8:ffff:8::1')).status).toBe(200);
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => anonymous(app, i % 2 ? '203.0.113.78' : '::ffff:203.0.113.78')));
    expect(answers.map((r) => r.status)).toEqual(Array(30).fill(200));
    expectRateLimited(await anonymous(app, '::ffff:203.0.113.78'), 300);
    expectRateLimited(await anonymous(app, '203.0.113.78'), 300);
    // The same address in hexadecimal notation.
    expectRateLimited(await anonymous(app, '::ffff:cb00:714e'), 300);
  });

  it('ignores X-Forwarded-For when no proxy is trusted (the default): the socket address counts', async () => {
    const direct = await startTestApp({ TRUST_PROXY: '' });
    try {
      expect(direct.config.trustProxy).toBe(false);
      const answers = await Promise.all(Array.from({ length: 30 }, () => anonymous(direct, nextClientAddress())));
      expect(answers.map((r) => r.status)).toEqual(Array(30).fill(200));
      expectRateLimited(await anonymous(direct, nextClientAddress()), 300);
    } finally {
      await direct.close();
    }
  });
});

describe('per phone', () => {
  /** Lets the 60 s resend rule pass without waiting: the live code is made 61 s older. */
  const ageCode = (e164: string) =>
    app.owner.query(`update app_private.otp_codes set created_at = created_at - interval '61 seconds' where phone_e164 = $1`, [e164]);

  it('gets at most 10 codes in any 24 hours, from any address; the 11th answers the seconds until the oldest leaves', async () => {
    const phone = testPhone(450);
    for (let i = 0; i < 10; i += 1) {
      expect((await otpRequest(450, nextClientAddress())).status).toBe(200);
      // A request inside 60 s is refused by the resend rule and is not a code.
      expectRateLimited(await otpRequest(450, nextClientAddress()), 60);
      await ageCode(phone.e164);
    }
    const seconds = expectRateLimited(await otpRequest(450, nextClientAddress()), 86_400);
    expect(seconds).toBeGreaterThan(86_400 - 120);
    // The oldest code 23 h 59 min 50 s ago: it leaves the window in about 10 s.
    await app.owner.query(
      `update app_private.sliding_limits set hits[1] = now() - interval '23 hours 59 minutes 50 seconds' where key = $1`,
      [`phone_codes:${phone.e164}`],
    );
    expect(expectRateLimited(await otpRequest(450, nextClientAddress()), 11)).toBeGreaterThanOrEqual(9);
    // Out of the window: one more code, which verifies.
    await app.owner.query(`update app_private.sliding_limits set hits[1] = now() - interval '25 hours' where key = $1`, [
      `phone_codes:${phone.e164}`,
    ]);
    expect((await otpRequest(450, nextClientAddress())).status).toBe(200);
    const verify = await app.post('/auth/otp/verify', {
      phoneCountryCode: phone.phoneCountryCode,
      phoneNumber: phone.phoneNumber,
      code: testOtpCode,
    });
    expect(verify.status).toBe(200);
  });

  it('bounds guesses: 10 codes x 5 attempts, then every guess is refused', async () => {
    const phone = testPhone(460);
    let guesses = 0;
    for (let codeNumber = 0; codeNumber < 11; codeNumber += 1) {
      const request = await otpRequest(460, nextClientAddress());
      if (request.status === 429) break;
      for (let attempt = 0; attempt < 6; attempt += 1) {
        const guess = await app.post('/auth/otp/verify', {
          phoneCountryCode: phone.phoneCountryCode,
          phoneNumber: phone.phoneNumber,
          code: '0000',
        });
        if (guess.status === 400) guesses += 1;
        else expect(guess.status).toBe(429);
      }
      await ageCode(phone.e164);
    }
    expect(guesses).toBe(50);
  });
});
