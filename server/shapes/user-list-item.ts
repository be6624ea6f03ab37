// The user list item of follower/following lists and people search: public fields only, plus the
// viewer's follow state. Queries select the UserLite columns (see user-lite.ts), bio, and
// `viewer_follows` computed with `app.viewer_follows(u.id)`.
import { z } from 'zod';
import type { Storage } from '../uploads/storage.ts';
import { shapeUserLite, type UserLiteRow } from './user-lite.ts';
import { nullableText, textMax } from '../http/text.ts';

export interface UserListRow extends UserLiteRow {
  bio: string | null;
  viewer_follows: boolean;
}

/** Followers / following (spec 4.4): { id, username, fullName, profilePhotoUrl, viewerFollows }. */
export const followListItem = z
  .object({
    id: z.string(),
    username: nullableText(textMax.handle),
    fullName: nullableText(textMax.name),
    profilePhotoUrl: nullableText(textMax.url),
    viewerFollows: z.boolean(),
  })
  .meta({ id: 'FollowListItem' });

export async function shapeFollowListItem(storage: Storage, row: UserListRow): Promise<z.input<typeof followListItem>> {
  return { ...(await shapeUserLite(storage, row)), viewerFollows: row.viewer_follows };
}

/** The normalised form of a typed query: what app.user_matches expects. */
export const searchQuery = z
  .string()
  .max(100)
  .transform((q) => q.trim().replace(/^@/, ''));
