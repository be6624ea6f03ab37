// Sessions (spec 4.1, part 5; contract section 3).
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OtpSender } from '../../../server/auth/otp.ts';
import { startTestApp, testOtpCode, type TestApp } from '../../helpers/app.ts';
import { idpClaims, startTestIdp, type TestIdp } from '../../helpers/idp.ts';
import { anonymousUser, completeBasics, nextPhone, verifyPhone } from '../../helpers/users.ts';

const sent: { phone: string; code: string }[] = [];
const capturingSender: OtpSender = {
  async send(phone, code) {
    sent.push({ phone, code });
  },
};

let app: TestApp;
let idp: TestIdp;
beforeAll(async () => {
  idp = await startTestIdp();
  app = await startTestApp({ IDP_JWKS_URL: idp.jwksUrl }, { otpSender: capturingSender });
});
afterAll(async () => {
  await app.close();
  await idp.close();
});

const sessionShape = {
  accessToken: expect.any(String),
  refreshToken: expect.any(String),
  tokenType: 'Bearer',
  expiresIn: 900,
  refreshExpiresIn: 2592000,
  user: { id: expect.any(String), isAnonymous: expect.any(Boolean), phoneVerified: expect.any(Boolean), accessLevel: expect.any(Number) },
};

/** Lets the next OTP request for a phone through at once (as if 61 s had passed). */
async function ageOtp(e164: string, seconds = 61): Promise<void> {
  await app.owner.query(`update app_private.otp_codes set created_at = created_at - make_interval(secs => $2) where phone_e164 = $1`, [
    e164,
    seconds,
  ]);
}

function otpBody(phone: { phoneCountryCode: string; phoneNumber: string }, code?: string) {
  return { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber, ...(code ? { code } : {}) };
}

describe('GET /auth/login-config', () => {
  it('returns the login screen data', async () => {
    const response = await app.get('/auth/login-config');
    expect(response.body.data).toEqual({
      logoUrl: 'https://opinion.example/logo.png',
      loginMethods: ['phone_otp', 'idp', 'anonymous'],
      otp: { length: 4, resendAfterSeconds: 60, expiresInSeconds: 300, maxAttempts: 5 },
      legal: {
        termsUrl: 'https://opinion.example/legal/terms',
        privacyUrl: 'https://opinion.example/legal/privacy',
        termsVersion: expect.any(String),
      },
      minimumClientVersions: { ios: null, android: null },
    });
  });
});

