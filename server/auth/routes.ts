// /auth: login configuration, phone OTP, identity-provider exchange, anonymous sessions, refresh
// and logout (spec 4.1, contract section 3).
import type { Request } from 'express';
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { endpoint } from '../http/endpoint.ts';
import { ApiError, rateLimited } from '../http/errors.ts';
import { otpPolicy } from './otp.ts';
import { phoneFields, phoneInput } from './phone.ts';
import { sessionPayload, sessionResponse } from './session.ts';
import { hashRefreshToken } from './tokens.ts';
import { nullableText, text, textMax } from '../http/text.ts';

const tag = 'Auth';

/**
 * One request of the client address (req.ip: see TRUST_PROXY) to a sign-in endpoint limited per
 * address in the database (db/sql/auth.sql): 429 once it made 30 in the last 5 minutes. Its
 * answer gives the RateLimit headers (the transaction collects it: server/http/rate-limit-headers.ts).
 */
async function requireAddressAllowance(tx: RequestTransaction, bucket: 'otp_request' | 'anonymous_session', req: Request): Promise<void> {
  const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
  const { rows } = await tx.query<{ wait: number }>('select * from app.take_address_limit($1, $2)', [bucket, address]);
  const wait = rows[0]?.wait ?? 0;
  if (wait > 0) throw rateLimited(wait);
}

const loginMethods = ['phone_otp', 'idp', 'anonymous'] as const;

