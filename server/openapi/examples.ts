// Example values for the OpenAPI document, so every request body and response carries one that a
// client author can read as real data: valid against its own schema (test/http/openapi/openapi.test.ts
// checks each one with a JSON Schema validator, and Redocly's lint does too) and plausible (a
// vote summary whose counts add up, a session of a Hub-ready user, names and texts a person would
// write). A schema's own `examples` (zod `.meta({ examples })`) win; then the named components and
// properties below; otherwise the value follows the schema: consts and the first enum value,
// formats, lengths and bounds, every property, one array item, nullable types as their value.
import { errorCatalog, type ErrorCode } from '../http/catalog.ts';

type JsonSchema = Record<string, unknown>;

const uuid = '7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90';
const time = '2026-11-21T10:00:00.000Z';

/** Strings by property name: what such a field holds in this API. */
const strings: Record<string, string> = {
  accessToken: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI3YjBlMWMzYSIsInNpZCI6IjJmNWQxYThlIn0.c2lnbmF0dXJl',
  refreshToken: 'Qk3v9x2mR8pL0tYwZc5nH7sJ4aE1uG6d',
  idToken: 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImFiYzEyMyJ9.eyJzdWIiOiJ1c2VyLTEyMyJ9.c2lnbmF0dXJl',
  token: 'Zx8q2LmN5vR1tY7wK3pD9sBf',
  cursor: 'WzE3OTk5MjM2MDAwMDAwMDAsIjdiMGUxYzNhIl0',
  nextCursor: 'WzE3OTk5MjM2MDAwMDAwMDAsIjdiMGUxYzNhIl0',
  deviceId: 'ios-2F9C6B1E-7A4D',
  code: '4821',
  phoneCountryCode: '+44',
  phoneNumber: '7700900123',
  maskedPhoneNumber: '+44•••••••123',
  username: 'maria_k',
  publicUsername: 'maria_k',
  handle: 'maria_k',
  fullName: 'Maria Kovacs',
  displayName: 'Maria K.',
  name: 'Sunday Book Club',
  hubName: 'Sunday Book Club',
  description: 'One book a month, argued about over coffee.',
  bio: 'Urban planner. Cycling, novels and too much coffee.',
  title: 'What happened when Ghent closed its centre to cars',
  text: 'We tried it for a summer: quieter streets, and the shops did better than expected.',
  thoughtText: 'Four-day weeks would make most teams more productive, not less.',
  sliderText: 'Four-day work week?',
  leftLabel: 'Never',
  rightLabel: 'Yesterday',
  details: 'The same link posted in every comment thread.',
  shareText: 'What do you think? https://opinion.example/p/7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90',
  q: 'maria',
  contentType: 'image/jpeg',
  checksum: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  customLink: 'sunday-book-club',
  termsVersion: '2026-11-01',
  tokenSuffix: 'a1B2c3D4',
  message: 'OK',
  locale: 'en-GB',
};

const urls: Record<string, string> = {
  url: 'https://opinion.example/p/7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90',
  logoUrl: 'https://opinion.example/logo.png',
  termsUrl: 'https://opinion.example/legal/terms',
  privacyUrl: 'https://opinion.example/legal/privacy',
  inviteUrl: 'https://opinion.example/hub-invitations/7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90',
  uploadUrl: 'https://uploads.opinion.example/opinion-uploads/u/7b0e1c3a.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=900',
};
const photoUrl = 'https://uploads.opinion.example/opinion-uploads/p/7b0e1c3a.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600';

/** Numbers by property name. */
const numbers: Record<string, number> = {
  totalVotes: 12,
  leftCount: 3,
  neutralCount: 4,
  rightCount: 5,
  count: 2,
  followers: 128,
  following: 87,
  posts: 42,
  votesCast: 57,
  votesReceived: 230,
  memberCount: 24,
  messageCount: 5,
  replyCount: 2,
  repostCount: 3,
  commentCount: 7,
  unreadCount: 3,
  hubUnreadCount: 1,
  expiresIn: 900,
  refreshExpiresIn: 2592000,
  resendAfterSeconds: 60,
  expiresInSeconds: 300,
  retryAfterSeconds: 30,
  length: 4,
  maxAttempts: 5,
  contentLength: 48213,
  size: 48213,
  accessLevel: 4,
  limit: 20,
};

const booleans: Record<string, boolean> = {
  resultsVisible: true,
  available: true,
  hasVoted: true,
  phoneVerified: true,
  isAnonymous: false,
  acceptTerms: true,
};

/** Whole values of named components whose fields depend on each other (merged over the generated value). */
const components: Record<string, unknown> = {
  VoteSummary: { totalVotes: 12, resultsVisible: true, leftCount: 3, neutralCount: 4, rightCount: 5 },
  Session: {
    tokenType: 'Bearer',
    expiresIn: 900,
    refreshExpiresIn: 2592000,
    user: { id: uuid, isAnonymous: false, phoneVerified: true, accessLevel: 4 },
  },
  OnboardingStatus: {
    accessLevel: 2,
    profileBasicsCompleted: true,
    mediaCompleted: false,
    phoneConfirmed: false,
    contacts_synced: false,
    contactsSyncedAt: null,
    nextStep: 'media',
  },
  Article: { kind: 'link', url: 'https://news.example.org/ghent-car-free', title: strings.title, text: null, media: [] },
  HubAdmin: { name: 'Maria Kovacs' },
  HubMember: { name: 'Maria Kovacs', phoneNumber: '+447700900123' },
  PersonSearchResult: { name: 'Maria Kovacs' },
  PostCard: {
    sourcePostId: null,
    sourcePost: null,
    viewerVote: { hasVoted: true, votedAt: time },
    feedContext: 'followed_author',
    visibility: 'public',
  },
};

