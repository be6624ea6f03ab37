// The OpenAPI 3.1 document, generated from the same zod schemas and endpoint definitions that
// validate requests and shape responses (zod 4 emits JSON Schema 2020-12, OpenAPI 3.1's dialect).
// Schemas named with zod's `.meta({ id })` (PostCard, UserLite, Hub, Session, ...) become
// components.schemas, so client generators make named types; every operation carries examples.
import { z } from 'zod';
import { errorCatalog, type ErrorCode } from '../http/catalog.ts';
import type { Endpoint } from '../http/endpoint.ts';
import { exampleOf } from './examples.ts';

type JsonSchema = Record<string, unknown>;
type Components = Record<string, JsonSchema>;

/**
 * The JSON Schema of a zod schema, its named parts moved to `components` (a request shape that
 * differs from the response shape of the same name is kept as `<name>Input`).
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output', components: Components): JsonSchema {
  const converted = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  const { $schema: _ignored, $defs, ...rest } = converted;
  const renamed = new Map<string, string>();
  const definitions = Object.entries(($defs ?? {}) as Components);
  for (const [name, definition] of definitions) {
    const existing = components[name];
    if (io === 'input' && existing && JSON.stringify(existing) !== JSON.stringify(definition)) renamed.set(name, `${name}Input`);
  }
  const rewrite = <T>(value: T): T =>
    JSON.parse(
      JSON.stringify(value).replace(/"#\/\$defs\/([^"]+)"/g, (_m, name: string) => `"#/components/schemas/${renamed.get(name) ?? name}"`),
    ) as T;
  for (const [name, definition] of definitions) components[renamed.get(name) ?? name] ??= rewrite(definition);
  return rewrite(rest);
}

function errorCodes(definition: Endpoint): ErrorCode[] {
  const codes = new Set<ErrorCode>(definition.errors ?? []);
  if (definition.auth !== 'public') codes.add('UNAUTHORIZED');
  if (definition.level === 2) codes.add('PROFILE_BASICS_REQUIRED');
  if (definition.level === 3) codes.add('PROFILE_BASICS_REQUIRED').add('PHONE_VERIFICATION_REQUIRED');
  if (definition.level === 4) codes.add('PROFILE_BASICS_REQUIRED').add('PHONE_VERIFICATION_REQUIRED').add('HUB_READINESS_REQUIRED');
  // Bodies, queries and path parameters are checked (a NUL character in a path parameter is 422).
  if (definition.body || definition.query || definition.path.includes('{')) codes.add('VALIDATION_FAILED');
  for (const code of Object.values(definition.ids ?? {})) codes.add(code);
  // Every operation: a body sent with any request is read as JSON (400 when it is not JSON or the
  // path is not valid percent-encoding, 413 over 64 KiB), the URL and headers have a size limit
  // (431), and the database may be unreachable (503) or something unexpected fail (500).
  for (const code of ['MALFORMED_REQUEST', 'PAYLOAD_TOO_LARGE', 'HEADERS_TOO_LARGE', 'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'] as const) {
    codes.add(code);
  }
  return [...codes];
}

function operation(definition: Endpoint, components: Components): JsonSchema {
  const parameters: JsonSchema[] = [...definition.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  if (definition.query) {
    const schema = jsonSchema(definition.query, 'input', components) as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      parameters.push({ name, in: 'query', required: schema.required?.includes(name) ?? false, schema: property });
    }
  }
  const responses: Record<string, JsonSchema> = {};
  const status = String(definition.status ?? 200);
  const data = definition.stream ? undefined : jsonSchema(definition.response, 'output', components);
  responses[status] = !data
    ? { description: 'Stream', content: { [definition.stream?.contentType ?? 'text/plain']: { schema: { type: 'string' } } } }
    : {
        description: definition.message ?? 'OK',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['success', 'message', 'data'],
              properties: { success: { const: true }, message: { type: 'string' }, data },
            },
            example: { success: true, message: definition.message ?? 'OK', data: exampleOf(data, components) },
          },
        },
      };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodes(definition)) {
    const [httpStatus] = errorCatalog[code];
    byStatus.set(httpStatus, [...(byStatus.get(httpStatus) ?? []), code]);
  }
  for (const [httpStatus, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const [first] = codes as [ErrorCode];
    responses[String(httpStatus)] = {
      description: codes.map((code) => `${code}: ${errorCatalog[code][1]}`).join(' '),
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorEnvelope' },
          example: { success: false, error: { code: first, message: errorCatalog[first][1], details: {} } },
        },
      },
    };
  }
  return {
    operationId: `${definition.method}${definition.path.replace(/[{}]/g, '').replace(/(^|[/_-])(\w)/g, (_m, _s, c: string) => c.toUpperCase())}`,
    tags: [definition.tag],
    summary: definition.summary,
    ...(definition.description ? { description: definition.description } : {}),
    ...(definition.level ? { 'x-access-level': definition.level } : {}),
    security: definition.auth === 'bearer' ? [{ bearer: [] }] : definition.auth === 'optional' ? [{}, { bearer: [] }] : [],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(definition.body ? { requestBody: requestBody(definition.body, components) } : {}),
    responses,
  };
}

function requestBody(body: z.ZodType, components: Components): JsonSchema {
  const schema = jsonSchema(body, 'input', components);
  return { required: true, content: { 'application/json': { schema, example: exampleOf(schema, components) } } };
}

export function openApiDocument(endpoints: Endpoint[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const components: Components = {};
  for (const definition of endpoints) {
    paths[definition.path] ??= {};
    (paths[definition.path] as Record<string, JsonSchema>)[definition.method] = operation(definition, components);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Opinion-Sharing Service API',
      version: '0.2.0',
      description:
        'Every response uses the envelope of spec 2.1. Access levels (x-access-level): 1 anonymous, 2 registered public ' +
        'profile, 3 phone-confirmed, 4 Hub-ready; a missing level answers its 403 code. Checks run in this order: ' +
        'token (401), access level (403), request shape (422), then existence, visibility and state.',
    },
    servers: [{ url: '/api/v1' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: {
        ...Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
        ErrorEnvelope: {
          type: 'object',
          required: ['success', 'error'],
          properties: {
            success: { const: false },
            error: {
              type: 'object',
              required: ['code', 'message', 'details'],
              properties: {
                code: { enum: Object.keys(errorCatalog) },
                message: { type: 'string' },
                details: { type: 'object' },
              },
            },
          },
        },
      },
    },
    paths,
  };
}
