// fast-check arbitraries from the JSON Schemas of the served OpenAPI document: values that mostly
// fit the schema (so requests get past validation into the handlers) with hostile values mixed in
// at every level (wrong types, NUL and control characters, percent signs, base64url-encoded JSON,
// lengths just past a bound).
import fc from 'fast-check';

type Schema = Record<string, any>;

/** Printable ASCII: what a header value may hold. */
export const headerText = (maxLength = 40) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });

const oddCharacter = fc.constantFrom('\u0000', '\u0000', '\u0001', '%', '%zz', '\\', '"', "'", '\u202e', 'é', '𝔘', '\uD800', '\n');

/** Text with hostile characters mixed in. */
export function text(minLength = 0, maxLength = 30): fc.Arbitrary<string> {
  return fc.string({
    unit: fc.oneof(
      { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
      { weight: 1, arbitrary: oddCharacter },
    ),
    minLength,
    maxLength,
  });
}

/** Text of the allowed length that holds a NUL character (which PostgreSQL text cannot store). */
function withNul(minLength: number, maxLength: number): fc.Arbitrary<string> {
  return text(Math.max(0, minLength - 1), Math.max(0, maxLength - 1)).map((s) => `${s.slice(0, 1)}\u0000${s.slice(1)}`);
}

/** JSON arrays of the kind a keyset cursor holds, base64url encoded. */
export const encodedJson = fc
  .array(fc.oneof(text(0, 12), fc.integer(), fc.double({ noNaN: true }), fc.uuid(), fc.constant(null)), { minLength: 0, maxLength: 3 })
  .map((value) => Buffer.from(JSON.stringify(value)).toString('base64url'));

const hostile: fc.Arbitrary<unknown> = fc.oneof(
  text(0, 20),
  encodedJson,
  fc.constantFrom('', 'a\u0000b', '%zz', '-1', '1e309', 'null', 'true'),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
);

function stringFor(schema: Schema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 40;
  const options: fc.Arbitrary<string>[] = [];
  if (schema.format === 'uuid') options.push(fc.uuid());
  if (typeof schema.pattern === 'string') options.push(fc.stringMatching(new RegExp(schema.pattern)));
  if (options.length === 0) options.push(text(min, Math.min(max, 40)), text(min, Math.min(max, 40)), withNul(min, Math.min(max, 40)));
  if (schema.maxLength !== undefined) options.push(fc.constant('x'.repeat(max)), fc.constant('x'.repeat(max + 1)));
  // Whitespace only, longer than the minimum: text a server may trim to nothing.
  options.push(fc.constantFrom(' '.repeat(min + 1), ` \n${' '.repeat(min)}\t`));
  return fc.oneof(...options);
}

function fitting(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  if (depth > 6) return fc.constant(null);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (union) return fc.oneof(...union.map((s) => valueFor(s, depth + 1)));
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) return valueFor(schema.allOf[0] as Schema, depth + 1);
  const type = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  return fc.oneof(
    ...type.map((t): fc.Arbitrary<unknown> => {
      switch (t) {
        case 'string':
          return stringFor(schema);
        case 'integer':
          return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1_000_000 });
        case 'number':
          return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
        case 'boolean':
          return fc.boolean();
        case 'null':
          return fc.constant(null);
        case 'array':
          return fc.array(valueFor((schema.items as Schema | undefined) ?? {}, depth + 1), {
            minLength: schema.minItems ?? 0,
            maxLength: Math.min(schema.maxItems ?? 4, 4),
          });
        case 'object': {
          const properties = (schema.properties ?? {}) as Record<string, Schema>;
          const record = Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, valueFor(s, depth + 1)]));
          return fc.record(record, { requiredKeys: (schema.required ?? []) as string[] });
        }
        default:
          return hostile;
      }
    }),
  );
}

/** A value for a schema: usually fitting it, sometimes hostile. */
export function valueFor(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 20, arbitrary: fitting(schema, depth) }, { weight: 1, arbitrary: hostile });
}
