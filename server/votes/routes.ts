// Slider votes (spec 2.4, 4.5; contract section 7). The position travels from the request body
// into sealed ballots (ballots.ts) and nowhere else: the database, responses, logs, jobs and
// notifications never see it in the clear.
import { z } from 'zod';
import { levels } from '../http/access-levels.ts';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/ids.ts';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { setBounded } from '../../bounded-map.ts';
import type { BallotBox, SealedTally } from './ballots.ts';
import type { Viewer } from '../../db/viewer.ts';
import type { Services } from '../http/endpoint.ts';
import { distribute, distributionBucket, positions, summarize, tallySql, voteSummary, type Position } from './summary.ts';
import { text, textMax } from '../http/text.ts';

const tag = 'Votes';
const ids = { postId: 'POST_NOT_FOUND' } as const;
const minimumVotesToShow = 3 as const;

/** The five counts of a visible slider post in a scope: POST_NOT_FOUND, POST_NOT_VOTABLE. */
async function tally(tx: RequestTransaction, ballots: BallotBox, postId: string, hubId: string | null): Promise<number[]> {
  const { rows } = await tx.query<{ id: string; has_slider: boolean; tally: SealedTally }>(
    `select id, slider_text is not null as has_slider, ${tallySql('id', '$2::uuid')} as tally from app.posts where id = $1`,
    [postId, hubId],
  );
  const post = rows[0];
  if (!post) throw new ApiError('POST_NOT_FOUND');
  if (!post.has_slider) throw new ApiError('POST_NOT_VOTABLE');
  return ballots.openTally(post.tally, post.id, hubId);
}

/**
 * Where a vote may count, as this process last learned it (bounded memories, oldest out first):
 * the hubs a post's ballots were missing in an OBS01 answer, and each voter's hubs as app.cast_vote
 * answered them (a voter with at most 16 hubs; null when more). A vote seals one ballot per hub of
 * both; app.cast_vote drops ballots for hubs where the vote does not count, and answers SQLSTATE
 * OBS01 naming the hubs where it counts and that have none (a hub joined since, a voter with many
 * hubs on a post not seen yet): then the vote is sealed again for them. A stale entry costs one more
 * round trip, never a wrong count.
 */
const postScopes = new Map<string, string[]>();
const voterScopes = new Map<string, string[] | null>();
const scopesMax = 10_000;

/** Hub ids of both lists, once each, sorted. */
const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])].sort();

/**
 * The level a vote needs (profile basics), checked by app.cast_vote itself, first: its gate asks
 * app.access_level('profile'), and test/sql/auth/access-levels.test.ts holds the two equal.
 */
export const voteLevel = levels.profile;

interface CastVote {
  voted_at: Date;
  hub_ids: string[];
  global_tally: SealedTally;
  voter_hub_ids: string[] | null;
}

/**
 * The vote, sealed: one ballot for the global pool and one per hub this post may count in, sent to
 * app.cast_vote (one statement; it checks the session itself). An OBS01 answer (a hub with
 * no ballot) seals for those hubs too and votes again in a new transaction.
 */
