// /users: handle availability, own profile, public profile by handle, and the private Hub identity
// (spec 4.4, contract section 5).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError, rateLimited } from '../http/errors.ts';
import { isUuid } from '../http/ids.ts';
import { bio, canonicalHandle, fullName, handle } from './fields.ts';
import { trimmedText } from '../http/validation.ts';
import { ownProfile, publicProfile, readProfile, shapeOwnProfile, shapePublicProfile } from './profile.ts';
import { blockEndpoints } from './blocks.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { Storage } from '../uploads/storage.ts';
import { nullableText, text, textMax } from '../http/text.ts';
import { imageKeySql, requireUsableAssets } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Users';

/** Availability checks allowed per user and window (429 RATE_LIMITED beyond). */
export const availabilityLimit = { hits: 30, windowSeconds: 60 };

const unusablePhoto = (field: string) => new ApiError('VALIDATION_FAILED', { fields: { [field]: 'Not a usable profile photo' } });

async function requireUsablePhoto(tx: RequestTransaction, assetId: string | null | undefined, field: string): Promise<void> {
  if (assetId === undefined || assetId === null) return;
  if (!isUuid(assetId)) throw unusablePhoto(field);
  await requireUsableAssets(tx, 'app.profile_asset_usable($1)', assetId, [assetId], () => unusablePhoto(field));
}

/** The longest handle a client may type to check (spaces and a leading @ included). */
const typedHandleMax = 100;

const hubProfile = z.object({
  displayName: nullableText(textMax.name),
  profilePhotoUrl: nullableText(textMax.url),
  profileAssetId: z.string().nullable(),
  phoneNumber: nullableText(textMax.phone),
});

async function readHubProfile(tx: RequestTransaction, storage: Storage): Promise<z.input<typeof hubProfile>> {
  const { rows } = await tx.query<{
    display_name: string | null;
    profile_asset_id: string | null;
    photo_key: string | null;
    phone_e164: string | null;
  }>(
    `select coalesce(h.display_name, u.full_name) as display_name, h.profile_asset_id, ${imageKeySql('a')} as photo_key, p.phone_e164
     from app.users u
     left join app.hub_profiles h on h.user_id = u.id
     left join app.assets a on a.id = h.profile_asset_id
     left join app.phone_identities p on p.user_id = u.id
     where u.id = app.viewer_id()`,
  );
  const row = rows[0];
  if (!row) throw new ApiError('USER_NOT_FOUND');
  return {
    displayName: row.display_name,
    profilePhotoUrl: await storage.photoUrl(row.photo_key),
    profileAssetId: row.profile_asset_id,
    phoneNumber: row.phone_e164,
  };
}