describe('phone OTP', () => {
  it('sends a 4-digit code through the sender, stores only a hash, and answers the timings', async () => {
    const response = await app.post('/auth/otp/request', { phoneCountryCode: '+44', phoneNumber: '07700 900123' });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ resendAfterSeconds: 60, expiresInSeconds: 300 });
    const delivery = sent.find((s) => s.phone === '+447700900123');
    expect(delivery?.code).toMatch(/^\d{4}$/);
    const { rows } = await app.owner.query(
      `select code_hash, encode(code_hash, 'escape') as raw from app_private.otp_codes where phone_e164 = '+447700900123'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].code_hash).toHaveLength(32);
    expect(rows[0].raw).not.toContain(delivery?.code);

    const verify = await app.post('/auth/otp/verify', { phoneCountryCode: '+44', phoneNumber: '7700900123', code: delivery?.code });
    expect(verify.status).toBe(200);
    expect(verify.body.data).toMatchObject({ ...sessionShape, user: { isAnonymous: false, phoneVerified: true, accessLevel: 1 } });
  });

  it('sends nothing for OTP_TEST_CODES numbers, which answer their configured code', async () => {
    const phone = nextPhone();
    const before = sent.length;
    expect((await app.post('/auth/otp/request', otpBody(phone))).status).toBe(200);
    expect(sent.length).toBe(before);
    expect((await app.post('/auth/otp/verify', otpBody(phone, testOtpCode))).status).toBe(200);
  });

  it('rejects malformed phones and codes with 422', async () => {
    const bad = await app.post('/auth/otp/request', { phoneCountryCode: '44x', phoneNumber: '12' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.fields).toHaveProperty('phoneNumber');
    const code = await app.post('/auth/otp/verify', { ...otpBody(nextPhone()), code: '12345' });
    expect(code.status).toBe(422);
    expect(code.body.error.details.fields).toHaveProperty('code');
  });

  it('refuses a second request for the same phone within 60 s with 429 and Retry-After', async () => {
    const phone = nextPhone();
    expect((await app.post('/auth/otp/request', otpBody(phone))).status).toBe(200);
    const again = await app.post('/auth/otp/request', otpBody(phone));
    expect(again.status).toBe(429);
    expect(again.body.error.code).toBe('RATE_LIMITED');
    const retry = again.body.error.details.retryAfterSeconds;
    expect(Number.isInteger(retry) && retry > 0 && retry <= 60).toBe(true);
    expect(again.headers.get('retry-after')).toBe(String(retry));
    await ageOtp(phone.e164);
    expect((await app.post('/auth/otp/request', otpBody(phone))).status).toBe(200);
  });

  it('answers wrong, unknown, expired, replaced and used codes with the same 400 OTP_INVALID', async () => {
    const expected = { code: 'OTP_INVALID', message: 'The code is invalid or has expired.', details: {} };
    const unknownPhone = await app.post('/auth/otp/verify', otpBody(nextPhone(), testOtpCode));
    expect(unknownPhone.status).toBe(400);
    expect(unknownPhone.body.error).toEqual(expected);

    await app.post('/auth/otp/request', { phoneCountryCode: '+44', phoneNumber: '7700900200' });
    const first = sent.at(-1)?.code as string;
    const wrong = await app.post('/auth/otp/verify', {
      phoneCountryCode: '+44',
      phoneNumber: '7700900200',
      code: first === '0000' ? '0001' : '0000',
    });
    expect(wrong.body.error).toEqual(expected);

    await ageOtp('+447700900200');
    await app.post('/auth/otp/request', { phoneCountryCode: '+44', phoneNumber: '7700900200' });
    const second = sent.at(-1)?.code as string;
    if (second !== first) {
      const replaced = await app.post('/auth/otp/verify', { phoneCountryCode: '+44', phoneNumber: '7700900200', code: first });
      expect(replaced.body.error).toEqual(expected);
    }
    await app.owner.query(`update app_private.otp_codes set expires_at = now() - interval '1 second' where phone_e164 = '+447700900200'`);
    const expired = await app.post('/auth/otp/verify', { phoneCountryCode: '+44', phoneNumber: '7700900200', code: second });
    expect(expired.body.error).toEqual(expected);

    const phone = nextPhone();
    await app.post('/auth/otp/request', otpBody(phone));
    expect((await app.post('/auth/otp/verify', otpBody(phone, testOtpCode))).status).toBe(200);
    const reused = await app.post('/auth/otp/verify', otpBody(phone, testOtpCode));
    expect(reused.body.error).toEqual(expected);
  });

  it('burns the code after 5 wrong attempts, whatever the client address: then 429 until a new code', async () => {
    const phone = nextPhone();
    await app.post('/auth/otp/request', otpBody(phone));
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      const wrong = await app.post('/auth/otp/verify', otpBody(phone, '9999'), { headers: { 'x-forwarded-for': `10.0.0.${attempt}` } });
      expect(wrong.status).toBe(400);
    }
    const locked = await app.post('/auth/otp/verify', otpBody(phone, testOtpCode));
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe('RATE_LIMITED');
    expect(locked.headers.get('retry-after')).toMatch(/^\d+$/);
    await ageOtp(phone.e164);
    await app.post('/auth/otp/request', otpBody(phone));
    expect((await app.post('/auth/otp/verify', otpBody(phone, testOtpCode))).status).toBe(200);
  });

  it('upgrades a signed-in user without a phone in place when the phone is new', async () => {
    const anonymous = await anonymousUser(app);
    const verified = await verifyPhone(app, nextPhone(), anonymous.token);
    expect(verified.id).toBe(anonymous.id);
    const status = await app.get('/users/me/onboarding/status', { token: verified.token });
    expect(status.body.data.phoneConfirmed).toBe(true);
  });

  it("merges the caller into the phone's existing user and returns that user's session", async () => {
    const phone = nextPhone();
    const existing = await verifyPhone(app, phone);
    const caller = await completeBasics(app, await anonymousUser(app));
    await app.owner.query(`update app_private.otp_codes set created_at = now() - interval '61 seconds'`);
    const merged = await verifyPhone(app, phone, caller.token);
    expect(merged.id).toBe(existing.id);
    const { rows } = await app.owner.query('select merged_into from app.users where id = $1', [caller.id]);
    expect(rows[0].merged_into).toBe(existing.id);
    // The caller's old session is over; the returned session works.
    expect((await app.get('/users/me/onboarding/status', { token: caller.token })).status).toBe(401);
    expect((await app.get('/users/me/onboarding/status', { token: merged.token })).status).toBe(200);
  });

  it('ignores an invalid token on verify (the endpoint is public)', async () => {
    const phone = nextPhone();
    await app.post('/auth/otp/request', otpBody(phone));
    const verify = await app.post('/auth/otp/verify', otpBody(phone, testOtpCode), { token: 'not-a-token' });
    expect(verify.status).toBe(200);
  });
});

describe('anonymous sessions', () => {
  it('restores the same user for the same device id while that user is anonymous', async () => {
    const first = await app.post('/auth/anonymous/session', { deviceId: 'device-restore-0001' });
    expect(first.body.data).toMatchObject({ ...sessionShape, user: { isAnonymous: true, phoneVerified: false, accessLevel: 1 } });
    const again = await app.post('/auth/anonymous/session', { deviceId: 'device-restore-0001' });
    expect(again.body.data.user.id).toBe(first.body.data.user.id);
    expect(again.body.data.refreshToken).not.toBe(first.body.data.refreshToken);

    await verifyPhone(app, nextPhone(), first.body.data.accessToken);
    const afterPhone = await app.post('/auth/anonymous/session', { deviceId: 'device-restore-0001' });
    expect(afterPhone.body.data.user.id).not.toBe(first.body.data.user.id);
    expect(afterPhone.body.data.user.isAnonymous).toBe(true);
  });

  it('validates the device id', async () => {
    for (const deviceId of ['short', 'x'.repeat(129), 'has space in it', 12345678]) {
      const response = await app.post('/auth/anonymous/session', { deviceId });
      expect(response.status).toBe(422);
      expect(response.body.error.details.fields).toHaveProperty('deviceId');
    }
  });
});

describe('refresh and logout', () => {
  it('rotates the refresh token; the new one works and the old one is single use', async () => {
    const user = await anonymousUser(app);
    const refreshed = await app.post('/auth/session/refresh', { refreshToken: user.refreshToken });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.data).toMatchObject({ ...sessionShape, user: { id: user.id } });
    expect(refreshed.body.data.refreshToken).not.toBe(user.refreshToken);
    const next = await app.post('/auth/session/refresh', { refreshToken: refreshed.body.data.refreshToken });
    expect(next.status).toBe(200);
  });

  /** Moves a session's rotations `seconds` into the past (as if that much time had passed). */
  const ageRotations = (sessionUserId: string, seconds: number) =>
    app.owner.query(
      `update app_private.refresh_tokens t set rotated_at = rotated_at - make_interval(secs => $2)
       from app.sessions s where s.id = t.session_id and s.user_id = $1 and t.rotated_at is not null`,
      [sessionUserId, seconds],
    );
  const liveTokens = (userId: string) =>
    app.owner
      .query<{ n: number }>(
        `select count(*)::int as n from app_private.refresh_tokens t join app.sessions s on s.id = t.session_id
         where s.user_id = $1 and s.revoked_at is null and t.rotated_at is null`,
        [userId],
      )
      .then((r) => r.rows[0]?.n);

  it('revokes the whole session when a rotated token is presented again after the 10 s grace window', async () => {
    const user = await anonymousUser(app);
    const refreshed = (await app.post('/auth/session/refresh', { refreshToken: user.refreshToken })).body.data;
    await ageRotations(user.id, 11);
    const reuse = await app.post('/auth/session/refresh', { refreshToken: user.refreshToken });
    expect(reuse.status).toBe(401);
    expect(reuse.body.error.code).toBe('UNAUTHORIZED');
    expect((await app.post('/auth/session/refresh', { refreshToken: refreshed.refreshToken })).status).toBe(401);
    expect((await app.get('/users/me/onboarding/status', { token: refreshed.accessToken })).status).toBe(401);
    expect(await liveTokens(user.id)).toBe(0);
  });

  it('answers 20 concurrent refreshes of one token with the same new pair: the client stays signed in with one live token', async () => {
    const user = await anonymousUser(app);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => app.post('/auth/session/refresh', { refreshToken: user.refreshToken })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const pairs = new Set(results.map((r) => `${r.body.data.accessToken} ${r.body.data.refreshToken}`));
    expect(pairs.size).toBe(1);
    const [pair] = results.map((r) => r.body.data);
    expect(pair.refreshToken).not.toBe(user.refreshToken);
    expect(await liveTokens(user.id)).toBe(1);
    // Stored as hashes only: neither token appears in the clear.
    const stored = await app.owner.query(
      `select t.* from app_private.refresh_tokens t join app.sessions s on s.id = t.session_id where s.user_id = $1`,
      [user.id],
    );
    expect(JSON.stringify(stored.rows)).not.toContain(pair.refreshToken.slice(3));
    // Signed in: the pair works, and the session rotates on as usual.
    expect((await app.get('/users/me/onboarding/status', { token: pair.accessToken })).status).toBe(200);
    const next = await app.post('/auth/session/refresh', { refreshToken: pair.refreshToken });
    expect(next.status).toBe(200);
    expect(await liveTokens(user.id)).toBe(1);
  });

  it('answers the same pair to a repeat inside the window, not once the new token was itself rotated', async () => {
    const user = await anonymousUser(app);
    const first = (await app.post('/auth/session/refresh', { refreshToken: user.refreshToken })).body.data;
    const repeat = await app.post('/auth/session/refresh', { refreshToken: user.refreshToken });
    expect(repeat.status).toBe(200);
    expect(repeat.body.data.refreshToken).toBe(first.refreshToken);
    expect(repeat.body.data.accessToken).toBe(first.accessToken);
    expect(await liveTokens(user.id)).toBe(1);
    // The successor rotates; the first token presented again now has no live pair to answer: reuse.
    expect((await app.post('/auth/session/refresh', { refreshToken: first.refreshToken })).status).toBe(200);
    expect((await app.post('/auth/session/refresh', { refreshToken: user.refreshToken })).status).toBe(401);
    expect(await liveTokens(user.id)).toBe(0);
  });

  it('answers unknown refresh tokens with 401', async () => {
    expect((await app.post('/auth/session/refresh', { refreshToken: 'rt_unknown' })).status).toBe(401);
    expect((await app.post('/auth/session/refresh', {})).status).toBe(422);
  });

  it('logs out one session: its access token stops at once, other sessions keep working', async () => {
    const phone = nextPhone();
    const deviceA = await verifyPhone(app, phone);
    await ageOtp(phone.e164);
    const deviceB = await verifyPhone(app, phone);
    expect(deviceB.id).toBe(deviceA.id);
    const logout = await app.post(
      '/auth/logout',
      { refreshToken: deviceA.refreshToken, logoutFromAllDevices: false },
      { token: deviceA.token },
    );
    expect(logout.status).toBe(200);
    expect(logout.body).toEqual({ success: true, message: 'OK', data: {} });
    expect((await app.get('/users/me/onboarding/status', { token: deviceA.token })).status).toBe(401);
    expect((await app.post('/auth/session/refresh', { refreshToken: deviceA.refreshToken })).status).toBe(401);
    expect((await app.get('/users/me/onboarding/status', { token: deviceB.token })).status).toBe(200);
  });

  it('logs out every device with logoutFromAllDevices', async () => {
    const phone = nextPhone();
    const deviceA = await verifyPhone(app, phone);
    await ageOtp(phone.e164);
    const deviceB = await verifyPhone(app, phone);
    await app.post('/auth/logout', { refreshToken: deviceA.refreshToken, logoutFromAllDevices: true }, { token: deviceA.token });
    expect((await app.get('/users/me/onboarding/status', { token: deviceA.token })).status).toBe(401);
    expect((await app.get('/users/me/onboarding/status', { token: deviceB.token })).status).toBe(401);
  });

  it("changes nothing with another user's or an unknown refresh token, whatever logoutFromAllDevices says", async () => {
    const phone = nextPhone();
    const callerA = await verifyPhone(app, phone);
    await ageOtp(phone.e164);
    const callerB = await verifyPhone(app, phone);
    const victim = await anonymousUser(app);
    for (const logoutFromAllDevices of [false, true]) {
      for (const refreshToken of [victim.refreshToken, 'rt_unknown']) {
        const logout = await app.post('/auth/logout', { refreshToken, logoutFromAllDevices }, { token: callerA.token });
        expect(logout.status).toBe(200);
        expect(logout.body.data).toEqual({});
      }
    }
    for (const user of [victim, callerA, callerB]) {
      expect((await app.get('/users/me/onboarding/status', { token: user.token })).status).toBe(200);
    }
    expect((await app.post('/auth/session/refresh', { refreshToken: victim.refreshToken })).status).toBe(200);
  });

  it('validates the logout body and requires a token', async () => {
    const user = await anonymousUser(app);
    expect((await app.post('/auth/logout', { refreshToken: user.refreshToken })).status).toBe(401);
    const missing = await app.post('/auth/logout', { refreshToken: user.refreshToken }, { token: user.token });
    expect(missing.status).toBe(422);
    expect(missing.body.error.details.fields).toEqual({ logoutFromAllDevices: 'Required' });
  });
});

describe('access tokens', () => {
  it('refuses expired, forged and malformed tokens with 401', async () => {
    const user = await anonymousUser(app);
    const { sub, sid } = jwt.decode(user.token) as { sub: string; sid: string };
    const secret = app.config.jwtSecret;
    const expired = jwt.sign({ sid, typ: 'access', exp: Math.floor(Date.now() / 1000) - 5 }, secret, { subject: sub });
    const forged = jwt.sign({ sid, typ: 'access' }, 'some-other-secret', { subject: sub, expiresIn: 900 });
    const otherUser = jwt.sign({ sid, typ: 'access' }, secret, { subject: '00000000-0000-4000-8000-000000000000', expiresIn: 900 });
    // Signed with the real secret for a live session, but without `exp`: it would never expire.
    const neverExpires = jwt.sign({ sid, typ: 'access' }, secret, { subject: sub });
    const valid = jwt.sign({ sid, typ: 'access' }, secret, { subject: sub, expiresIn: 900 });
    expect((await app.get('/users/me/onboarding/status', { token: valid })).status).toBe(200);
    for (const token of [expired, forged, otherUser, neverExpires, 'garbage', `${user.token}x`]) {
      const response = await app.get('/users/me/onboarding/status', { token });
      expect(response.status).toBe(401);
    }
    const noScheme = await app.get('/users/me/onboarding/status', { headers: { authorization: user.token } });
    expect(noScheme.status).toBe(401);
  });
});

describe('identity-provider exchange', () => {
  const projectId = 'opinion-test';

  it('signs in an anonymous-provider subject, restoring the same user next time', async () => {
    const token = idp.sign(idpClaims(projectId, { sub: 'anon-subject-1' }));
    const first = await app.post('/auth/idp/token', { idToken: token });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ ...sessionShape, user: { isAnonymous: true, phoneVerified: false } });
    const again = await app.post('/auth/idp/token', { idToken: idp.sign(idpClaims(projectId, { sub: 'anon-subject-1' })) });
    expect(again.body.data.user.id).toBe(first.body.data.user.id);
  });

  it('signs in the phone identity of a phone-provider token', async () => {
    const phone = nextPhone();
    const viaOtp = await verifyPhone(app, phone);
    const token = idp.sign(
      idpClaims(projectId, { sub: 'phone-subject-1', phone_number: phone.e164, firebase: { sign_in_provider: 'phone' } }),
    );
    const response = await app.post('/auth/idp/token', { idToken: token });
    expect(response.status).toBe(200);
    expect(response.body.data.user).toMatchObject({ id: viaOtp.id, phoneVerified: true, isAnonymous: false });
  });

  it('refuses tokens that fail any check with 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad = {
      'wrong audience': idp.sign(idpClaims(projectId, { aud: 'other-project' })),
      'audience list naming the project among others': idp.sign(idpClaims(projectId, { aud: ['other', projectId] })),
      'audience list of the project alone': idp.sign(idpClaims(projectId, { aud: [projectId] })),
      'wrong issuer': idp.sign(idpClaims(projectId, { iss: 'https://securetoken.google.com/other-project' })),
      expired: idp.sign(idpClaims(projectId, { exp: now - 1 })),
      'issued in the future': idp.sign(idpClaims(projectId, { iat: now + 600 })),
      'auth_time in the future': idp.sign(idpClaims(projectId, { auth_time: now + 600 })),
      'other provider': idp.sign(idpClaims(projectId, { firebase: { sign_in_provider: 'password' } })),
      'phone provider without a phone': idp.sign(idpClaims(projectId, { firebase: { sign_in_provider: 'phone' } })),
      'empty subject': idp.sign(idpClaims(projectId, { sub: '' })),
      'subject over 128 characters': idp.sign(idpClaims(projectId, { sub: 's'.repeat(129) })),
      'unknown key id': idp.sign(idpClaims(projectId), { kid: 'no-such-key' }),
      'bad signature': idp.sign(idpClaims(projectId), { key: idp.strangerKey }),
      'HS256 algorithm': idp.sign(idpClaims(projectId), { algorithm: 'HS256' }),
      'not a JWT': 'not.a.jwt',
    };
    for (const [reason, idToken] of Object.entries(bad)) {
      const response = await app.post('/auth/idp/token', { idToken });
      expect(response.status, reason).toBe(401);
      expect(response.body.error.code, reason).toBe('UNAUTHORIZED');
    }
  });

  it('answers a missing idToken with 422', async () => {
    const response = await app.post('/auth/idp/token', {});
    expect(response.status).toBe(422);
    expect(response.body.error.details.fields).toEqual({ idToken: 'Required' });
  });
});
