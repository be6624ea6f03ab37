// Phone numbers as the API receives them ({ phoneCountryCode: "+44", phoneNumber: "7700 900123" })
// normalised to E.164.
import { z } from 'zod';

export function toE164(countryCode: string, number: string): string | null {
  const cc = countryCode.trim().replace(/^\+/, '');
  if (!/^[1-9]\d{0,3}$/.test(cc)) return null;
  const national = number.replace(/[\s().-]/g, '').replace(/^0+/, '');
  if (!/^\d{4,14}$/.test(national)) return null;
  const e164 = `+${cc}${national}`;
  return e164.length <= 16 && e164.length >= 8 ? e164 : null;
}

export const phoneInput = z
  .strictObject({
    phoneCountryCode: z.string().max(5),
    phoneNumber: z.string().max(20),
  })
  .transform((value, ctx) => {
    const e164 = toE164(value.phoneCountryCode, value.phoneNumber);
    if (!e164) {
      ctx.addIssue({ code: 'custom', path: ['phoneNumber'], message: 'Not a valid phone number' });
      return z.NEVER;
    }
    return e164;
  });
