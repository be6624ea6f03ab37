// The votes feature's work in the worker: the tallier that folds sealed ballots into the vote
// counters (tally_ballots, queued by a vote once k are pending; contract 7 "Vote anonymity"), and
// the sweep that queues the tallies no vote queued.
import { workerFeature } from '../../feature.ts';
import { tallyBallots, tallySweep } from './tally-ballots.ts';

export const votes = workerFeature({
  tasks: {
    tally_ballots: ({ ballots }) => tallyBallots(ballots.box, ballots.batch),
    tally_sweep: ({ ballots }) => tallySweep(ballots.batch),
  },
  schedules: { tally_sweep: '* * * * *' },
});
