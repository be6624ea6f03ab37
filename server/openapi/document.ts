// The OpenAPI 3.1 document, generated from the same zod schemas and endpoint definitions that
// validate requests and shape responses (zod 4 emits JSON Schema 2020-12, OpenAPI 3.1's dialect).
// Schemas named with zod's `.meta({ id })` (PostCard, UserLite, Hub, Session, ...) become
// components.schemas, so client generators make named types. Every operation, whoever adds it:
//   * responses are open (clients ignore fields they do not know, so a field can be added), requests
//     strict (an unknown field is 422);
//   * ids in responses are `format: uuid` and times `format: date-time` (by the naming rule of the
//     contract: `id`, `...Id`, `..._id`, `...Ids` items; `...At`), path ids too;
//   * the error codes it can answer are data: each error response names its codes
//     (`x-error-codes`, and the envelope's `error.code` narrowed to them), with typed `details`
//     (`fields` on 422, `retryAfterSeconds` on 429) and the `Retry-After` header on 429 and 503;
//   * every response declares `X-Request-Id`, and every operation accepts one;
//   * every body and response carries an example, valid against its schema (examples.ts);
//   * every request string, array and integer states the bound the server enforces, from the zod
//     schema that enforces it (path ids from ids.ts, other path parameters from the endpoint's
//     `pathParameters`), and every integer its format (int32 or int64, by its bounds).
// Error responses that are the same for many operations are components.responses.
import { z } from 'zod';
import { errorCatalog, type ErrorCode } from '../http/catalog.ts';
import { ladderText, levelCodes } from '../http/access-levels.ts';
import type { Endpoint } from '../http/endpoint.ts';
import { takesIdempotencyKey } from '../http/idempotency.ts';
import { idField } from '../http/ids.ts';
import { usableRequestId } from '../http/request-context.ts';
import { writeLimitDocs } from '../http/write-limits.ts';
import { errorExample, exampleOf } from './examples.ts';

type JsonSchema = Record<string, unknown>;
type Components = Record<string, JsonSchema>;

/** A property whose name says it holds an id (the contract's naming: `id`, `postId`, `hub_id`, `hubIds`). */
const idName = /^(id|.*Id|.*_id)$/;
const idListName = /^.*Ids$/;
const timeName = /^.*At$/;

/** The longest id (a UUID's 36 characters) and time (RFC 3339 with nanoseconds and an offset) a response holds. */
const idMaxLength = (z.toJSONSchema(idField) as { maxLength: number }).maxLength;
const timeMaxLength = '2026-01-01T00:00:00.000000000+00:00'.length;
/** The longest envelope message (a success message, or an error code's catalogued one): checked below. */
const messageMaxLength = 200;
const int32 = 2 ** 31 - 1;

/** Every integer's format, by the bounds its schema states: int32 when they fit, else int64. */
function integerFormats(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(integerFormats);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = Object.fromEntries(Object.entries(schema as JsonSchema).map(([key, value]) => [key, integerFormats(value)])) as JsonSchema;
  const isInteger = out.type === 'integer' || (Array.isArray(out.type) && out.type.includes('integer'));
  if (isInteger && out.format === undefined && typeof out.minimum === 'number' && typeof out.maximum === 'number') {
    out.format = out.minimum >= -int32 - 1 && out.maximum <= int32 ? 'int32' : 'int64';
  }
  return out;
}

/** Response schemas: open to new fields, with the id and time formats their names promise. */
function openOutput(schema: unknown, name = ''): unknown {
  if (Array.isArray(schema)) return schema.map((item) => openOutput(item, name));
  if (schema === null || typeof schema !== 'object') return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema as JsonSchema)) {
    if (key === 'additionalProperties' && value === false) continue;
    if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([property, sub]) => [property, openOutput(sub, property)]),
      );
    } else if (key === 'items') {
      out.items = openOutput(value, idListName.test(name) ? 'id' : '');
    } else if (key === 'anyOf' || key === 'oneOf' || key === 'allOf') {
      out[key] = (value as unknown[]).map((option) => openOutput(option, name));
    } else {
      out[key] = typeof value === 'object' ? openOutput(value, '') : value;
    }
  }
  const isString = out.type === 'string' || (Array.isArray(out.type) && out.type.includes('string'));
  if (isString && out.format === undefined && out.enum === undefined && out.const === undefined) {
    if (idName.test(name)) out.format = 'uuid';
    else if (timeName.test(name)) out.format = 'date-time';
  }
  // The longest an id or a time can be, whatever the field.
  if (isString && out.maxLength === undefined && out.format === 'uuid') out.maxLength = idMaxLength;
  if (isString && out.maxLength === undefined && out.format === 'date-time') out.maxLength = timeMaxLength;
  return out;
}

