// Vote tallies as the API shows them (spec 2.4, 4.5; contract section 7). A tally is the anonymous
// counters plus the scope's pending sealed ballots, opened here (app.vote_tally, ballots.ts):
// five counts in position order, exact as of the statement that read them.
import { z } from 'zod';
import { ballotPositions } from './ballots.ts';

/** The five positions, in order (the order of a sealed ballot's index and of app.vote_position). */
export const positions = ballotPositions;
export type Position = (typeof positions)[number];
const buckets: Record<Position, 'left' | 'neutral' | 'right'> = {
  strong_left: 'left',
  left: 'left',
  neutral: 'neutral',
  right: 'right',
  strong_right: 'right',
};

export const voteSummary = z
  .object({
    totalVotes: z.number().int(),
    resultsVisible: z.boolean(),
    leftCount: z.number().int().nullable(),
    neutralCount: z.number().int().nullable(),
    rightCount: z.number().int().nullable(),
  })
  .meta({ id: 'VoteSummary' });

export const distributionBucket = z
  .object({
    position: z.enum(positions),
    bucket: z.enum(['left', 'neutral', 'right']),
    count: z.number().int(),
  })
  .meta({ id: 'DistributionBucket' });

/** Summary buckets: visible from the first vote; a zero-vote scope shows nulls. */
export function summarize(counts: number[]): z.input<typeof voteSummary> {
  const total = counts.reduce((sum, n) => sum + n, 0);
  const [strongLeft = 0, left = 0, neutral = 0, right = 0, strongRight = 0] = counts;
  if (total === 0) return { totalVotes: 0, resultsVisible: false, leftCount: null, neutralCount: null, rightCount: null };
  return { totalVotes: total, resultsVisible: true, leftCount: strongLeft + left, neutralCount: neutral, rightCount: right + strongRight };
}

/** The five positions in order; empty when no votes (or under a threshold). */
export function distribute(counts: number[], minimum = 1): z.input<typeof distributionBucket>[] {
  const total = counts.reduce((sum, n) => sum + n, 0);
  if (total < minimum) return [];
  return positions.map((position, i) => ({ position, bucket: buckets[position], count: counts[i] ?? 0 }));
}

/**
 * SQL for a post's tally in a scope (app.vote_tally: counter sums and pending sealed ballots, a
 * jsonb; null for a post the viewer may not see): open it with BallotBox.openTally.
 */
export function tallySql(post: string, hub: string): string {
  return `app.vote_tally(${post}, ${hub})`;
}