export const endpoints = [
  endpoint({
    method: 'get',
    path: '/auth/login-config',
    tag,
    summary: 'Data for the phone login screen',
    description:
      'Always answers, whatever X-Client-Version says. minimumClientVersions gives the oldest app version served per ' +
      'platform (null: every version): an older app gets 426 CLIENT_UPDATE_REQUIRED on every other operation, so the ' +
      'app can compare its own version here at launch.',
    auth: 'public',
    anyClientVersion: true,
    response: z.object({
      logoUrl: text(textMax.url),
      loginMethods: z.array(z.enum(loginMethods)).max(loginMethods.length),
      otp: z.object({
        length: z.number(),
        resendAfterSeconds: z.number(),
        expiresInSeconds: z.number(),
        maxAttempts: z.number(),
      }),
      legal: z.object({ termsUrl: text(textMax.url), privacyUrl: text(textMax.url), termsVersion: text(64) }),
      minimumClientVersions: z.object({
        ios: nullableText(32).describe('The oldest iOS app version served (major.minor.patch), or null.'),
        android: nullableText(32).describe('The oldest Android app version served (major.minor.patch), or null.'),
      }),
    }),
    async handler({ services: { config } }) {
      return {
        logoUrl: `${config.publicWebBaseUrl}/logo.png`,
        loginMethods: ['phone_otp' as const, 'idp' as const, 'anonymous' as const],
        otp: { ...otpPolicy },
        legal: {
          termsUrl: `${config.publicWebBaseUrl}/legal/terms`,
          privacyUrl: `${config.publicWebBaseUrl}/legal/privacy`,
          termsVersion: config.termsVersion,
        },
        minimumClientVersions: { ...config.clientVersions.minimum },
      };
    },
  }),

  endpoint({
    method: 'post',
    path: '/auth/otp/request',
    tag,
    summary: 'Send a 4-digit code to a phone',
    description:
      'Phones are normalised to E.164. A second request for the same phone within 60 s answers 429, and so does ' +
      'an 11th code for one phone within 24 hours (retryAfterSeconds: until the oldest leaves the window). One ' +
      'client address makes at most 30 requests here in any 5 minutes (429). ' +
      'A new code replaces the previous one. No SMS is sent by the service itself: delivery goes through ' +
      'the configured sender, and numbers in OTP_TEST_CODES receive nothing.',
    auth: 'public',
    body: phoneInput,
    response: z.object({ resendAfterSeconds: z.number(), expiresInSeconds: z.number() }),
    errors: ['RATE_LIMITED'],
    rateLimits: ['otp_request'],
    async handler({ body: phone, tx, req, services: { otp } }) {
      await requireAddressAllowance(tx, 'otp_request', req);
      const code = otp.codeFor(phone);
      const { rows } = await tx.query<{ wait: number }>('select app.request_otp($1, $2) as wait', [phone, otp.hash(phone, code)]);
      const wait = rows[0]?.wait ?? 0;
      await tx.commit(); // the address's request counts, whether or not the phone may get a code now
      if (wait > 0) throw rateLimited(wait);
      await otp.deliver(phone, code);
      return { resendAfterSeconds: otpPolicy.resendAfterSeconds, expiresInSeconds: otpPolicy.expiresInSeconds };
    },
  }),

  endpoint({
    method: 'post',
    path: '/auth/otp/verify',
    tag,
    summary: 'Verify a code and start a session',
    description:
      'Wrong, expired, replaced and unknown codes all answer 400 OTP_INVALID. Five wrong attempts burn the ' +
      'code: then 429 until a new code is requested. With a valid access token of a user without a phone, ' +
      'that user becomes the phone identity (same userId) when the phone is new; when the phone already has ' +
      "a user, the caller's public activity is merged into it and the session returned is that user's.",
    auth: 'public',
    body: z
      .strictObject({
        ...phoneFields,
        code: z
          .string()
          .max(4)
          .regex(/^\d{4}$/, 'Must be 4 digits'),
      })
      .transform((value, ctx) => {
        const phone = phoneInput.safeParse({ phoneCountryCode: value.phoneCountryCode, phoneNumber: value.phoneNumber });
        if (!phone.success) {
          ctx.addIssue({ code: 'custom', path: ['phoneNumber'], message: 'Not a valid phone number' });
          return z.NEVER;
        }
        return { phone: phone.data, code: value.code };
      }),
    response: sessionResponse,
    errors: ['OTP_INVALID', 'RATE_LIMITED', 'ACCOUNT_SUSPENDED'],
    async handler({ body: { phone, code }, tx, services: { otp, tokens } }) {
      const refresh = tokens.newRefresh();
      const { rows } = await tx.query<{ outcome: string; retry_after: number; user_id: string; session_id: string }>(
        'select outcome, retry_after, user_id, session_id from app.verify_otp($1, $2, $3)',
        [phone, otp.hash(phone, code), refresh.hash],
      );
      const result = rows[0];
      if (result?.outcome !== 'ok') {
        await tx.commit(); // a wrong attempt counts
        throw result?.outcome === 'locked' ? rateLimited(result.retry_after) : new ApiError('OTP_INVALID');
      }
      return sessionPayload(tx, tokens, { userId: result.user_id, sessionId: result.session_id, refreshToken: refresh.token });
    },
  }),

  endpoint({
    method: 'post',
    path: '/auth/idp/token',
    tag,
    summary: 'Exchange an identity-provider ID token for a session',
    description:
      'RS256 tokens of the configured project from the phone or anonymous sign-in provider only. ' +
      'A phone-provider token signs in that phone identity (same rules as OTP verify).',
    auth: 'public',
    body: z.strictObject({ idToken: z.string().min(1).max(8192) }),
    response: sessionResponse,
    errors: ['UNAUTHORIZED', 'ACCOUNT_SUSPENDED'],
    async handler({ body, tx, services: { idp, tokens } }) {
      const identity = await idp.verify(body.idToken);
      if (!identity) throw new ApiError('UNAUTHORIZED');
      const refresh = tokens.newRefresh();
      const { rows } = await tx.query<{ user_id: string; session_id: string }>(
        'select user_id, session_id from app.idp_session($1, $2, $3)',
        [identity.subject, identity.phoneE164, refresh.hash],
      );
      const result = rows[0] as { user_id: string; session_id: string };
      return sessionPayload(tx, tokens, { userId: result.user_id, sessionId: result.session_id, refreshToken: refresh.token });
    },
  }),

  endpoint({
    method: 'post',
    path: '/auth/anonymous/session',
    tag,
    summary: 'Create or restore an anonymous session for an app install',
    description:
      'The same deviceId restores the same user while that user is still anonymous (no phone); otherwise a new anonymous user. ' +
      'One client address makes at most 30 requests here in any 5 minutes (429 RATE_LIMITED).',
    auth: 'public',
    body: z.strictObject({
      deviceId: z
        .string()
        .max(128)
        .regex(/^[A-Za-z0-9._:-]{8,128}$/, '8-128 characters of A-Z a-z 0-9 . _ : -'),
    }),
    response: sessionResponse,
    errors: ['RATE_LIMITED', 'ACCOUNT_SUSPENDED'],
    rateLimits: ['anonymous_session'],
    async handler({ body, tx, req, services: { tokens } }) {
      await requireAddressAllowance(tx, 'anonymous_session', req);
      const refresh = tokens.newRefresh();
      const { rows } = await tx.query<{ user_id: string; session_id: string }>(
        'select user_id, session_id from app.anonymous_session($1, $2)',
        [body.deviceId, refresh.hash],
      );
      const result = rows[0] as { user_id: string; session_id: string };
      return sessionPayload(tx, tokens, { userId: result.user_id, sessionId: result.session_id, refreshToken: refresh.token });
    },
  }),

  endpoint({
    method: 'post',
    path: '/auth/session/refresh',
    tag,
    summary: 'Rotate a refresh token',
    description:
      'Refresh tokens are single use: a refresh answers a new pair and the presented token stops working. ' +
      'Within 10 seconds of a rotation, presenting the rotated token again answers the same new pair (a client ' +
      'that refreshes from two requests at once stays signed in); after that, presenting it revokes the whole ' +
      'session and answers 401. One token never yields two live refresh tokens.',
    auth: 'public',
    body: z.strictObject({ refreshToken: z.string().min(1).max(200) }),
    response: sessionResponse,
    errors: ['UNAUTHORIZED', 'ACCOUNT_SUSPENDED'],
    async handler({ body, tx, services: { tokens } }) {
      const successor = tokens.successorRefresh(body.refreshToken);
      const { rows } = await tx.query<{ outcome: string; user_id: string; session_id: string; issued_at: Date }>(
        'select outcome, user_id, session_id, issued_at from app.refresh_session($1, $2)',
        [hashRefreshToken(body.refreshToken), successor.hash],
      );
      const result = rows[0];
      if (result?.outcome !== 'rotated') {
        await tx.commit(); // reuse detection revoked the family
        throw new ApiError('UNAUTHORIZED');
      }
      return sessionPayload(tx, tokens, {
        userId: result.user_id,
        sessionId: result.session_id,
        refreshToken: successor.token,
        issuedAt: result.issued_at,
      });
    },
  }),

  endpoint({
    method: 'post',
    path: '/auth/logout',
    tag,
    summary: 'Revoke this session, or every session of the user',
    description:
      "The submitted refresh token must be one of the caller's: then its session ends, or with " +
      "logoutFromAllDevices every session of the caller. Another user's token or an unknown one changes " +
      'nothing and still answers 200, whatever logoutFromAllDevices says. Access tokens of a revoked session ' +
      'stop working at once.',
    auth: 'bearer',
    body: z.strictObject({ refreshToken: z.string().min(1).max(200), logoutFromAllDevices: z.boolean() }),
    response: z.object({}),
    async handler({ body, tx }) {
      await tx.query('select app.logout($1, $2)', [hashRefreshToken(body.refreshToken), body.logoutFromAllDevices]);
      return {};
    },
  }),
];
