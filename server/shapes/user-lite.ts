// UserLite (contract section 7): the author/actor shape on public content. Never a phone number.
// Queries select the user's columns plus the object key of the profile photo:
//   u.id, u.username, u.full_name, ${imageKeySql('a')} as photo_key (server/uploads/images.ts)
//   ... left join app.assets a on a.id = u.profile_asset_id
import { z } from 'zod';
import type { Storage } from '../uploads/storage.ts';
import { nullableText, textMax } from '../http/text.ts';

export const userLite = z
  .object({
    id: z.string(),
    username: nullableText(textMax.handle),
    fullName: nullableText(textMax.name),
    profilePhotoUrl: nullableText(textMax.url),
  })
  .meta({ id: 'UserLite' });

export type UserLite = z.input<typeof userLite>;

export interface UserLiteRow {
  id: string;
  username: string | null;
  full_name: string | null;
  photo_key: string | null;
}

export async function shapeUserLite(storage: Storage, row: UserLiteRow): Promise<UserLite> {
  return { id: row.id, username: row.username, fullName: row.full_name, profilePhotoUrl: await storage.photoUrl(row.photo_key) };
}