/**
 * The JSON Schema of a zod schema, its named parts moved to `components`. Response shapes are
 * converted first (document() does all responses before any request), so a request shape that
 * differs from the response shape of the same name is kept as `<name>Input`.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output', components: Components): JsonSchema {
  const converted = integerFormats(z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' })) as JsonSchema;
  const { $schema: _ignored, $defs, ...rest } = (io === 'output' ? openOutput(converted) : converted) as JsonSchema;
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

/** Every code the operation can answer, in the contract's order of checks. */
export function errorCodes(definition: Endpoint): ErrorCode[] {
  const codes = new Set<ErrorCode>(definition.errors ?? []);
  if (!definition.anyClientVersion) codes.add('CLIENT_UPDATE_REQUIRED');
  if (definition.limit) codes.add('RATE_LIMITED');
  if (definition.auth !== 'public') codes.add('UNAUTHORIZED');
  for (const code of levelCodes(definition.level)) codes.add(code);
  // Bodies, queries and path parameters are checked (a NUL character in a path parameter is 422).
  if (definition.body || definition.query || definition.path.includes('{')) codes.add('VALIDATION_FAILED');
  for (const code of Object.values(definition.ids ?? {})) codes.add(code);
  // The Idempotency-Key header: its shape (422), a key still running (409) or used for another request (422).
  if (takesIdempotencyKey(definition)) {
    for (const code of ['VALIDATION_FAILED', 'IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED'] as const) codes.add(code);
  }
  for (const { notFound } of Object.values(definition.pathParameters ?? {})) codes.add(notFound);
  // Every operation: a body sent with any request is read as JSON (400 when it is not JSON or the
  // path is not valid percent-encoding, 413 over 64 KiB), the URL and headers have a size limit
  // (431), and the database may be unreachable (503) or something unexpected fail (500).
  for (const code of ['MALFORMED_REQUEST', 'PAYLOAD_TOO_LARGE', 'HEADERS_TOO_LARGE', 'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'] as const) {
    codes.add(code);
  }
  return [...codes];
}

const pascal = (code: string) => code.toLowerCase().replace(/(^|_)(\w)/g, (_m, _s, c: string) => c.toUpperCase());
const requestIdHeader = { $ref: '#/components/headers/X-Request-Id' };
/** Read-Floor (server/http/read-floor.ts): a WAL position and its MAC. */
const readFloorSchema = {
  type: 'string',
  maxLength: 64,
  pattern: '^[0-9A-F]{1,8}/[0-9A-F]{1,8}\\.[A-Za-z0-9_-]{22}$',
  example: '0/1A2B3C4D.q83vEjRZ2NwS5eAXH2Yb0g',
};
const retryAfterHeader = { $ref: '#/components/headers/Retry-After' };
/** The RateLimit headers (server/http/rate-limit-headers.ts), on the answers of operations a limit counts. */
const rateLimitHeaders = {
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
  RateLimit: { $ref: '#/components/headers/RateLimit' },
};
const countedByLimits = (definition: Endpoint) => Boolean(definition.limit || definition.rateLimits?.length);

