// The public profile (contract section 5): by-username and the public part of me/profile. Never a
// phone number: the shape below has no field for one, and responses are parsed through it.
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { Storage } from '../uploads/storage.ts';
import { maintainedCount } from '../http/counts.ts';
import { nullableText, text, textMax } from '../http/text.ts';
import { imageColumnsSql, imageKeySql, profilePhoto, shapeImage, type ImageColumns } from '../uploads/images.ts';

export const publicProfile = z
  .object({
    id: z.string(),
    username: nullableText(textMax.handle),
    fullName: nullableText(textMax.name),
    bio: nullableText(textMax.bio),
    profilePhotoUrl: nullableText(textMax.url),
    profilePhoto: profilePhoto
      .nullable()
      .describe('The profile photo with its upright size, placeholder and variants; null without a photo'),
    counts: z.object({
      followers: maintainedCount('users who follow this user'),
      following: maintainedCount('users this user follows'),
      posts: maintainedCount('posts and reposts by this user that are not deleted, private_locked_hub ones excepted'),
    }),
    stats: z.object({
      votesCast: maintainedCount(
        "the profile owner's own votes; null for everyone else (next to a live tally it would tell how someone voted)",
      ).nullable(),
      votesReceived: maintainedCount(
        "votes on this user's posts that are not deleted (a post's votes leave the count when it is deleted and come back if it is restored)",
      ),
    }),
    adminHubs: z.array(z.object({ id: z.string(), name: text(textMax.hubName), profilePhotoUrl: nullableText(textMax.url) })),
    viewer: z.object({ follows: z.boolean(), followedBy: z.boolean(), blocked: z.boolean() }).nullable(),
  })
  .meta({ id: 'PublicProfile' });

export const ownProfile = publicProfile.extend({
  editable: z.object({
    fullName: nullableText(textMax.name),
    username: nullableText(textMax.handle),
    bio: nullableText(textMax.bio),
    profileAssetId: z.string().nullable(),
  }),
});

interface ProfileRow {
  id: string;
  username: string | null;
  full_name: string | null;
  bio: string | null;
  profile_asset_id: string | null;
  photo_key: string | null;
  photo: ImageColumns | null;
  followers: number;
  following: number;
  posts: number;
  votes_cast: number | null;
  votes_received: number;
  admin_hubs: { id: string; name: string; photoKey: string | null }[];
  viewer_follows: boolean;
  viewer_followed_by: boolean;
  viewer_blocked: boolean;
}

/**
 * Reads one user visible to the viewer (row-level security decides), selected by a condition on
 * `u`, with the social part. Returns undefined when no visible user matches.
 */
export async function readProfile(tx: RequestTransaction, where: 'u.username = $1' | 'u.id = $1', value: string) {
  const { rows } = await tx.query<ProfileRow>(
    `select u.id, u.username, u.full_name, u.bio, u.profile_asset_id, ${imageKeySql('a')} as photo_key, ${imageColumnsSql('a')} as photo, s.*
     from app.users u
     left join app.assets a on a.id = u.profile_asset_id
     cross join lateral app.profile_social(u.id) s
     where ${where}`,
    [value],
  );
  return rows[0];
}

export async function shapePublicProfile(
  storage: Storage,
  row: ProfileRow,
  viewerId: string | null,
): Promise<z.input<typeof publicProfile>> {
  return {
    id: row.id,
    username: row.username,
    fullName: row.full_name,
    bio: row.bio,
    profilePhotoUrl: await storage.photoUrl(row.photo_key),
    profilePhoto: row.photo_key === null ? null : await shapeImage(storage, row.photo),
    counts: { followers: row.followers, following: row.following, posts: row.posts },
    stats: { votesCast: row.votes_cast, votesReceived: row.votes_received },
    adminHubs: await Promise.all(
      row.admin_hubs.map(async (hub) => ({ id: hub.id, name: hub.name, profilePhotoUrl: await storage.photoUrl(hub.photoKey) })),
    ),
    viewer:
      viewerId === null || viewerId === row.id
        ? null
        : { follows: row.viewer_follows, followedBy: row.viewer_followed_by, blocked: row.viewer_blocked },
  };
}

export async function shapeOwnProfile(storage: Storage, row: ProfileRow): Promise<z.input<typeof ownProfile>> {
  return {
    ...(await shapePublicProfile(storage, row, row.id)),
    editable: { fullName: row.full_name, username: row.username, bio: row.bio, profileAssetId: row.profile_asset_id },
  };
}
