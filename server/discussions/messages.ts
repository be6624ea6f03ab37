// Discussion messages as the API shows them (contract section 8), with the HubDiscussionAuthor of
// spec 2.2. Rows come through the messages policy; who the author is shown as (Hub identity and
// phone, former member, gone) is decided in SQL by app.hub_discussion_author.
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { micros } from '../http/paging.ts';
import type { Storage } from '../uploads/storage.ts';
import { maintainedCount } from '../http/counts.ts';
import { nullableText, text, textMax } from '../http/text.ts';

export const hubDiscussionAuthor = z
  .object({
    id: z.string().nullable(),
    displayName: text(textMax.name),
    profilePhotoUrl: nullableText(textMax.url),
    phoneNumber: nullableText(textMax.phone),
    publicUsername: nullableText(textMax.handle),
    isFormerMember: z.boolean(),
  })
  .describe(
    'HubDiscussionAuthor. An active member of the hub: Hub identity (displayName, image) and phoneNumber (E.164), publicUsername ' +
      'null. A former member: public name, image and handle (publicUsername), phoneNumber null, isFormerMember true. An author ' +
      'whose account is gone: id null, displayName "Former member", no phone, no handle.',
  );

export const discussionMessage = z.object({
  id: z.string(),
  discussionId: z.string(),
  parentMessageId: z.string().nullable(),
  author: hubDiscussionAuthor,
  text: text(textMax.discussionMessage),
  replyCount: maintainedCount("replies in this message's thread (0 on a reply)"),
  createdAt: z.string(),
});

type DiscussionMessage = z.input<typeof discussionMessage>;

export interface MessageRow {
  id: string;
  discussion_id: string;
  parent_id: string | null;
  text: string;
  reply_count: number;
  created_at: Date;
  created_us: number;
  author: {
    id: string | null;
    displayName: string;
    photoKey: string | null;
    phoneNumber: string | null;
    publicUsername: string | null;
    isFormerMember: boolean;
  };
}

/** Columns of a MessageRow, from `app.hub_discussion_messages m` joined with `messageAuthor`. */
export const messageColumns = `m.id, m.discussion_id, m.parent_id, m.text, m.reply_count, m.created_at,
  ${micros('m.created_at')} as created_us, a.author`;

export const messageAuthor = 'cross join lateral app.hub_discussion_author(m.hub_id, m.author_id) a';

export async function shapeMessage(storage: Storage, row: MessageRow): Promise<DiscussionMessage> {
  const { photoKey, ...author } = row.author;
  return {
    id: row.id,
    discussionId: row.discussion_id,
    parentMessageId: row.parent_id,
    author: { ...author, profilePhotoUrl: await storage.photoUrl(photoKey) },
    text: row.text,
    replyCount: row.reply_count,
    createdAt: row.created_at.toISOString(),
  };
}

/**
 * The first messages of each discussion (thread roots, oldest first, at most `perDiscussion`), as
 * the viewer may see them, by discussion id.
 */
export async function readPreviews(
  tx: RequestTransaction,
  storage: Storage,
  discussionIds: string[],
  perDiscussion: number,
): Promise<Map<string, DiscussionMessage[]>> {
  const previews = new Map<string, DiscussionMessage[]>(discussionIds.map((id) => [id, []]));
  if (discussionIds.length === 0) return previews;
  const { rows } = await tx.query<MessageRow>(
    `select first.* from unnest($1::uuid[]) wanted (id)
     cross join lateral (
       select ${messageColumns} from app.hub_discussion_messages m ${messageAuthor}
       where m.discussion_id = wanted.id and m.parent_id is null
       order by m.created_at, m.id
       limit $2) first
     order by first.discussion_id, first.created_at, first.id`,
    [discussionIds, perDiscussion],
  );
  for (const row of rows) previews.get(row.discussion_id)?.push(await shapeMessage(storage, row));
  return previews;
}