/** The error response for a status and the codes an operation answers with it (shared when equal). */
function errorResponse(status: number, codes: ErrorCode[], fields: string[], responses: Components): JsonSchema {
  const name = codes.map(pascal).join('Or');
  const shared = fields.length === 0;
  const key = shared ? name : undefined;
  if (key && responses[key]) return { $ref: `#/components/responses/${key}` };
  // The envelope, with `error.code` narrowed to the codes this response can carry.
  const schema: JsonSchema = {
    type: 'object',
    required: ['success', 'error'],
    properties: {
      success: { const: false },
      error: {
        type: 'object',
        required: ['code', 'message', 'details'],
        properties: {
          code: codes.length === 1 ? { const: codes[0] } : { enum: codes },
          message: { type: 'string', maxLength: messageMaxLength },
          details:
            status === 429
              ? {
                  type: 'object',
                  required: ['retryAfterSeconds'],
                  properties: { retryAfterSeconds: { $ref: '#/components/schemas/RetryAfterSeconds' } },
                }
              : codes.length === 1 && codes[0] === 'CLIENT_UPDATE_REQUIRED'
                ? { $ref: '#/components/schemas/ClientUpdateDetails' }
                : { $ref: '#/components/schemas/ErrorDetails' },
        },
      },
    },
  };
  const response: JsonSchema = {
    description: codes.map((code) => `${code}: ${errorCatalog[code][1]}`).join(' '),
    'x-error-codes': codes,
    headers: {
      'X-Request-Id': requestIdHeader,
      ...(status === 429 || status === 503 || codes.includes('IDEMPOTENCY_KEY_IN_USE') ? { 'Retry-After': retryAfterHeader } : {}),
      ...(status === 429 ? rateLimitHeaders : {}),
    },
    content: {
      'application/json': {
        schema,
        example: errorExample(codes[0] as ErrorCode, fields),
      },
    },
  };
  if (!key) return response;
  responses[key] = response;
  return { $ref: `#/components/responses/${key}` };
}

/** The request body's property names, for a realistic 422 example (`details.fields`). */
function bodyFields(schema: JsonSchema | undefined): string[] {
  const properties = Object.keys((schema?.properties ?? {}) as JsonSchema);
  const required = (schema?.required ?? []) as string[];
  return [...required, ...properties.filter((name) => !required.includes(name))];
}

interface Operation {
  definition: Endpoint;
  responses: Record<string, JsonSchema>;
  data: JsonSchema | undefined;
}

/** A page's `items` hold at most the largest `limit` its query accepts (server/http/paging.ts). */
function pageBound(definition: Endpoint, data: JsonSchema | undefined): JsonSchema | undefined {
  const items = (data?.properties as Record<string, JsonSchema> | undefined)?.items;
  if (!definition.query || items?.type !== 'array' || items.maxItems !== undefined) return data;
  const query = z.toJSONSchema(definition.query, { io: 'input', unrepresentable: 'any' }) as {
    properties?: { limit?: { maximum?: number } };
  };
  const maximum = query.properties?.limit?.maximum;
  if (maximum === undefined) return data;
  return { ...data, properties: { ...(data?.properties as JsonSchema), items: { ...items, maxItems: maximum } } };
}

function responsesOf(definition: Endpoint, components: Components): Operation {
  const data = definition.stream ? undefined : pageBound(definition, jsonSchema(definition.response, 'output', components));
  const success = (description: string): JsonSchema =>
    !data
      ? {
          description: 'The stream',
          headers: { 'X-Request-Id': requestIdHeader },
          content: { [definition.stream?.contentType ?? 'text/plain']: { schema: { type: 'string' } } },
        }
      : {
          description,
          headers: {
            'X-Request-Id': requestIdHeader,
            ...(takesIdempotencyKey(definition) ? { 'Idempotent-Replayed': { $ref: '#/components/headers/Idempotent-Replayed' } } : {}),
            ...(countedByLimits(definition) ? rateLimitHeaders : {}),
            ...(definition.auth !== 'public' ? { 'Read-Floor': { $ref: '#/components/headers/Read-Floor' } } : {}),
          },
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['success', 'message', 'data'],
                properties: { success: { const: true }, message: { type: 'string', maxLength: messageMaxLength }, data },
              },
              example: { success: true, message: definition.message ?? 'OK', data: exampleOf(data, components) },
            },
          },
        };
  // An endpoint that answers 200 or 201 by its data (statusOf) lists both, each with its description.
  const responses: Record<string, JsonSchema> = definition.statusOf
    ? Object.fromEntries(Object.entries(definition.statusOf.descriptions).map(([status, description]) => [status, success(description)]))
    : { [String(definition.status ?? 200)]: success(definition.message ?? 'OK') };
  return { definition, data, responses };
}

