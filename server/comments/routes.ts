// Public comments (spec 2.3; contract section 7): one-level threads, UserLite authors.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/ids.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { Storage } from '../uploads/storage.ts';
import { shapeUserLite, userLite, type UserLiteRow } from '../shapes/user-lite.ts';
import { maintainedCount } from '../http/counts.ts';
import { trimmedText } from '../http/validation.ts';
import { text, textMax } from '../http/text.ts';
import { imageKeySql } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Comments';

const comment = z
  .object({
    id: z.string(),
    postId: z.string(),
    author: userLite,
    text: text(textMax.comment),
    parentCommentId: z.string().nullable(),
    replyCount: maintainedCount('replies of this comment that are not deleted (0 on a reply)'),
    createdAt: z.string(),
  })
  .meta({ id: 'Comment' });

interface CommentRow extends UserLiteRow {
  comment_id: string;
  post_id: string;
  text: string;
  parent_id: string | null;
  reply_count: number;
  created_at: Date;
  created_us: number;
}

/** Comments visible to the viewer (the comments policy decides), oldest first. */
const commentRows = `
  select c.id as comment_id, c.post_id, c.text, c.parent_id, app.comment_reply_count(c.id) as reply_count, c.created_at, ${micros('c.created_at')} as created_us,
         u.id, u.username, u.full_name, ${imageKeySql('a')} as photo_key
  from app.comments c
  join app.users u on u.id = c.author_id
  left join app.assets a on a.id = u.profile_asset_id`;

async function shapeComment(storage: Storage, row: CommentRow): Promise<z.input<typeof comment>> {
  return {
    id: row.comment_id,
    postId: row.post_id,
    author: await shapeUserLite(storage, row),
    text: row.text,
    parentCommentId: row.parent_id,
    replyCount: row.reply_count,
    createdAt: row.created_at.toISOString(),
  };
}

async function readComment(tx: RequestTransaction, storage: Storage, id: string) {
  const { rows } = await tx.query<CommentRow>(`${commentRows} where c.id = $1`, [id]);
  return shapeComment(storage, rows[0] as CommentRow);
}

/**
 * One page of a post's top-level comments, or of the replies of one comment, oldest first: $1 the
 * post, $2 the parent comment (replies only), then the cursor (µs, id) and the row limit. The rows
 * come from app.comment_page (db/sql/comments.sql), which reads them through the comments and users
 * policies from a cursor that walks a range of the range's own index (comments_post_top,
 * comments_parent), so a page reads about a page of comments whatever the statistics say the post
 * holds (docs/performance.md, "Hot values").
 */
export function commentPageSql(replies: boolean): string {
  const [parent, after, afterId, limit] = replies ? ['$2::uuid', '$3', '$4', '$5'] : ['null', '$2', '$3', '$4'];
  return `
    select c.comment_id, c.post_id, c.body as text, c.parent_id, app.comment_reply_count(c.comment_id) as reply_count, c.created_at,
           ${micros('c.created_at')} as created_us, c.author_id as id, c.username, c.full_name, ${imageKeySql('a')} as photo_key
    from app.comment_page($1, ${parent}, ${fromMicros(after)}, ${afterId}::uuid, ${limit}::int) c
    left join app.assets a on a.id = c.profile_asset_id
    order by c.created_at, c.comment_id`;
}

export const endpoints = [
  endpoint({
    method: 'get',
    path: '/posts/{postId}/comments',
    tag,
    summary: 'Top-level comments, or the replies of parentCommentId, oldest first',
    auth: 'bearer',
    ids: { postId: 'POST_NOT_FOUND' },
    query: pageQuery(100, ['timestamp', 'id']).extend({ parentCommentId: z.string().max(64).optional() }),
    response: pageSchema(comment),
    async handler({ params, query, tx, services: { storage } }) {
      const post = await tx.query('select 1 from app.posts where id = $1', [params.postId]);
      if (post.rowCount === 0) throw new ApiError('POST_NOT_FOUND');
      const parent = query.parentCommentId ?? null;
      if (parent !== null && !isUuid(parent)) throw new ApiError('COMMENT_NOT_FOUND');
      const [afterUs, afterId] = (query.cursor ?? [null, null]) as [number | null, string | null];
      const position = [afterUs, afterId, query.limit + 1];
      const { rows } = await tx.query<CommentRow>(
        commentPageSql(parent !== null),
        parent === null ? [params.postId, ...position] : [params.postId, parent, ...position],
      );
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.created_us, row.comment_id],
        (row) => row,
      );
      return { items: await Promise.all(page.items.map((row) => shapeComment(storage, row))), nextCursor: page.nextCursor };
    },
  }),

  endpoint({
    method: 'post',
    path: '/posts/{postId}/comments',
    tag,
    summary: 'Comment on a post, or reply to a comment',
    description:
      'A reply to a reply attaches to the thread root. The post author gets post_commented (not for their own comments). A block ' +
      'between the commenter and the post author answers like a missing post.',
    auth: 'bearer',
    limit: 'comments',
    level: levels.profile,
    status: 201,
    ids: { postId: 'POST_NOT_FOUND' },
    body: z.strictObject({ text: trimmedText(1, textMax.comment), parentCommentId: z.string().max(64).optional() }),
    response: comment,
    errors: ['COMMENT_NOT_FOUND'],
    async handler({ body, params, tx, services: { storage } }) {
      const parent = body.parentCommentId ?? null;
      if (parent !== null && !isUuid(parent)) throw new ApiError('COMMENT_NOT_FOUND');
      const { rows } = await tx.query<{ id: string }>('select app.create_comment($1, $2, $3) as id', [params.postId, body.text, parent]);
      return readComment(tx, storage, rows[0]?.id as string);
    },
  }),

  endpoint({
    method: 'delete',
    path: '/comments/{commentId}',
    tag,
    summary: "Delete a comment (its author or the post's author)",
    auth: 'bearer',
    limit: 'other_writes',
    ids: { commentId: 'COMMENT_NOT_FOUND' },
    response: z.object({ deleted: z.literal(true) }),
    errors: ['FORBIDDEN'],
    async handler({ params, tx }) {
      await tx.query('select app.delete_comment($1)', [params.commentId]);
      return { deleted: true as const };
    },
  }),
];
