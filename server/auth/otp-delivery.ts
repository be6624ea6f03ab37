// What a sign-in code sender is (OTP_SENDER, OTP_SENDER_MODULE) and how it says it failed.
export interface OtpSender {
  send(phoneE164: string, code: string): Promise<void>;
}

/**
 * A code that could not be delivered: `recipient` when the number cannot receive it (the client is
 * told so, 422), `unavailable` when the provider failed or refused the service (503, try later).
 * Any other error a sender throws counts as `unavailable`.
 */
export class OtpDeliveryError extends Error {
  readonly reason: 'recipient' | 'unavailable';
  constructor(reason: 'recipient' | 'unavailable') {
    super(reason === 'recipient' ? 'the number cannot receive a code' : 'the code could not be sent');
    this.reason = reason;
  }
}
