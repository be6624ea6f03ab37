// Request validation with zod. A failure is 422 VALIDATION_FAILED with details.fields mapping each
// JSON path to a human message (contract section 1). Path ids are not validated here: an id the
// server never issued is simply unknown (see ids.ts).
import { z } from 'zod';
import { ApiError } from './errors.ts';

export function fieldErrors(error: z.ZodError): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) fields[[...issue.path, key].join('.')] = 'Unknown field';
      continue;
    }
    const key = issue.path.length > 0 ? issue.path.join('.') : '(body)';
    fields[key] ??= issue.code === 'invalid_type' && issue.input === undefined ? 'Required' : issue.message;
  }
  return fields;
}

export function parseOrFail<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new ApiError('VALIDATION_FAILED', { fields: fieldErrors(result.error) });
  return result.data;
}

/** `true` / `false` in a query string. */
export const queryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');
