// /users/me/onboarding: progress and the three steps (spec 4.2, contract section 4).
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/ids.ts';
import { fullName, handle } from '../users/fields.ts';
import { requireUsableAssets } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Onboarding';

const onboardingStatus = z
  .object({
    accessLevel: z.number().int().min(1).max(4),
    profileBasicsCompleted: z.boolean(),
    mediaCompleted: z.boolean(),
    phoneConfirmed: z.boolean(),
    contacts_synced: z.boolean(),
    contactsSyncedAt: z.string().nullable(),
    nextStep: z.enum(['profile_basics', 'media', 'phone', 'contacts', 'done']),
  })
  .meta({ id: 'OnboardingStatus' });

/**
 * The status as the request's last statement, committed in the same round trip. `gateLevel`: the
 * session check travels inside the statement (app.onboarding_status_gated reads it with the
 * status), in place of a deferred check of its own: the request is one message.
 */
async function readStatus(tx: RequestTransaction, gateLevel?: number): Promise<z.input<typeof onboardingStatus>> {
  const { rows } = await tx.queryAndCommit<{
    access_level: number;
    profile_basics_completed: boolean;
    media_completed: boolean;
    phone_confirmed: boolean;
    contacts_synced_at: Date | null;
  }>(
    gateLevel === undefined ? 'select * from app.onboarding_status()' : 'select * from app.onboarding_status_gated($1)',
    gateLevel === undefined ? [] : [gateLevel],
    gateLevel,
  );
  const row = rows[0];
  if (!row) throw new ApiError('USER_NOT_FOUND');
  const nextStep = !row.profile_basics_completed
    ? 'profile_basics'
    : !row.media_completed
      ? 'media'
      : !row.phone_confirmed
        ? 'phone'
        : !row.contacts_synced_at
          ? 'contacts'
          : 'done';
  return {
    accessLevel: row.access_level,
    profileBasicsCompleted: row.profile_basics_completed,
    mediaCompleted: row.media_completed,
    phoneConfirmed: row.phone_confirmed,
    contacts_synced: row.contacts_synced_at !== null,
    contactsSyncedAt: row.contacts_synced_at?.toISOString() ?? null,
    nextStep,
  };
}

export const endpoints = [
  endpoint({
    method: 'get',
    path: '/users/me/onboarding/status',
    tag,
    summary: 'Onboarding progress and access level',
    auth: 'bearer',
    sessionCheckWithFirstStatement: true,
    response: onboardingStatus,
    handler: ({ tx, level }) => readStatus(tx, level),
  }),

  endpoint({
    method: 'put',
    path: '/users/me/onboarding/profile-basics',
    tag,
    summary: 'Full name, handle and terms: reaches access level 2',
    description: 'The handle is canonicalised (trimmed, lowercased, a leading @ removed) before the pattern check.',
    auth: 'bearer',
    limit: 'other_writes',
    body: z.strictObject({ fullName, username: handle, acceptTerms: z.literal(true) }),
    response: onboardingStatus,
    errors: ['USERNAME_TAKEN'],
    async handler({ body, tx, services: { config } }) {
      await tx.query('select app.complete_profile_basics($1, $2, $3)', [body.fullName, body.username, config.termsVersion]);
      return readStatus(tx);
    },
  }),

  endpoint({
    method: 'put',
    path: '/users/me/onboarding/media',
    tag,
    summary: 'Answer the media step, with or without a profile photo',
    description:
      'Omitted or null profileAssetId completes the step with no photo. A photo must be a completed profile_photo ' +
      'asset of the caller; anything else is 422 on profileAssetId.',
    auth: 'bearer',
    limit: 'other_writes',
    body: z.strictObject({ profileAssetId: z.string().max(64).nullable().optional() }),
    response: onboardingStatus,
    errors: ['ASSET_NOT_READY'],
    async handler({ body, tx }) {
      const assetId = body.profileAssetId ?? null;
      const unusable = new ApiError('VALIDATION_FAILED', { fields: { profileAssetId: 'Not a usable profile photo' } });
      if (assetId !== null && !isUuid(assetId)) throw unusable;
      // complete_media writes nothing when the photo is not usable (still processing included).
      await requireUsableAssets(tx, 'app.complete_media($1)', assetId, assetId === null ? [] : [assetId], () => unusable);
      return readStatus(tx);
    },
  }),

  endpoint({
    method: 'put',
    path: '/users/me/onboarding/contacts',
    tag,
    summary: 'Record the one-time contacts acknowledgement: reaches access level 4',
    description:
      'Needs a phone-confirmed user with completed profile setup. The address book itself is never sent; later OS ' +
      'permission changes do not clear the acknowledgement.',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.phone,
    response: onboardingStatus,
    async handler({ tx }) {
      await tx.query('select app.acknowledge_contacts()');
      return readStatus(tx);
    },
  }),
];