function operation({ definition, responses }: Operation, components: Components, shared: Components): JsonSchema {
  const parameters: JsonSchema[] = [...definition.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => {
    const form = definition.pathParameters?.[name as string];
    const schema = form ? jsonSchema(form.schema, 'input', components) : { type: 'string', format: 'uuid', maxLength: idMaxLength };
    return { name, in: 'path', required: true, schema, example: exampleOf(schema, components, name) };
  });
  if (definition.query) {
    const schema = jsonSchema(definition.query, 'input', components) as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      parameters.push({ name, in: 'query', required: schema.required?.includes(name) ?? false, schema: property });
    }
  }
  parameters.push({ $ref: '#/components/parameters/X-Request-Id' }, { $ref: '#/components/parameters/X-Client-Version' });
  if (takesIdempotencyKey(definition)) parameters.push({ $ref: '#/components/parameters/Idempotency-Key' });
  if (definition.auth !== 'public') parameters.push({ $ref: '#/components/parameters/Read-Floor' });
  const body = definition.body ? jsonSchema(definition.body, 'input', components) : undefined;
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodes(definition)) {
    const [httpStatus] = errorCatalog[code];
    byStatus.set(httpStatus, [...(byStatus.get(httpStatus) ?? []), code]);
  }
  const all: Record<string, JsonSchema> = { ...responses };
  for (const [httpStatus, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const fields = httpStatus === 422 && codes.includes('VALIDATION_FAILED') ? bodyFields(body).slice(0, 1) : [];
    all[String(httpStatus)] = errorResponse(httpStatus, codes, fields, shared);
  }
  return {
    operationId: `${definition.method}${definition.path.replace(/[{}]/g, '').replace(/(^|[/_-])(\w)/g, (_m, _s, c: string) => c.toUpperCase())}`,
    tags: [definition.tag],
    summary: definition.summary,
    ...(definition.description || definition.limit ? { description: describe(definition) } : {}),
    ...(definition.level ? { 'x-access-level': definition.level } : {}),
    ...(definition.limit ? { 'x-write-limits': writeLimitDocs(definition.limit) } : {}),
    ...(countedByLimits(definition)
      ? {
          'x-rate-limits': [
            ...(definition.limit ? writeLimitDocs(definition.limit).map((l) => l.name) : []),
            ...(definition.rateLimits ?? []),
          ],
        }
      : {}),
    security: definition.auth === 'bearer' ? [{ bearer: [] }] : definition.auth === 'optional' ? [{}, { bearer: [] }] : [],
    parameters,
    ...(body
      ? { requestBody: { required: true, content: { 'application/json': { schema: body, example: exampleOf(body, components) } } } }
      : {}),
    responses: all,
  };
}

const windowText = (seconds: number) => (seconds % 3600 === 0 ? `${seconds / 3600} hour(s)` : `${seconds / 60} minutes`);

/** The endpoint's description and the write limits it counts under (their defaults; WRITE_LIMITS changes them). */
function describe(definition: Endpoint): string {
  const limits = definition.limit
    ? 'Write limit: ' +
      writeLimitDocs(definition.limit)
        .map((l) => `\`${l.name}\`, at most ${l.max} in any ${windowText(l.windowSeconds)} per ${l.per}`)
        .join('; ') +
      ' (defaults), then 429 RATE_LIMITED with retryAfterSeconds and Retry-After, and nothing written.'
    : '';
  return [definition.description, limits].filter(Boolean).join(' ');
}

/** The form of X-Request-Id, as the server reads it (header and parameter). */
const { $schema: _dialect, ...requestIdSchema } = z.toJSONSchema(usableRequestId) as JsonSchema;
/** Retry-After and retryAfterSeconds: whole seconds, at most a write limit's window (an int in SQL). */
const retryAfterSchema = { type: 'integer', format: 'int32', minimum: 1, maximum: int32 };

