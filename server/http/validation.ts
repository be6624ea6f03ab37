// Request validation with zod. A failure is 422 VALIDATION_FAILED with details.fields mapping each
// JSON path to a human message (contract section 1). A NUL character anywhere in a body, query or
// path parameter is a field error too (PostgreSQL text cannot hold one). Path ids are otherwise not
// validated here: an id the server never issued is simply unknown (see ids.ts).
import { z } from 'zod';
import { ApiError } from './errors.ts';

/**
 * Text the server trims before it counts: `min`-`max` characters once leading and trailing
 * whitespace is removed. The OpenAPI document states the rule as a client sends the text (a
 * `pattern` that needs `min` characters between the first and the last non-space one), so a name
 * of spaces fails in the client as it fails here.
 */
export function trimmedText(min: number, max: number) {
  const pattern = min <= 1 ? '\\S' : `\\S[\\s\\S]{${min - 2},}\\S`;
  return z
    .string()
    .trim()
    .min(min)
    .max(max)
    .meta({ pattern, description: `${min}-${max} characters once leading and trailing whitespace is removed.` });
}

export function fieldErrors(error: z.ZodError): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) fields[[...issue.path, key].join('.')] = 'Unknown field';
      continue;
    }
    const key = issue.path.length > 0 ? issue.path.join('.') : '(body)';
    // At most the envelope's message length (the OpenAPI document's ErrorDetails says 200).
    fields[key] ??= issue.code === 'invalid_type' && issue.input === undefined ? 'Required' : issue.message.slice(0, 200);
  }
  return fields;
}

/**
 * Text PostgreSQL cannot store: the NUL character. One check for every body, query and path
 * parameter, before any schema: each string holding one is a field error.
 */
function nulFields(input: unknown, path: string[], fields: Record<string, string>): Record<string, string> {
  if (typeof input === 'string') {
    if (input.includes('\u0000')) fields[path.length > 0 ? path.join('.') : '(body)'] = 'Must not contain NUL characters';
  } else if (Array.isArray(input)) {
    input.forEach((item, index) => nulFields(item, [...path, String(index)], fields));
  } else if (typeof input === 'object' && input !== null) {
    for (const [key, value] of Object.entries(input)) nulFields(value, [...path, key], fields);
  }
  return fields;
}

export function rejectNul(input: unknown): void {
  const fields = nulFields(input, [], {});
  if (Object.keys(fields).length > 0) throw new ApiError('VALIDATION_FAILED', { fields });
}

export function parseOrFail<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const nul = nulFields(input, [], {});
  const result = schema.safeParse(input);
  if (!result.success || Object.keys(nul).length > 0) {
    throw new ApiError('VALIDATION_FAILED', { fields: { ...(result.success ? {} : fieldErrors(result.error)), ...nul } });
  }
  return result.data;
}

/** `true` / `false` in a query string. */
export const queryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');
