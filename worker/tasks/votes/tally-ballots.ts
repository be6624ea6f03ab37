// The tallier (contract 7 "Vote anonymity", db/sql/votes.sql): folds the pending sealed ballots of
// one post and scope into the vote counters, at least `batch` (k) at a time, in one transaction:
// take the scope's lock (one tallier per post and scope) and its pending ballots, open them here,
// then delete exactly those ballots and add their sum to one counter slot. A crash anywhere before
// the commit leaves every ballot pending and the counters unchanged; a repeat or an overlapping run
// finds the ballots gone (or waits for the lock and finds fewer than k): each ballot is counted
// once. The payload names the post and scope only; nothing here logs a position.
import type { Task } from 'graphile-worker';
import type { BallotOpener } from './ballot-opener.ts';

export interface TallyPayload {
  postId: string;
  hubId: string | null;
}

/** Ballots folded per run, at most: a scope with more pending is queued again (the rest, when at least k). */
const maxBatch = 5000;

export function tallyBallots(box: BallotOpener, batch: number): Task {
  return async (payload, { withPgClient }) => {
    const { postId, hubId } = payload as TallyPayload;
    await withPgClient(async (client) => {
      await client.query('begin');
      try {
        const { rows } = await client.query<{ id: string; key_id: string; sealed: string }>(
          'select id, key_id, sealed from app_private.ballots_to_tally($1, $2, $3)',
          [postId, hubId, batch],
        );
        if (rows.length < batch) {
          await client.query('rollback');
          return;
        }
        const taken = rows.length - maxBatch >= batch ? rows.slice(0, maxBatch) : rows;
        const counts = [0, 0, 0, 0, 0];
        for (const row of taken) {
          const index = box.open(postId, hubId, row.key_id, Buffer.from(row.sealed, 'base64'));
          counts[index] = (counts[index] ?? 0) + 1;
        }
        await client.query('select app_private.tally_ballots($1, $2, $3, $4, $5)', [
          postId,
          hubId,
          taken.map((row) => row.id),
          counts,
          batch,
        ]);
        if (taken.length < rows.length) await client.query('select app_private.queue_tally($1, $2)', [postId, hubId]);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback').catch(() => undefined);
        throw error;
      }
    });
  };
}

/** Every minute: queues the tally of every scope holding k or more pending ballots that no vote queued. */
export function tallySweep(batch: number): Task {
  return async (_payload, { withPgClient }) => {
    await withPgClient((client) => client.query('select app_private.queue_due_tallies($1)', [batch]));
  };
}