const description = [
  'The REST API of the mobile app. Every response uses the envelope of spec 2.1: `{ success: true, message, data }`, or',
  '`{ success: false, error: { code, message, details } }` with the status of `code` (one status and one message per code).',
  'Each error response lists the codes that operation can answer (`x-error-codes`, and `error.code` narrowed to them);',
  '`details.fields` maps each refused request field to a message (422 VALIDATION_FAILED), `details.retryAfterSeconds`',
  'says when to try again (429 RATE_LIMITED, with a `Retry-After` header; 503 sends `Retry-After` too).',
  '',
  '**Responses may gain fields: clients must ignore fields they do not know.** Requests are strict: an unknown field is 422.',
  '',
  `Access levels (\`x-access-level\`): ${ladderText}; a missing`,
  'level answers its 403 code. Checks run in this order: token (401), access level (403), request shape (422), then',
  "existence, visibility and state. Every response carries `X-Request-Id` (the client's own when it sent a usable one).",
  '',
  'Retries are safe with `Idempotency-Key` (every POST, PUT, PATCH and DELETE with a bearer token): send a new random',
  'key (a UUID) with each new request and the same key with each retry of it. A retry gets the first answer byte for',
  'byte with `Idempotent-Replayed: true` and runs nothing again; while the first still runs it answers 409',
  'IDEMPOTENCY_KEY_IN_USE (`Retry-After: 1`); the key with another method, path or body answers 422',
  "IDEMPOTENCY_KEY_REUSED. Keys are the user's and live 24 hours. Answers given after the request ran are kept, errors",
  'included (a 404 or 409 is replayed too); 401, 429 and 5xx answers, and refusals before it ran (401, 403 level,',
  '422 shape), are not: a retry is checked and runs again.',
  '',
  'Every `200` answer to a `GET` (the notification stream aside) carries a strong `ETag`, `Cache-Control: private, no-cache` and',
  '`Vary: Authorization`; send the tag back in `If-None-Match` and an unchanged answer is `304 Not Modified` with no body.',
  'Image URLs are signed for the start of the hour and valid two hours, so an unchanged answer keeps its tag within the hour.',
  'Operations that a per-user or per-address limit counts (`x-rate-limits`) answer `RateLimit-Policy` and `RateLimit` headers',
  '(draft-ietf-httpapi-ratelimit-headers). The app names itself in `X-Client-Version` (`ios/2.1.0`): below the oldest version',
  'served (GET /auth/login-config lists them) every other operation answers 426 CLIENT_UPDATE_REQUIRED, before any other check.',
].join('\n');

