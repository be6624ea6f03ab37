// One page of a feed (contract section 7 "Feeds"): the feed functions of db/sql/feeds.sql
// choose the frames (one card per frame at its newest event this viewer may see now), the card
// query shapes them. The cursor holds the snapshot time of the first page and the (time, post id)
// of the last card, so pages neither repeat nor skip a card while posts are being added.
import type { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { ApiError } from '../http/errors.ts';
import { fromMicros, micros, pageQuery, toPage } from '../http/paging.ts';
import { readCards, type CardReader, type FeedContext, type PostCard } from '../posts/card.ts';

/** A position: the snapshot (µs), the last card's event time (µs) and its post id. */
export const feedQuery = pageQuery(50, ['timestamp', 'timestamp', 'id']);

/** The largest uuid: the first page's tie-breaker, so every event at the snapshot counts. */
const lastUuid = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

interface FeedPosition {
  snapshotUs: number;
  atUs: number;
  postId: string;
}

/**
 * The decoded cursor (its shape checked by pageQuery) checked further before it reaches SQL: times
 * after the epoch, the card not after the snapshot. A forged one is 422, never a 500.
 */
function feedPosition(cursor: z.output<typeof feedQuery>['cursor']): FeedPosition | null {
  if (cursor === undefined) return null;
  const [snapshotUs, atUs, postId] = cursor;
  if (atUs < 0 || atUs > snapshotUs) throw new ApiError('VALIDATION_FAILED', { fields: { cursor: 'Invalid cursor' } });
  return { snapshotUs, atUs, postId };
}

export type FeedFunction = 'home_feed' | 'profile_feed' | 'hub_feed';

interface FeedRow {
  post_id: string;
  context: FeedContext | null;
  at_us: number;
  snapshot_us: number;
}

/**
 * A page of `feed` for the request's viewer; `subject` is the profile's user or the hub (not for
 * Home). `hubScope` selects the displayed vote scope of the cards (the hub feed's hub).
 */
export async function readFeedPage(
  tx: RequestTransaction,
  reader: CardReader,
  feed: FeedFunction,
  subject: string | null,
  query: z.output<typeof feedQuery>,
  hubScope: string | null = null,
): Promise<{ items: PostCard[]; nextCursor: string | null }> {
  const position = feedPosition(query.cursor);
  const subjectArgument = subject === null ? '' : '$5::uuid, ';
  const { rows } = await tx.query<FeedRow>(
    `select f.post_id, f.context, ${micros('f.at')} as at_us, ${micros('s.snapshot')} as snapshot_us
     from (select coalesce(${fromMicros('$1')}, now()) as snapshot) s
     cross join lateral app.${feed}(${subjectArgument}s.snapshot, coalesce(${fromMicros('$2')}, s.snapshot), coalesce($3::uuid, '${lastUuid}'), $4) f
     order by f.at desc, f.post_id desc`,
    [position?.snapshotUs ?? null, position?.atUs ?? null, position?.postId ?? null, query.limit, ...(subject === null ? [] : [subject])],
  );
  const page = toPage(
    rows,
    query.limit,
    (row) => [row.snapshot_us, row.at_us, row.post_id],
    (row) => row,
  );
  const contexts = new Map(page.items.map((row) => [row.post_id, row.context]));
  const items = await readCards(
    tx,
    reader,
    page.items.map((row) => row.post_id),
    hubScope,
    contexts,
  );
  return { items, nextCursor: page.nextCursor };
}
