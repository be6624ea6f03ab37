// Sign-in codes by SMS through Twilio's Messages API (OTP_SENDER=twilio): one form-encoded
// `POST {TWILIO_API_URL}/2010-04-01/Accounts/{AccountSid}/Messages.json` with HTTP basic auth
// (account SID and auth token), answered 201 with the message resource, or an error status with
// Twilio's error JSON (`{ code, message, more_info, status }`). A plain HTTP client, so tests and
// staging point TWILIO_API_URL at a stand-in. TWILIO_FROM is the sending number (E.164) or a
// Messaging Service SID (MG...).
import type { OtpSenderSetting } from '../../config.ts';
import type { Log } from '../../logger.ts';
import { OtpDeliveryError, type OtpSender } from './otp-delivery.ts';

type Twilio = Extract<OtpSenderSetting, { kind: 'twilio' }>;

/**
 * Twilio error codes that are about the recipient's number, not about the service: the client is
 * told its number cannot get a code. Every other failure is the provider's or the configuration's.
 */
const recipientErrors = new Set([
  21211, // invalid 'To' phone number
  21214, // 'To' number cannot be reached
  21408, // sending to this region is not enabled
  21610, // the recipient replied STOP
  21612, // no route to the 'To' number
  21614, // 'To' is not a mobile number
]);

const timeoutMs = 10_000;

export function twilioSender(settings: Twilio, log: Log): OtpSender {
  const url = `${settings.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(settings.accountSid)}/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${settings.accountSid}:${settings.authToken}`).toString('base64')}`;
  const sender: Record<string, string> = settings.from.startsWith('MG') ? { MessagingServiceSid: settings.from } : { From: settings.from };
  const twilioLog = log.child({ component: 'otp-twilio' });
  return {
    async send(phoneE164, code) {
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: new URLSearchParams({ To: phoneE164, ...sender, Body: `${code} is your sign-in code.` }),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        twilioLog.warn({ reason: (error as Error).message }, 'Twilio could not be reached; no code was sent');
        throw new OtpDeliveryError('unavailable');
      }
      if (response.status === 201) {
        await response.body?.cancel();
        return;
      }
      const failure = (await response.json().catch(() => ({}))) as { code?: number; more_info?: string };
      // Twilio's message may quote the phone number: only its code and status reach the log.
      const details = { status: response.status, twilioCode: failure.code, moreInfo: failure.more_info };
      if (failure.code !== undefined && recipientErrors.has(failure.code)) {
        twilioLog.info(details, 'Twilio refused the recipient');
        throw new OtpDeliveryError('recipient');
      }
      twilioLog.warn(details, 'Twilio refused the message; no code was sent');
      throw new OtpDeliveryError('unavailable');
    },
  };
}