export function openApiDocument(endpoints: Endpoint[]): JsonSchema {
  const messages = [
    ...endpoints.map((definition) => definition.message ?? 'OK'),
    ...Object.values(errorCatalog).map(([, message]) => message),
  ];
  const long = messages.find((message) => message.length > messageMaxLength);
  if (long) throw new Error(`An envelope message is longer than the document's ${messageMaxLength} characters: ${long}`);
  const components: Components = {};
  const shared: Components = {};
  // All responses first, so response shapes keep the plain component names (see jsonSchema).
  const operations = endpoints.map((definition) => responsesOf(definition, components));
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const entry of operations) {
    paths[entry.definition.path] ??= {};
    (paths[entry.definition.path] as Record<string, JsonSchema>)[entry.definition.method] = operation(entry, components, shared);
  }
  const tags = [...new Set(endpoints.map((definition) => definition.tag))].map((name) => ({ name, description: `${name} endpoints.` }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Opinion-Sharing Service API',
      version: '0.2.0',
      description,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    // The one server is the app's public API (not an internal one).
    servers: [{ url: '/api/v1', 'x-internal': false }],
    tags,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'The access token of a session (POST /auth/otp/verify, /auth/idp/token, /auth/anonymous/session, /auth/refresh), a JWS ' +
            "following RFC8725's practices: one algorithm (HS256; verification accepts no other, never `none`), typed (its `typ` " +
            'claim says access; refresh tokens are not JWTs) and short-lived (`exp` is required; the session says `expiresIn`).',
        },
      },
      headers: {
        'X-Request-Id': {
          description:
            "The request's id: the client's own X-Request-Id when it sent a usable one, else a new UUID. Logged with the request.",
          schema: requestIdSchema,
        },
        'Retry-After': { description: 'Seconds to wait before trying again.', schema: retryAfterSchema },
        'RateLimit-Policy': {
          description:
            'The limits that count this operation (draft-ietf-httpapi-ratelimit-headers): `"<name>";q=<count>;w=<window seconds>`, ' +
            'comma-separated, the names those of `x-rate-limits`. Sent on every answer in which a limit counted the request, 429 included.',
          schema: { type: 'string', maxLength: 1024, example: '"comments";q=120;w=3600' },
        },
        RateLimit: {
          description:
            'For each limit of RateLimit-Policy: `"<name>";r=<requests left>;t=<seconds until the window frees one>`; a 429 has `r=0` ' +
            'and `t` equal to Retry-After. A request that failed after its limit counted does not count (its answer says so).',
          schema: { type: 'string', maxLength: 1024, example: '"comments";r=119;t=3600' },
        },
        'Idempotent-Replayed': {
          description:
            '`true` on an answer replayed for a retry with the same Idempotency-Key (the request did not run again); absent otherwise.',
          schema: { type: 'string', const: 'true' },
        },
        'Read-Floor': {
          description:
            "With read replicas: where the session's reads may be served from (a WAL position, signed for the session). Keep the last " +
            'one received and send it back with every request of the session: reads then spare the primary. Opaque; absent without replicas.',
          schema: readFloorSchema,
        },
      },
      parameters: {
        'X-Request-Id': {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description:
            'An id of the client for this request (1-128 characters of A-Z a-z 0-9 . _ : -), echoed in the response and the log.',
          schema: requestIdSchema,
        },
        'X-Client-Version': {
          name: 'X-Client-Version',
          in: 'header',
          required: false,
          description:
            'The app and its version, `<ios|android>/<major.minor.patch>` (`ios/2.1.0`). Below the oldest version served for ' +
            'its platform (GET /auth/login-config lists them), every operation but login-config answers 426 ' +
            'CLIENT_UPDATE_REQUIRED with `details.minimumVersion` and `details.updateUrl`. Without the header, or with one ' +
            'not of this form, the request is served.',
          schema: { type: 'string', maxLength: 64, example: 'ios/2.1.0' },
        },
        'Read-Floor': {
          name: 'Read-Floor',
          in: 'header',
          required: false,
          description:
            'The last Read-Floor answered for this session, sent back as received: a read may then be checked and served by a read ' +
            'replica without the primary, and still shows everything the session wrote. Without it (or with one of another session) ' +
            'the request is served as usual.',
          schema: readFloorSchema,
        },
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes a retry safe: a new random key (a UUID) per request, the same key for its retries (1-255 printable ASCII ' +
            "characters; the user's, for 24 hours). A retry with the same method, path and body gets the first answer again, " +
            'byte for byte, with `Idempotent-Replayed: true`, and does not run again; 409 IDEMPOTENCY_KEY_IN_USE while the first ' +
            'still runs (Retry-After: 1); 422 IDEMPOTENCY_KEY_REUSED for another method, path or body. 401, 429 and 5xx answers ' +
            'are not kept.',
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]{1,255}$' },
          example: '3f1c6b1e-8d2a-4c55-9a57-2f0e6c1d9b4a',
        },
      },
      responses: Object.fromEntries(Object.entries(shared).sort(([a], [b]) => a.localeCompare(b))),
      schemas: {
        ...Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
        ErrorDetails: {
          type: 'object',
          description: 'What the client needs to act on an error: `{}` unless stated.',
          properties: {
            fields: {
              type: 'object',
              description: '422 VALIDATION_FAILED: for each refused request field, by its JSON path (`slider.leftLabel`), a message.',
              additionalProperties: { type: 'string', maxLength: messageMaxLength },
            },
            retryAfterSeconds: { $ref: '#/components/schemas/RetryAfterSeconds' },
            minimumVersion: {
              type: 'string',
              maxLength: 32,
              description: '426 CLIENT_UPDATE_REQUIRED: the oldest app version served on this platform.',
            },
            updateUrl: {
              type: 'string',
              maxLength: 1024,
              description: '426 CLIENT_UPDATE_REQUIRED: where the app is updated (CLIENT_UPDATE_URLS).',
            },
          },
        },
        ClientUpdateDetails: {
          type: 'object',
          description: '426 CLIENT_UPDATE_REQUIRED: the app is older than the oldest version served on its platform.',
          required: ['minimumVersion', 'updateUrl'],
          properties: {
            minimumVersion: {
              type: 'string',
              maxLength: 32,
              description: 'The oldest version served (major.minor.patch).',
              example: '2.1.0',
            },
            updateUrl: {
              type: 'string',
              maxLength: 1024,
              description: 'Where the app is updated (CLIENT_UPDATE_URLS).',
              example: 'https://apps.apple.com/app/id0000000000',
            },
          },
        },
        RetryAfterSeconds: {
          ...retryAfterSchema,
          description: '429 RATE_LIMITED: seconds until the request may succeed (the Retry-After header says the same).',
        },
      },
    },
    paths,
  };
}