/** Whole values by property name. */
const properties: Record<string, unknown> = {
  voteDistribution: [
    { position: 'strong_left', bucket: 'left', count: 1 },
    { position: 'left', bucket: 'left', count: 2 },
    { position: 'neutral', bucket: 'neutral', count: 4 },
    { position: 'right', bucket: 'right', count: 3 },
    { position: 'strong_right', bucket: 'right', count: 2 },
  ],
};

/** Values to try for a string with a pattern, when the name gives none that matches. */
const patterned = [uuid, 'maria_k', '7700900123', '+44', 'Zx8q2LmN5vR1tY7wK3pD9sBf'];

function sampleString(name: string, schema: JsonSchema): string {
  if (typeof schema.pattern === 'string') {
    const pattern = new RegExp(schema.pattern, 'u');
    const candidates = [strings[name], ...(/^(id|.*Id|.*_id)$/.test(name) ? [uuid] : []), ...patterned].filter(
      (value): value is string => value !== undefined,
    );
    const match = candidates.find((value) => pattern.test(value));
    if (match !== undefined) return match;
  }
  if (schema.format === 'uuid' || /^(id|.*Id|.*_id)$/.test(name)) return uuid;
  if (schema.format === 'date-time') return time;
  if (schema.format === 'uri' || schema.format === 'url') return urls[name] ?? (urls.url as string);
  const known = strings[name] ?? urls[name] ?? (/PhotoUrl$|Url$/.test(name) ? photoUrl : undefined);
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  if (known !== undefined && known.length >= min && known.length <= max) return known;
  const text = 'Sounds good to me.';
  return text.length < min ? text.padEnd(min, '.') : text.slice(0, Math.max(Math.min(max, text.length), 1));
}

function sampleNumber(name: string, schema: JsonSchema, integer: boolean): number {
  const min =
    typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 0;
  const max = typeof schema.maximum === 'number' ? schema.maximum : Number.MAX_SAFE_INTEGER;
  const known = numbers[name] ?? (integer ? 1 : 1.5);
  return Math.min(Math.max(known, min), max);
}

/** Lays `override` over `value` where both have the key, so a field the schema dropped never appears. */
function overlay(value: unknown, override: unknown): unknown {
  if (
    value === null ||
    typeof value !== 'object' ||
    Array.isArray(value) ||
    override === null ||
    typeof override !== 'object' ||
    Array.isArray(override)
  ) {
    return override;
  }
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [key, item] of Object.entries(override as Record<string, unknown>)) {
    if (key in out) out[key] = overlay(out[key], item);
  }
  return out;
}

export function exampleOf(schema: JsonSchema, all: Record<string, JsonSchema>, name = '', depth = 0): unknown {
  if (depth > 10) return null;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (name in properties) return properties[name];
  if (typeof schema.$ref === 'string') {
    const component = schema.$ref.split('/').at(-1) as string;
    const target = all[component];
    if (!target) return null;
    const generated = exampleOf(target, all, name, depth + 1);
    return component in components ? overlay(generated, components[component]) : generated;
  }
  // A union of shapes (not rules beside a shape's own type and properties: those the value meets).
  const shaped = schema.type !== undefined || schema.properties !== undefined;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key] as JsonSchema[] | undefined;
    if (options && !shaped) return exampleOf(options.find((option) => option.type !== 'null') ?? options[0] ?? {}, all, name, depth + 1);
  }
  if (Array.isArray(schema.allOf) && !shaped) return exampleOf((schema.allOf[0] ?? {}) as JsonSchema, all, name, depth + 1);
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') as string) : (schema.type as string | undefined);
  switch (type) {
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
      return Object.fromEntries(Object.entries(props).map(([key, value]) => [key, exampleOf(value, all, key, depth + 1)]));
    }
    case 'array': {
      const itemName = name.endsWith('Ids') ? 'id' : name.replace(/ies$/, 'y').replace(/s$/, '');
      const item = exampleOf((schema.items ?? {}) as JsonSchema, all, itemName, depth + 1);
      return Array.from({ length: Math.max(1, typeof schema.minItems === 'number' ? schema.minItems : 1) }, () => item);
    }
    case 'string':
      return sampleString(name, schema);
    case 'integer':
      return sampleNumber(name, schema, true);
    case 'number':
      return sampleNumber(name, schema, false);
    case 'boolean':
      return booleans[name] ?? false;
    case 'null':
      return null;
    default:
      return null;
  }
}

/** An error response's example: its first code, with the details that code carries. */
export function errorExample(code: ErrorCode, fields: string[]): unknown {
  const details =
    code === 'RATE_LIMITED'
      ? { retryAfterSeconds: 30 }
      : code === 'VALIDATION_FAILED'
        ? { fields: Object.fromEntries(fields.map((field) => [field, 'Required'])) }
        : code === 'CLIENT_UPDATE_REQUIRED'
          ? { minimumVersion: '2.1.0', updateUrl: 'https://apps.apple.com/app/id0000000000' }
          : {};
  return { success: false, error: { code, message: errorCatalog[code][1], details } };
}
