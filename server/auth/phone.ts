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

/**
 * The two phone fields as requests carry them, with toE164's rule in the OpenAPI document: a country
 * code of 1-4 digits (a leading + optional), and a national number of 4-14 digits once spaces, dots,
 * dashes, parentheses and leading zeros are removed (at most 15 digits in all).
 */
export const phoneFields = {
  phoneCountryCode: z
    .string()
    .max(5)
    .meta({ pattern: '^\\s*\\+?[1-9][0-9]{0,3}\\s*$', examples: ['+44'] }),
  phoneNumber: z
    .string()
    .max(20)
    .meta({
      pattern: '^[\\s().-]*(?:0[\\s().-]*)*[1-9][\\s().-]*(?:[0-9][\\s().-]*){3,13}$',
      description: 'The national number: 4-14 digits once spaces, dots, dashes, parentheses and leading zeros are removed.',
      examples: ['7700900123'],
    }),
};

export const phoneInput = z.strictObject(phoneFields).transform((value, ctx) => {
  const e164 = toE164(value.phoneCountryCode, value.phoneNumber);
  if (!e164) {
    ctx.addIssue({ code: 'custom', path: ['phoneNumber'], message: 'Not a valid phone number' });
    return z.NEVER;
  }
  return e164;
});
