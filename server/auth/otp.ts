// One-time codes: 4 digits, stored as an HMAC of phone and code (a leaked table reveals no code),
// delivered by the configured sender: Twilio's Messages API (OTP_SENDER=twilio, ./twilio.ts), a
// module of one's own (OTP_SENDER_MODULE: its default export implements OtpSender), or, in
// development only, the log. Numbers listed in OTP_TEST_CODES answer their configured code and
// nothing is sent.
import { createHmac, randomInt } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { StartupError, type Config } from '../../config.ts';
import type { Log } from '../../logger.ts';
import { ApiError } from '../http/errors.ts';
import { OtpDeliveryError, type OtpSender } from './otp-delivery.ts';
import { twilioSender } from './twilio.ts';

export type { OtpSender } from './otp-delivery.ts';

/** A client told that no code could be sent tries again after this long. */
const deliveryRetrySeconds = 30;

export const otpPolicy = { length: 4, resendAfterSeconds: 60, expiresInSeconds: 300, maxAttempts: 5 } as const;

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
  const setting = config.otpSender;
  if (setting.kind === 'twilio') return twilioSender(setting, log);
  if (setting.kind === 'module') {
    const loaded = (await import(pathToFileURL(setting.path).href).catch((error: Error) => {
      throw new StartupError(`OTP_SENDER_MODULE ${setting.path} cannot be loaded: ${error.message.split('\n')[0]}`);
    })) as { default?: Partial<OtpSender> };
    if (typeof loaded.default?.send !== 'function')
      throw new StartupError(`OTP_SENDER_MODULE ${setting.path} has no default export with a send(phoneE164, code) method`);
    return loaded.default as OtpSender;
  }
  return logSender(log); // kind 'log': development only (config.ts requires a sender in production)
}

export function createOtp(config: Config, sender: OtpSender, log: Log): Otp {
  const key = createHmac('sha256', config.jwtSecret).update('otp').digest();
  return {
    codeFor: (phone) => config.otpTestCodes.get(phone) ?? String(randomInt(0, 10 ** otpPolicy.length)).padStart(otpPolicy.length, '0'),
    hash: (phone, code) => createHmac('sha256', key).update(`${phone}:${code}`).digest(),
    async deliver(phone, code) {
      if (config.otpTestCodes.has(phone)) return;
      try {
        await sender.send(phone, code);
      } catch (error) {
        if (!(error instanceof OtpDeliveryError))
          log.warn({ err: { name: (error as Error).name } }, 'the OTP sender failed; no code was sent');
        if (error instanceof OtpDeliveryError && error.reason === 'recipient') {
          throw new ApiError('VALIDATION_FAILED', { fields: { phoneNumber: 'This number cannot receive a sign-in code' } });
        }
        throw new ApiError('SERVICE_UNAVAILABLE', {}, { 'Retry-After': String(deliveryRetrySeconds) });
      }
    },
  };
}