async function castSealed(
  tx: RequestTransaction,
  services: Services,
  viewer: Viewer,
  postId: string,
  position: Position,
): Promise<CastVote> {
  const { pools, ballots, metrics, config } = services;
  const batch = config.ballotBatch;
  const voter = viewer.userId as string;
  let hubs = union(postScopes.get(postId) ?? [], voterScopes.get(voter) ?? []);
  for (let attempt = 0; ; attempt++) {
    const hex = (hubId: string | null) => ballots.seal(postId, hubId, position).toString('hex');
    const params = [postId, ballots.keyId, hex(null), `{${hubs.join(',')}}`, `{${hubs.map(hex).join(',')}}`, String(batch)];
    // A retry is a transaction of its own; app.cast_vote checks its session (queryAndCommit's level).
    // With its commit held (an Idempotency-Key), the failed attempt left the transaction usable: the
    // retry stays in it, with the key's lock and its kept answer.
    const transaction = attempt === 0 || tx.commitHeld ? tx : new RequestTransaction(pools.api, viewer, config.apiTimeouts);
    try {
      const { rows } = await transaction.queryAndCommit<CastVote>(
        'select voted_at, hub_ids, global_tally, voter_hub_ids from app.cast_vote($1, $2, $3, $4, $5, $6)',
        params,
        voteLevel, // app.cast_vote checks the session itself, first (db/sql/votes.sql)
      );
      const vote = rows[0] as CastVote;
      setBounded(voterScopes, voter, vote.voter_hub_ids, scopesMax);
      return vote;
    } catch (error) {
      const { code, detail } = error as { code?: string; detail?: string };
      if (code !== 'OBS01' || attempt >= 3) throw error;
      const missing = (detail ?? '').split(',').filter(Boolean);
      // The post remembers the hubs it was missing (not the voter's: those are the voter's entry).
      setBounded(postScopes, postId, union(postScopes.get(postId) ?? [], missing), scopesMax);
      hubs = union(hubs, missing);
      metrics.votes.resealed();
    }
  }
}

