// The post card (contract section 7), built for a whole page in one query: rows come through the
// posts policy (invisible posts drop out, an invisible or deleted source shows sourcePost: null),
// vote results only when the viewer voted on the frame or wrote it, never a position.
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { BallotBox, SealedTally } from '../votes/ballots.ts';
import type { Storage } from '../uploads/storage.ts';
import { shapeUserLite, userLite } from '../shapes/user-lite.ts';
import { distribute, distributionBucket, positions, summarize, tallySql, voteSummary } from '../votes/summary.ts';
import { maintainedCount } from '../http/counts.ts';
import { articleKinds, articleMediaMax, visibilities, type ArticleKind, type Visibility } from './fields.ts';
import { nullableText, text, textMax } from '../http/text.ts';
import { imageColumnsSql, imageKeySql, mediaLayout, shapeImage, type ImageColumns } from '../uploads/images.ts';

const article = z
  .object({
    kind: z.enum(articleKinds),
    url: nullableText(textMax.articleUrl),
    title: nullableText(textMax.articleTitle),
    text: nullableText(textMax.articleText),
    media: z
      .array(
        z.object({
          assetId: z.string(),
          url: nullableText(textMax.url).describe('Signed URL of the 1280 px WebP variant (or the largest below)'),
          ...mediaLayout,
        }),
      )
      .max(articleMediaMax),
  })
  .meta({ id: 'Article' });

const slider = z.object({ leftLabel: text(textMax.sliderLabel), rightLabel: text(textMax.sliderLabel) }).meta({ id: 'Slider' });

/** The enum app.feed_context, in the order a card's context is chosen. */
export const feedContexts = [
  'own_post',
  'followed_author',
  'hub_co_member_author',
  'joined_hub_post',
  'friend_interaction',
  'shared_to_hub',
  'default_feed_user',
] as const;

export const postCard = z
  .object({
    id: z.string(),
    author: userLite,
    createdAt: z.string(),
    article: article.nullable(),
    thoughtText: nullableText(textMax.thought),
    sliderText: nullableText(textMax.sliderText),
    slider: slider.nullable(),
    visibility: z.enum(visibilities),
    sourcePostId: z.string().nullable(),
    sourcePost: z
      .object({
        id: z.string(),
        article: article.nullable(),
        thoughtText: nullableText(textMax.thought),
        sliderText: nullableText(textMax.sliderText),
        slider: slider.nullable(),
      })
      .nullable(),
    repostCount: maintainedCount('reposts of this post that are not deleted'),
    commentCount: maintainedCount('comments on this post, replies included, that are not deleted'),
    viewerVote: z.object({ hasVoted: z.boolean(), votedAt: z.string().nullable() }),
    voteSummary: voteSummary.nullable(),
    voteDistribution: z.array(distributionBucket).max(positions.length).nullable(),
    viewerSaved: z.boolean(),
    feedContext: z.enum(feedContexts).nullable(),
  })
  .meta({ id: 'PostCard' });

export type PostCard = z.input<typeof postCard>;
export type FeedContext = (typeof feedContexts)[number];

interface ArticleColumns {
  kind: ArticleKind;
  url: string | null;
  title: string | null;
  body: string | null;
  media: { assetId: string; key: string | null; image: ImageColumns | null }[];
}

interface CardRow {
  id: string;
  created_at: Date;
  thought_text: string | null;
  slider_text: string | null;
  slider_left_label: string | null;
  slider_right_label: string | null;
  visibility: Visibility;
  source_post_id: string | null;
  repost_count: number;
  comment_count: number;
  author_id: string;
  author_username: string | null;
  author_full_name: string | null;
  author_photo_key: string | null;
  article: ArticleColumns | null;
  source: {
    id: string;
    thought_text: string | null;
    slider_text: string | null;
    left: string | null;
    right: string | null;
    article: ArticleColumns | null;
  } | null;
  voted_at: Date | null;
  tally: SealedTally | null;
  saved: boolean;
}

const articleJson = (alias: string) => `case when ${alias}.id is null then null else jsonb_build_object(
  'kind', ${alias}.kind, 'url', ${alias}.url, 'title', ${alias}.title, 'body', ${alias}.body,
  'media', coalesce((select jsonb_agg(jsonb_build_object('assetId', x.id, 'key', ${imageKeySql('x')}, 'image', ${imageColumnsSql('x')}) order by array_position(${alias}.asset_ids, x.id))
                     from app.assets x where x.id = any (${alias}.asset_ids)), '[]')) end`;

/**
 * The card query. A guest (no token, app_anonymous) has no vote receipts or bookmarks, and that
 * role may not read those tables: its cards say so without reading them.
 */
