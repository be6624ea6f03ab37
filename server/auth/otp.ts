// One-time codes: 4 digits, stored as an HMAC of phone and code (a leaked table reveals no code),
// delivered by a pluggable sender. The service sends no SMS itself: production plugs a sender in
// with OTP_SENDER_MODULE (a module whose default export implements OtpSender). Numbers listed in
// OTP_TEST_CODES answer their configured code and nothing is sent.
import { createHmac, randomInt } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { StartupError, type Config } from '../../config.ts';
import type { Log } from '../../logger.ts';

export const otpPolicy = { length: 4, resendAfterSeconds: 60, expiresInSeconds: 300, maxAttempts: 5 } as const;

export interface OtpSender {
  send(phoneE164: string, code: string): Promise<void>;
}

export interface Otp {
  /** The code for a phone: the configured test code, or a fresh random one. */
  codeFor(phoneE164: string): string;
  hash(phoneE164: string, code: string): Buffer;
  /** Delivers a code; test numbers are skipped. */
  deliver(phoneE164: string, code: string): Promise<void>;
}

/** Development sender: writes the code to the log, with only the last two digits of the phone. */
function logSender(log: Log): OtpSender {
  return {
    async send(phoneE164, code) {
      log.info({ otp: { phoneEnding: phoneE164.slice(-2), devCode: code } }, 'development OTP (no SMS is sent)');
    },
  };
}

export async function loadOtpSender(config: Config, log: Log): Promise<OtpSender> {
  if (config.otpSenderModule) {
    const module = (await import(pathToFileURL(path.resolve(config.otpSenderModule)).href)) as { default: OtpSender };
    return module.default;
  }
  if (process.env.NODE_ENV === 'production') throw new StartupError('OTP_SENDER_MODULE is required in production');
  return logSender(log);
}

export function createOtp(config: Config, sender: OtpSender): Otp {
  const key = createHmac('sha256', config.jwtSecret).update('otp').digest();
  return {
    codeFor: (phone) => config.otpTestCodes.get(phone) ?? String(randomInt(0, 10 ** otpPolicy.length)).padStart(otpPolicy.length, '0'),
    hash: (phone, code) => createHmac('sha256', key).update(`${phone}:${code}`).digest(),
    async deliver(phone, code) {
      if (config.otpTestCodes.has(phone)) return;
      await sender.send(phone, code);
    },
  };
}
