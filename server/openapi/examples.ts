// An example value for a JSON Schema (2020-12, as zod emits it), so every operation in the OpenAPI
// document carries a request and response example. A schema's own `examples` (zod `.meta({ examples })`)
// win; otherwise the value follows the schema: consts and the first enum value, formats, lengths
// and bounds, every required and optional property, one array item, nullable types as their value.
type JsonSchema = Record<string, unknown>;

const sampleStrings: Record<string, string> = {
  id: '7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90',
  url: 'https://opinion.example/p/7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90',
  at: '2026-11-01T12:00:00.000Z',
};

function sampleString(name: string, schema: JsonSchema): string {
  if (schema.format === 'uuid' || /(^id$|Id$)/.test(name)) return sampleStrings.id as string;
  if (schema.format === 'date-time' || /At$/.test(name)) return sampleStrings.at as string;
  if (schema.format === 'uri' || /(^url$|Url$)/.test(name)) return sampleStrings.url as string;
  if (name === 'code') return '1234';
  if (name === 'contentType') return 'image/jpeg';
  if (name === 'checksum') return '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
  if (name === 'customLink') return 'city-runners';
  if (/phone/i.test(name)) return name === 'phoneCountryCode' ? '+1' : '5550001234';
  if (/username/i.test(name)) return 'maria_k';
  if (/name/i.test(name)) return 'Maria Kovacs';
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : 40;
  const text = name ? `example ${name}` : 'example';
  return text.length < min ? text.padEnd(min, 'x') : text.slice(0, Math.max(max, 1));
}

export function exampleOf(schema: JsonSchema, components: Record<string, JsonSchema>, name = '', depth = 0): unknown {
  if (depth > 8) return null;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (typeof schema.$ref === 'string') {
    const target = components[schema.$ref.split('/').at(-1) as string];
    return target ? exampleOf(target, components, name, depth + 1) : null;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key] as JsonSchema[] | undefined;
    if (options) return exampleOf(options.find((option) => option.type !== 'null') ?? options[0] ?? {}, components, name, depth + 1);
  }
  if (Array.isArray(schema.allOf)) return exampleOf((schema.allOf[0] ?? {}) as JsonSchema, components, name, depth + 1);
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') as string) : (schema.type as string | undefined);
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      return Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, exampleOf(value, components, key, depth + 1)]));
    }
    case 'array': {
      const items = exampleOf((schema.items ?? {}) as JsonSchema, components, name.replace(/s$/, ''), depth + 1);
      return Array.from({ length: Math.max(1, typeof schema.minItems === 'number' ? schema.minItems : 1) }, () => items);
    }
    case 'string':
      return sampleString(name, schema);
    case 'integer':
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 0;
      const max = typeof schema.maximum === 'number' ? schema.maximum : min + 10;
      return Math.min(Math.max(min, type === 'integer' ? 1 : 1), max);
    }
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return null;
  }
}