const cardQuery = (signedIn: boolean) => `
  select p.id, p.created_at, p.thought_text, p.slider_text, p.slider_left_label, p.slider_right_label, p.visibility,
         p.source_post_id, app.post_repost_count(p.id) as repost_count, app.post_comment_count(p.id) as comment_count, p.author_id,
         u.username as author_username, u.full_name as author_full_name, ${imageKeySql('ua')} as author_photo_key,
         ${articleJson('ar')} as article,
         case when s.id is null then null else jsonb_build_object(
           'id', s.id, 'thought_text', s.thought_text, 'slider_text', s.slider_text, 'left', s.slider_left_label,
           'right', s.slider_right_label, 'article', ${articleJson('sar')}) end as source,
         ${
           signedIn
             ? `vr.voted_at,
         case when p.slider_text is not null and (vr.voted_at is not null or p.author_id = app.viewer_id())
              then ${tallySql('p.id', '$2::uuid')} end as tally,
         exists (select from app.saved_posts sp where sp.post_id = p.id and sp.user_id = app.viewer_id()) as saved`
             : 'null::timestamptz as voted_at, null::jsonb as tally, false as saved'
         }
  from unnest($1::uuid[]) with ordinality wanted (id, ord)
  join app.posts p on p.id = wanted.id
  join app.users u on u.id = p.author_id
  left join app.assets ua on ua.id = u.profile_asset_id
  left join app.articles ar on ar.id = p.article_id
  left join app.posts s on s.id = p.source_post_id
  left join app.articles sar on sar.id = s.article_id
  ${signedIn ? 'left join app.vote_receipts vr on vr.post_id = p.id and vr.user_id = app.viewer_id()' : ''}
  order by wanted.ord`;

/** What a card needs beyond the transaction: object storage (photo URLs) and the ballot box (pending ballots of the tally). */
export interface CardReader {
  storage: Storage;
  ballots: BallotBox;
}

async function shapeArticle(storage: Storage, columns: ArticleColumns | null) {
  if (!columns) return null;
  return {
    kind: columns.kind,
    url: columns.url,
    title: columns.title,
    text: columns.body,
    media: await Promise.all(
      columns.media.map(async (m) => ({ assetId: m.assetId, url: await storage.photoUrl(m.key), ...(await shapeImage(storage, m.image)) })),
    ),
  };
}

function shapeSlider(text: string | null, left: string | null, right: string | null) {
  return text !== null && left !== null && right !== null ? { leftLabel: left, rightLabel: right } : null;
}

/**
 * Cards for the given post ids, in that order, as the viewer sees them; ids the viewer may not see
 * are left out. `hubId` selects the displayed vote scope (null: global). `contexts` gives the
 * feedContext of feed items (server/feeds); other cards carry null.
 */
export async function readCards(
  tx: RequestTransaction,
  { storage, ballots }: CardReader,
  ids: string[],
  hubId: string | null = null,
  contexts: ReadonlyMap<string, FeedContext | null> = new Map(),
): Promise<PostCard[]> {
  if (ids.length === 0) return [];
  const signedIn = tx.viewer.userId !== null;
  const { rows } = await tx.query<CardRow>(cardQuery(signedIn), signedIn ? [ids, hubId] : [ids]);
  return Promise.all(
    rows.map(async (row) => {
      const tally = row.tally ? ballots.openTally(row.tally, row.id, hubId) : null;
      return {
        id: row.id,
        author: await shapeUserLite(storage, {
          id: row.author_id,
          username: row.author_username,
          full_name: row.author_full_name,
          photo_key: row.author_photo_key,
        }),
        createdAt: row.created_at.toISOString(),
        article: await shapeArticle(storage, row.article),
        thoughtText: row.thought_text,
        sliderText: row.slider_text,
        slider: shapeSlider(row.slider_text, row.slider_left_label, row.slider_right_label),
        visibility: row.visibility,
        sourcePostId: row.source_post_id,
        sourcePost: row.source
          ? {
              id: row.source.id,
              article: await shapeArticle(storage, row.source.article),
              thoughtText: row.source.thought_text,
              sliderText: row.source.slider_text,
              slider: shapeSlider(row.source.slider_text, row.source.left, row.source.right),
            }
          : null,
        repostCount: row.repost_count,
        commentCount: row.comment_count,
        viewerVote: { hasVoted: row.voted_at !== null, votedAt: row.voted_at?.toISOString() ?? null },
        voteSummary: tally ? summarize(tally) : null,
        voteDistribution: tally ? distribute(tally) : null,
        viewerSaved: row.saved,
        feedContext: contexts.get(row.id) ?? null,
      };
    }),
  );
}

/** One card, or POST_NOT_FOUND-style undefined when the viewer may not see it. */
export async function readCard(tx: RequestTransaction, reader: CardReader, id: string, hubId: string | null = null) {
  return (await readCards(tx, reader, [id], hubId))[0];
}
