// Profile fields shared by onboarding and profile edits (spec 2.2, part 8).
import { z } from 'zod';
import { trimmedText } from '../http/validation.ts';
import { textMax } from '../http/text.ts';

/** A handle as typed: trimmed, lowercased and stripped of a leading @ before the pattern check. */
export const handle = z
  .string()
  .max(64)
  .transform((value) => canonicalHandle(value))
  .pipe(z.string().regex(/^[a-z0-9_]{3,30}$/, '3-30 characters of a-z, 0-9 and _'))
  .meta({
    // The rule as a client sees it before canonicalisation (the OpenAPI document).
    pattern: '^\\s*@?[A-Za-z0-9_]{3,30}\\s*$',
    description: '3-30 characters of a-z, 0-9 and _, after the handle is trimmed, lowercased and stripped of a leading @.',
    examples: ['maria_k'],
  });

export function canonicalHandle(value: string): string {
  return value.trim().toLowerCase().replace(/^@/, '');
}

export const fullName = trimmedText(2, textMax.name);
export const bio = z.string().max(textMax.bio).nullable();