export const endpoints = [
  endpoint({
    method: 'post',
    path: '/users/handles/availability',
    tag,
    summary: 'Preview whether a handle is available (reserves nothing)',
    description:
      'The handle is canonicalised first. When it is taken, reserved or invalid, up to three numeric-suffix ' +
      `alternatives that are free at answer time are returned. At most ${availabilityLimit.hits} checks per ` +
      `${availabilityLimit.windowSeconds} s per user.`,
    auth: 'bearer',
    body: z.strictObject({ handle: z.string().max(typedHandleMax) }),
    response: z.object({
      // The typed handle, canonicalised.
      handle: text(typedHandleMax),
      available: z.boolean(),
      reason: z.enum(['taken', 'invalid', 'reserved']).nullable(),
      alternatives: z.array(text(textMax.handle)).max(3),
    }),
    rateLimits: ['handle_availability'],
    errors: ['RATE_LIMITED'],
    async handler({ body, tx }) {
      // Its answer gives the RateLimit headers too (server/http/rate-limit-headers.ts).
      const limit = await tx.query<{ wait: number }>('select * from app.take_rate_limit($1, $2, $3)', [
        'handle_availability',
        availabilityLimit.hits,
        availabilityLimit.windowSeconds,
      ]);
      const wait = limit.rows[0]?.wait ?? 0;
      if (wait > 0) {
        await tx.commit();
        throw rateLimited(wait);
      }
      const canonical = canonicalHandle(body.handle);
      const { rows } = await tx.query<{ available: boolean; reason: 'taken' | 'invalid' | 'reserved' | null; alternatives: string[] }>(
        'select available, reason, alternatives from app.handle_availability($1)',
        [canonical],
      );
      const row = rows[0] as { available: boolean; reason: 'taken' | 'invalid' | 'reserved' | null; alternatives: string[] };
      return { handle: canonical, ...row };
    },
  }),

  endpoint({
    method: 'get',
    path: '/users/me/profile',
    tag,
    summary: 'Own public profile with the editable fields',
    auth: 'bearer',
    response: ownProfile,
    async handler({ tx, viewer, services: { storage } }) {
      const row = await readProfile(tx, 'u.id = $1', viewer.userId as string);
      if (!row) throw new ApiError('USER_NOT_FOUND');
      return shapeOwnProfile(storage, row);
    },
  }),

  endpoint({
    method: 'patch',
    path: '/users/me/profile',
    tag,
    summary: 'Edit the public profile',
    description:
      'At least one field. The handle is canonicalised like in profile basics. A new profileAssetId replaces the previous image.',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.profile,
    body: z
      .strictObject({
        fullName: fullName.optional(),
        username: handle.optional(),
        bio: bio.optional(),
        profileAssetId: z.string().max(64).optional(),
      })
      .refine((value) => Object.keys(value).length > 0, { message: 'At least one field is required' })
      .meta({ minProperties: 1 }),
    response: ownProfile,
    errors: ['ASSET_NOT_READY', 'USERNAME_TAKEN'],
    async handler({ body, tx, viewer, services: { storage } }) {
      await requireUsablePhoto(tx, body.profileAssetId, 'profileAssetId');
      const columns = { fullName: 'full_name', username: 'username', bio: 'bio', profileAssetId: 'profile_asset_id' } as const;
      const entries = Object.entries(body).filter(([, value]) => value !== undefined) as [keyof typeof columns, unknown][];
      await tx.query(
        `update app.users set ${entries.map(([key], i) => `${columns[key]} = $${i + 1}`).join(', ')} where id = app.viewer_id()`,
        entries.map(([, value]) => value),
      );
      const row = await readProfile(tx, 'u.id = $1', viewer.userId as string);
      if (!row) throw new ApiError('USER_NOT_FOUND');
      return shapeOwnProfile(storage, row);
    },
  }),

  endpoint({
    method: 'get',
    path: '/users/by-username/{username}',
    tag,
    summary: 'Public profile by handle',
    description: 'A token is optional and adds the viewer relationship; an invalid token is 401. Never includes phone numbers.',
    auth: 'optional',
    // A handle's form, as typed (a leading @, any case); another form names nobody.
    pathParameters: { username: { schema: handle, notFound: 'USER_NOT_FOUND' } },
    response: publicProfile,
    errors: ['USER_NOT_FOUND'],
    async handler({ params, tx, viewer, services: { storage } }) {
      const row = await readProfile(tx, 'u.username = $1', canonicalHandle(params.username ?? ''));
      if (!row || row.username === null) throw new ApiError('USER_NOT_FOUND');
      return shapePublicProfile(storage, row, viewer.userId);
    },
  }),

  endpoint({
    method: 'get',
    path: '/users/me/hub-profile',
    tag,
    summary: 'The private Hub identity',
    description: 'Display name (defaults to the public full name), Hub image and the own phone number. Hub-ready users only.',
    auth: 'bearer',
    level: levels.hubReady,
    response: hubProfile,
    handler: ({ tx, services: { storage } }) => readHubProfile(tx, storage),
  }),

  endpoint({
    method: 'patch',
    path: '/users/me/hub-profile',
    tag,
    summary: 'Edit the private Hub identity (the public profile is unchanged)',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.hubReady,
    body: z
      .strictObject({ displayName: trimmedText(2, textMax.name).optional(), profileAssetId: z.string().max(64).optional() })
      .refine((value) => Object.keys(value).length > 0, { message: 'At least one field is required' })
      .meta({ minProperties: 1 }),
    response: hubProfile,
    errors: ['ASSET_NOT_READY'],
    async handler({ body, tx, services: { storage } }) {
      await requireUsablePhoto(tx, body.profileAssetId, 'profileAssetId');
      await tx.query(
        `insert into app.hub_profiles as h (user_id, display_name, profile_asset_id)
         values (app.viewer_id(), $1, $2)
         on conflict (user_id) do update
           set display_name = coalesce($1, h.display_name),
               profile_asset_id = coalesce($2, h.profile_asset_id),
               updated_at = now()`,
        [body.displayName ?? null, body.profileAssetId ?? null],
      );
      return readHubProfile(tx, storage);
    },
  }),
  ...blockEndpoints,
];
