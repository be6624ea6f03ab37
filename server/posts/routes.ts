// /posts: create, read, delete, frames, reposts, shares and bookmarks (spec 2.3, 4.5; contract 7).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { fromMicros, micros, pageQuery, pageSchema, toPage } from '../http/paging.ts';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { postCard, readCard, readCards } from './card.ts';
import { article, audienceText, checkFrame, frameFields, frameRules, idList, postHubsMax, requires, visibility } from './fields.ts';
import { savedPostEndpoints } from './saved-posts.ts';
import { text, textMax } from '../http/text.ts';
import { requireUsableAssets } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Posts';
const ids = { postId: 'POST_NOT_FOUND' } as const;

async function requireCard(tx: RequestTransaction, reader: Parameters<typeof readCard>[1], postId: string) {
  const card = await readCard(tx, reader, postId);
  if (!card) throw new ApiError('POST_NOT_FOUND');
  return card;
}

/** The frame columns of app.create_post / app.create_repost, in their argument order. */
function frameArgs(body: {
  thoughtText?: string | undefined;
  sliderText?: string | undefined;
  slider?: { leftLabel: string; rightLabel: string } | undefined;
}) {
  return [body.thoughtText ?? null, body.sliderText ?? null, body.slider?.leftLabel ?? null, body.slider?.rightLabel ?? null];
}

const shareResult = z.object({ shareId: z.string(), postId: z.string(), sharedAt: z.string() });

async function shareToFeed(tx: RequestTransaction, postId: string) {
  const { rows } = await tx.query<{ share_id: string; shared_at: Date }>('select share_id, shared_at from app.share_post_to_feed($1)', [
    postId,
  ]);
  const share = rows[0] as { share_id: string; shared_at: Date };
  return { shareId: share.share_id, postId, sharedAt: share.shared_at.toISOString() };
}

/** Frames are paged by [kind, created_at in µs, id]: 1 for the original, 0 for a repost. */
// Position [kind, created_at, id]: kind 1 is the original, 0 a repost.
const framesQuery = pageQuery(50, ['int', 'timestamp', 'id']).refine(
  (query) => query.cursor === undefined || query.cursor[0] === 0 || query.cursor[0] === 1,
  {
    path: ['cursor'],
    message: 'Invalid cursor',
  },
);