export const endpoints = [
  endpoint({
    method: 'post',
    path: '/posts/{postId}/vote',
    tag,
    summary: 'Cast your one vote on a post frame',
    description:
      'Needs profile basics only (no phone, no contacts), also for public hub content seen in General. Counts in the global ' +
      'pool and in every hub pool where the post is already targeted or shared and the voter is an active member, evaluated ' +
      'now (no backfill). hubVoteScope is null when only the global pool counted, else { hubIds }. Votes are final.',
    auth: 'bearer',
    level: voteLevel,
    sessionCheckWithFirstStatement: true,
    status: 201,
    ids,
    body: z.strictObject({ position: z.enum(positions) }),
    response: z.object({
      postId: z.string(),
      voteReceipt: z.object({
        hasVoted: z.literal(true),
        votedAt: z.string(),
        hubVoteScope: z.object({ hubIds: z.array(z.string()) }).nullable(),
      }),
      summary: voteSummary,
    }),
    errors: ['VOTE_NOT_ALLOWED', 'VOTE_ALREADY_CAST', 'POST_NOT_VOTABLE'],
    async handler({ body, params, tx, viewer, services }) {
      const postId = params.postId as string;
      const { ballots } = services;
      const vote = await castSealed(tx, services, viewer, postId, body.position);
      // The global tally before this vote, and the voter's own vote (known here, never stored in the clear).
      const counts = ballots.openTally(vote.global_tally, postId, null);
      const own = positions.indexOf(body.position);
      counts[own] = (counts[own] ?? 0) + 1;
      return {
        postId: params.postId as string,
        voteReceipt: {
          hasVoted: true as const,
          votedAt: vote.voted_at.toISOString(),
          hubVoteScope: vote.hub_ids.length > 0 ? { hubIds: vote.hub_ids } : null,
        },
        summary: summarize(counts),
      };
    },
  }),

  endpoint({
    method: 'get',
    path: '/posts/{postId}/vote/distribution',
    tag,
    summary: 'The five-position distribution, from 3 votes',
    description: 'With fewer than 3 votes resultsVisible is false and buckets is empty. Read from anonymous counters only.',
    auth: 'bearer',
    ids,
    response: z.object({
      totalVotes: z.number().int(),
      resultsVisible: z.boolean(),
      minimumVotesToShow: z.literal(minimumVotesToShow),
      buckets: z.array(distributionBucket).max(positions.length),
    }),
    errors: ['POST_NOT_VOTABLE'],
    async handler({ params, tx, services: { ballots } }) {
      const counts = await tally(tx, ballots, params.postId as string, null);
      const buckets = distribute(counts, minimumVotesToShow);
      return { totalVotes: counts.reduce((a, b) => a + b, 0), resultsVisible: buckets.length > 0, minimumVotesToShow, buckets };
    },
  }),

  endpoint({
    method: 'get',
    path: '/posts/{postId}/vote/me',
    tag,
    summary: 'Whether you voted on this frame, and when (never the position)',
    auth: 'bearer',
    ids,
    response: z.object({ hasVoted: z.boolean(), votedAt: z.string().nullable() }),
    async handler({ params, tx }) {
      const { rows } = await tx.query<{ visible: boolean; voted_at: Date | null }>(
        `select true as visible, r.voted_at from app.posts p
         left join app.vote_receipts r on r.post_id = p.id and r.user_id = app.viewer_id()
         where p.id = $1`,
        [params.postId],
      );
      const row = rows[0];
      if (!row) throw new ApiError('POST_NOT_FOUND');
      return { hasVoted: row.voted_at !== null, votedAt: row.voted_at?.toISOString() ?? null };
    },
  }),

  endpoint({
    method: 'get',
    path: '/posts/{postId}/vote/summary',
    tag,
    summary: 'Vote summary in the global scope, or in a hub scope with hubId',
    description:
      'A hub scope needs an active membership (HUB_MEMBERSHIP_REQUIRED) and the post placed in that hub (POST_NOT_FOUND). ' +
      'A zero-vote scope answers resultsVisible=false, totalVotes=0 and null counts.',
    auth: 'bearer',
    ids,
    query: z.object({ hubId: z.string().max(64).optional() }),
    response: voteSummary.extend({ scope: z.object({ type: z.enum(['global', 'hub']), hubId: z.string().nullable() }) }),
    errors: ['POST_NOT_VOTABLE', 'HUB_MEMBERSHIP_REQUIRED', 'HUB_NOT_FOUND'],
    async handler({ params, query, tx, services: { ballots } }) {
      const hubId = query.hubId ?? null;
      if (hubId !== null) {
        if (!isUuid(hubId)) throw new ApiError('HUB_NOT_FOUND');
        await tx.query('select app.require_hub_role($1, $2::app.hub_role[])', [hubId, ['member', 'admin', 'super_admin']]);
        const placed = await tx.query('select 1 from app.post_hubs where post_id = $1 and hub_id = $2', [params.postId, hubId]);
        if (placed.rowCount === 0) throw new ApiError('POST_NOT_FOUND');
      }
      const counts = await tally(tx, ballots, params.postId as string, hubId);
      return { scope: { type: hubId ? ('hub' as const) : ('global' as const), hubId }, ...summarize(counts) };
    },
  }),

  endpoint({
    method: 'get',
    path: '/posts/{postId}/vote/hubs',
    tag,
    summary: 'Vote summaries per hub, for hubs where you are an active member and the post is placed',
    auth: 'bearer',
    ids,
    response: z.object({ items: z.array(voteSummary.extend({ hubId: z.string(), hubName: text(textMax.hubName) })) }),
    errors: ['POST_NOT_VOTABLE'],
    async handler({ params, tx, services: { ballots } }) {
      await tally(tx, ballots, params.postId as string, null);
      const { rows } = await tx.query<{ hub_id: string; name: string; tally: SealedTally }>(
        // The placements the viewer may see (the policy keeps the hubs they are an active member of,
        // which the (post, hub) key probes one by one), each hub's name read by its key: a scalar
        // subquery, which the planner cannot turn into a scan of every hub.
        `select hub_id, name, tally
         from (select ph.hub_id, (select h.name from app.hubs h where h.id = ph.hub_id) as name, ${tallySql('ph.post_id', 'ph.hub_id')} as tally
               from app.post_hubs ph
               where ph.post_id = $1
               offset 0) placed
         where name is not null
         order by name, hub_id`,
        [params.postId],
      );
      const postId = params.postId as string;
      return {
        items: rows.map((row) => ({
          hubId: row.hub_id,
          hubName: row.name,
          ...summarize(ballots.openTally(row.tally, postId, row.hub_id)),
        })),
      };
    },
  }),
];
