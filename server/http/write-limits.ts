// Per-user write limits (contract section 3): every write endpoint declares its limit in its
// definition, in one line (`limit: 'comments'`, or `limit: { name: 'posts', hubsIn: 'hubIds' }` for
// writes that fan out to the hubs named in that body field, which also count per user and hub in
// `hub_fanout`). The count lives in the database (app.take_write_limit, db/sql/auth.sql), shared
// by every API process, checked by one statement that travels with the write's own transaction
// (RequestTransaction.prepend): 429 RATE_LIMITED with retryAfterSeconds and Retry-After, and
// nothing written; its answer (writes left, seconds until one frees) gives the RateLimit headers
// (server/http/rate-limit-headers.ts). Sizes are defaults that no ordinary person reaches and a bot does;
// WRITE_LIMITS changes them (`posts=30/3600,comments=120/3600`). The OpenAPI document names the
// limit of each operation (x-write-limits). Not limited here: votes (the contract keeps the vote
// path as it is), the sign-in endpoints (limited per phone and per client address) and the handle
// check (its own limit).
import { StartupError } from '../../config.ts';
import { sqlLiteral } from '../../db/viewer.ts';

export interface WriteLimit {
  max: number;
  windowSeconds: number;
}

export const writeLimitDefaults = {
  posts: { max: 30, windowSeconds: 3600, covers: 'posts and reposts' },
  comments: { max: 120, windowSeconds: 3600, covers: 'comments' },
  discussion_messages: { max: 120, windowSeconds: 600, covers: 'hub discussion messages' },
  follows: { max: 100, windowSeconds: 600, covers: 'follows' },
  blocks: { max: 60, windowSeconds: 3600, covers: 'blocks' },
  shares: { max: 60, windowSeconds: 3600, covers: 'shares to the feed and into hubs' },
  reports: { max: 30, windowSeconds: 3600, covers: 'reports of users, posts and hubs' },
  invitations: { max: 30, windowSeconds: 3600, covers: 'hub invitation requests (each up to 50 phones)' },
  invite_links: { max: 20, windowSeconds: 3600, covers: 'hub invite links' },
  join_requests: { max: 30, windowSeconds: 3600, covers: 'join requests and answers to invitations' },
  uploads: { max: 60, windowSeconds: 3600, covers: 'upload intents and completions' },
  hubs: { max: 10, windowSeconds: 3600, covers: 'hubs created' },
  push_devices: { max: 60, windowSeconds: 3600, covers: 'push device registrations (the app registers on every start)' },
  hub_admin: { max: 120, windowSeconds: 600, covers: "hub admins' changes: hub details, link, join request decisions, removals, roles" },
  other_writes: {
    max: 120,
    windowSeconds: 300,
    covers: 'every other write: saves, unfollows, unblocks, deletions, profile and onboarding steps, hub settings, leaving, marking read',
  },
  hub_fanout: { max: 20, windowSeconds: 3600, covers: 'posts, reposts and shares into one hub, per user and hub' },
} as const satisfies Record<string, WriteLimit & { covers: string }>;

export type WriteLimitName = keyof typeof writeLimitDefaults;
export type WriteLimits = Record<WriteLimitName, WriteLimit>;

/** An endpoint's limit, and for writes that fan out to hubs, the body field that names them. */
export type WriteLimitDeclaration = Exclude<WriteLimitName, 'hub_fanout'> | { name: Exclude<WriteLimitName, 'hub_fanout'>; hubsIn: string };

const isName = (name: string): name is WriteLimitName => Object.hasOwn(writeLimitDefaults, name);

/** The defaults with the configured overrides (WRITE_LIMITS); an unknown name is an error. */
export function resolveWriteLimits(overrides: Record<string, WriteLimit>): WriteLimits {
  const limits = Object.fromEntries(
    Object.entries(writeLimitDefaults).map(([name, { max, windowSeconds }]) => [name, { max, windowSeconds }]),
  ) as WriteLimits;
  for (const [name, limit] of Object.entries(overrides)) {
    if (!isName(name))
      throw new StartupError(`WRITE_LIMITS names an unknown limit "${name}" (known: ${Object.keys(writeLimitDefaults).join(', ')})`);
    limits[name] = limit;
  }
  return limits;
}

export function declaredLimit(declaration: WriteLimitDeclaration): { name: WriteLimitName; hubsIn?: string } {
  return typeof declaration === 'string' ? { name: declaration } : declaration;
}

const call = (name: WriteLimitName, { max, windowSeconds }: WriteLimit, hubs?: string) =>
  `select * from app.take_write_limit('${name}', ${Math.trunc(max)}, ${Math.trunc(windowSeconds)}${hubs ? `, ${hubs}` : ''})`;

/**
 * The statement that counts one write (app.take_write_limit raises RATE_LIMITED when full, else
 * answers a row per limit for the RateLimit headers): the endpoint's limit, and `hub_fanout` for
 * each hub the body names. Hub ids are the validated body's (quoted literals, as db/viewer.ts
 * quotes the viewer's settings).
 */
export function writeLimitStatement(declaration: WriteLimitDeclaration, body: unknown, limits: WriteLimits): string {
  const { name, hubsIn } = declaredLimit(declaration);
  const calls = [call(name, limits[name])];
  const hubs = hubsIn ? (body as Record<string, unknown> | undefined)?.[hubsIn] : undefined;
  if (Array.isArray(hubs) && hubs.length > 0) {
    const list = hubs.map((id) => sqlLiteral(String(id).toLowerCase())).join(', ');
    calls.push(call('hub_fanout', limits.hub_fanout, `array[${list}]::uuid[]`));
  }
  return calls.join(' union all ');
}

/** The OpenAPI description of an operation's limits (x-write-limits), with the defaults. */
export function writeLimitDocs(
  declaration: WriteLimitDeclaration,
): { name: WriteLimitName; max: number; windowSeconds: number; per: string }[] {
  const { name, hubsIn } = declaredLimit(declaration);
  const docs = [{ name, max: writeLimitDefaults[name].max, windowSeconds: writeLimitDefaults[name].windowSeconds, per: 'user' }];
  if (hubsIn) docs.push({ name: 'hub_fanout', ...writeLimitDefaults.hub_fanout, per: 'user and hub' });
  return docs.map(({ name, max, windowSeconds, per }) => ({ name, max, windowSeconds, per }));
}