export const endpoints = [
  endpoint({
    method: 'post',
    path: '/posts',
    tag,
    summary: 'Publish a post',
    description:
      'Needs at least one of article, thoughtText, sliderText; slider and sliderText go together (a post without a slider is ' +
      `not votable). ${audienceText} where ` +
      'the author is an active member (the level is checked after the body, since it depends on visibility). A media ' +
      "article takes the author's completed post_image assets. Members of target hubs get hub_post_created.",
    auth: 'bearer',
    limit: { name: 'posts', hubsIn: 'hubIds' },
    level: levels.phone,
    status: 201,
    body: z
      .strictObject({ article: article.optional(), ...frameFields, visibility })
      .superRefine((value, ctx) => {
        if (!value.article && !value.thoughtText && !value.sliderText) {
          ctx.addIssue({ code: 'custom', path: ['thoughtText'], message: 'A post needs an article, a thought or a slider' });
        }
        checkFrame(value, ctx);
      })
      .meta({
        ...frameRules,
        anyOf: [requires('article'), requires('thoughtText'), requires('sliderText')],
        examples: [
          {
            thoughtText: 'Remote work made our team faster, not slower.',
            sliderText: 'Should offices stay optional?',
            slider: { leftLabel: 'Always optional', rightLabel: 'Back to the office' },
            visibility: 'public',
          },
        ],
      }),
    response: postCard,
    errors: ['ASSET_NOT_READY', 'HUB_READINESS_REQUIRED', 'HUB_MEMBERSHIP_REQUIRED', 'HUB_NOT_FOUND'],
    async handler({ body, tx, services: { storage, ballots } }) {
      if (body.article?.assetIds?.length) {
        await requireUsableAssets(
          tx,
          'app.post_assets_usable($1::uuid[])',
          body.article.assetIds,
          body.article.assetIds,
          () => new ApiError('VALIDATION_FAILED', { fields: { 'article.assetIds': 'Must be ready post_image assets of yours' } }),
        );
      }
      const { rows } = await tx.query<{ id: string }>('select app.create_post($1, $2, $3, $4, $5, $6, $7) as id', [
        body.article ?? null,
        ...frameArgs(body),
        body.visibility,
        body.hubIds ?? [],
      ]);
      return requireCard(tx, { storage, ballots }, rows[0]?.id as string);
    },
  }),

  endpoint({
    method: 'get',
    path: '/posts/{postId}',
    tag,
    summary: 'A post card',
    description: 'A post the viewer may not see (private_locked_hub outside its hubs, deleted, blocked author) answers like a missing one.',
    auth: 'bearer',
    ids,
    response: postCard,
    handler: ({ params, tx, services: { storage, ballots } }) => requireCard(tx, { storage, ballots }, params.postId as string),
  }),

  endpoint({
    method: 'delete',
    path: '/posts/{postId}',
    tag,
    summary: 'Delete a post (its author only)',
    description: 'The post disappears everywhere and stops counting as an active repost of its source.',
    auth: 'bearer',
    limit: 'other_writes',
    ids,
    response: z.object({ deleted: z.literal(true) }),
    errors: ['FORBIDDEN'],
    async handler({ params, tx }) {
      await tx.query('select app.delete_post($1)', [params.postId]);
      return { deleted: true as const };
    },
  }),

  endpoint({
    method: 'get',
    path: '/posts/{postId}/frames',
    tag,
    summary: 'The original frame and its direct reposts',
    description:
      'For a repost id, the frames of its original. The original comes first, then reposts newest first. ' +
      'Pages are keyset pages: reposts added while a client pages appear on no later page, and no item repeats.',
    auth: 'bearer',
    ids,
    query: framesQuery,
    response: pageSchema(postCard),
    async handler({ params, query, tx, services: { storage, ballots } }) {
      const original = await tx.query<{ id: string }>('select coalesce(source_post_id, id) as id from app.posts where id = $1', [
        params.postId,
      ]);
      const originalId = original.rows[0]?.id;
      if (!originalId) throw new ApiError('POST_NOT_FOUND');
      // Position: [1, us, id] for the original, [0, us, id] for a repost (ordered by kind, then
      // created_at and id, all descending). The original is only on the first page.
      const [kind, afterUs, afterId] = (query.cursor ?? [null, null, null]) as [0 | 1 | null, number | null, string | null];
      const { rows } = await tx.query<{ id: string; kind: 0 | 1; created_us: number }>(
        `select id, 1 as kind, ${micros('created_at')} as created_us from app.posts where id = $1 and $2::int is null
         union all
         (select id, 0, ${micros('created_at')} from app.posts
           where source_post_id = $1
             and ($2::int is distinct from 0 or (created_at, id) < (${fromMicros('$3')}, $4::uuid))
           order by created_at desc, id desc
           limit $5)
         order by kind desc, created_us desc, id desc
         limit $5`,
        [originalId, kind, afterUs, afterId, query.limit + 1],
      );
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.kind, row.created_us, row.id],
        (row) => row.id,
      );
      return { items: await readCards(tx, { storage, ballots }, page.items), nextCursor: page.nextCursor };
    },
  }),

  endpoint({
    method: 'post',
    path: '/posts/{postId}/reposts',
    tag,
    summary: 'Repost: a new frame with its own thought and/or slider',
    description:
      'Not of a repost and not of a private_locked_hub post (REPOST_NOT_ALLOWED); no article. Audience rules as for POST /posts. ' +
      'A body with neither thoughtText nor sliderText is a feed share and answers like POST /posts/{postId}/share/feed. ' +
      'The source author gets post_reposted (one global row, or for a private_locked_hub repost one row per target hub they ' +
      'belong to); target hub members get post_shared_to_hub.',
    auth: 'bearer',
    limit: { name: 'posts', hubsIn: 'hubIds' },
    level: levels.profile,
    status: 201,
    ids,
    body: z
      .strictObject({ ...frameFields, visibility: visibility.optional() })
      .superRefine((value, ctx) => {
        const isRepost = value.thoughtText !== undefined || value.sliderText !== undefined || value.slider !== undefined;
        if (isRepost && !value.visibility) ctx.addIssue({ code: 'custom', path: ['visibility'], message: 'Required' });
        checkFrame(value, ctx);
      })
      .meta({
        dependentRequired: frameRules.dependentRequired,
        allOf: [
          ...frameRules.allOf,
          { if: { anyOf: [requires('thoughtText'), requires('sliderText'), requires('slider')] }, then: requires('visibility') },
        ],
        examples: [{ thoughtText: 'Worth reading before the vote.', visibility: 'public' }],
      }),
    response: z.union([postCard, shareResult]),
    errors: ['REPOST_NOT_ALLOWED', 'SHARE_NOT_ALLOWED', 'PHONE_VERIFICATION_REQUIRED', 'HUB_READINESS_REQUIRED', 'HUB_MEMBERSHIP_REQUIRED'],
    async handler({ body, params, tx, services: { storage, ballots } }) {
      if (body.thoughtText === undefined && body.sliderText === undefined) return shareToFeed(tx, params.postId as string);
      const { rows } = await tx.query<{ id: string }>('select app.create_repost($1, $2, $3, $4, $5, $6, $7) as id', [
        params.postId,
        ...frameArgs(body),
        body.visibility,
        body.hubIds ?? [],
      ]);
      return requireCard(tx, { storage, ballots }, rows[0]?.id as string);
    },
  }),

  endpoint({
    method: 'post',
    path: '/posts/{postId}/share/feed',
    tag,
    summary: 'Share a post to your feed (repeatable)',
    description:
      'A share event pointing at the exact frame given (a repost is not collapsed to its original): no new frame, poll or ' +
      'repost count. Not for private_locked_hub posts (SHARE_NOT_ALLOWED). The frame author gets post_shared_to_feed.',
    auth: 'bearer',
    limit: 'shares',
    level: levels.profile,
    status: 201,
    ids,
    response: shareResult,
    errors: ['SHARE_NOT_ALLOWED'],
    handler: ({ params, tx }) => shareToFeed(tx, params.postId as string),
  }),

  endpoint({
    method: 'post',
    path: '/posts/{postId}/share/hubs',
    tag,
    summary: 'Share a post into hubs you are an active member of',
    description:
      'No new frame. Not for private_locked_hub posts (SHARE_NOT_ALLOWED). Opens each hub discussion of the post; members of ' +
      'each hub (not the sharer) get post_shared_to_hub.',
    auth: 'bearer',
    limit: { name: 'shares', hubsIn: 'hubIds' },
    level: levels.hubReady,
    status: 201,
    ids,
    body: z.strictObject({ hubIds: idList(postHubsMax).min(1) }),
    response: z.object({ postId: z.string(), hubIds: z.array(z.string()).max(postHubsMax) }),
    errors: ['SHARE_NOT_ALLOWED', 'HUB_MEMBERSHIP_REQUIRED', 'HUB_NOT_FOUND'],
    async handler({ body, params, tx }) {
      const hubIds = [...new Set(body.hubIds.map((id) => id.toLowerCase()))];
      await tx.query('select app.share_post_to_hubs($1, $2)', [params.postId, hubIds]);
      return { postId: params.postId as string, hubIds };
    },
  }),

  endpoint({
    method: 'get',
    path: '/posts/{postId}/share-link',
    tag,
    summary: 'A public link and share text for the device share sheet',
    description: 'Not for private_locked_hub posts (SHARE_NOT_ALLOWED).',
    auth: 'bearer',
    level: levels.profile,
    ids,
    response: z.object({ url: text(textMax.url), shareText: text(textMax.shareText) }),
    errors: ['SHARE_NOT_ALLOWED'],
    async handler({ params, tx, services: { config } }) {
      const { rows } = await tx.query<{ stays_in_hubs: boolean; title: string | null }>(
        'select app.post_stays_in_hubs(visibility) as stays_in_hubs, coalesce(slider_text, thought_text) as title from app.posts where id = $1',
        [params.postId],
      );
      const post = rows[0];
      if (!post) throw new ApiError('POST_NOT_FOUND');
      if (post.stays_in_hubs) throw new ApiError('SHARE_NOT_ALLOWED');
      const url = `${config.publicWebBaseUrl}/p/${params.postId}`;
      return { url, shareText: post.title ? `${post.title.slice(0, 120)} ${url}` : url };
    },
  }),

  endpoint({
    method: 'post',
    path: '/posts/{postId}/save',
    tag,
    summary: 'Bookmark a post (idempotent)',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.profile,
    ids,
    response: z.object({ saved: z.literal(true) }),
    async handler({ params, tx }) {
      const visible = await tx.query('select 1 from app.posts where id = $1', [params.postId]);
      if (visible.rowCount === 0) throw new ApiError('POST_NOT_FOUND');
      await tx.query('insert into app.saved_posts (user_id, post_id) values (app.viewer_id(), $1) on conflict do nothing', [params.postId]);
      return { saved: true as const };
    },
  }),

  endpoint({
    method: 'delete',
    path: '/posts/{postId}/save',
    tag,
    summary: 'Remove a bookmark (a no-op when not saved)',
    auth: 'bearer',
    limit: 'other_writes',
    level: levels.profile,
    ids,
    response: z.object({ saved: z.literal(false) }),
    async handler({ params, tx }) {
      await tx.query('delete from app.saved_posts where user_id = app.viewer_id() and post_id = $1', [params.postId]);
      return { saved: false as const };
    },
  }),
  ...savedPostEndpoints,
];
