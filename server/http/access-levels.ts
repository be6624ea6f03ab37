// The access-level ladder (spec part 5), written once for TypeScript: each level, what reaching it
// means, and the code a request answers when the viewer lacks it. The gate (auth.ts requireLevel)
// and the OpenAPI document (an operation's 403 codes, the description of x-access-level) read it
// from here. The database raises the same codes in app.session_gate and app.require_level;
// test/sql/auth/access-levels.test.ts holds the two equal for every level and requirement.
import type { ErrorCode } from './catalog.ts';

/**
 * The levels by name: what an endpoint declaration requires (`level: levels.hubReady`). The SQL
 * functions ask app.access_level with the same names in snake case ('hub_ready');
 * test/sql/auth/access-levels.test.ts holds the two equal.
 */
export const levels = { anonymous: 1, profile: 2, phone: 3, hubReady: 4 } as const;

export const accessLevels = [
  { level: levels.anonymous, means: 'anonymous', missing: 'UNAUTHORIZED' },
  { level: levels.profile, means: 'registered public profile', missing: 'PROFILE_BASICS_REQUIRED' },
  { level: levels.phone, means: 'phone-confirmed', missing: 'PHONE_VERIFICATION_REQUIRED' },
  { level: levels.hubReady, means: 'Hub-ready', missing: 'HUB_READINESS_REQUIRED' },
] as const satisfies readonly { level: number; means: string; missing: ErrorCode }[];

/** The access levels an endpoint can require. */
export type AccessLevel = (typeof accessLevels)[number]['level'];

/**
 * The code for a viewer at `level` (0: no token) on an endpoint that requires `required`: the first
 * level the viewer lacks, or null when the viewer has it.
 */
export function missingLevelCode(level: number, required: AccessLevel): ErrorCode | null {
  if (level >= required) return null;
  const first = Math.min(Math.max(level + 1, 1), required);
  return accessLevels[first - 1]!.missing;
}

/** The 403 codes an endpoint requiring `required` can answer (each level above 1 up to it). */
export function levelCodes(required: AccessLevel | undefined): ErrorCode[] {
  return accessLevels.filter((step) => step.level > 1 && step.level <= (required ?? 0)).map((step) => step.missing);
}

/** "1 anonymous, 2 registered public profile, ...", for the OpenAPI description. */
export const ladderText = accessLevels.map((step) => `${step.level} ${step.means}`).join(', ');
