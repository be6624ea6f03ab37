// The vote as the API of migrations/frozen/0130 sent it (BENCH_BEFORE of that era; this tree's API sends
// the opening, an unnamed cast_vote and commit, db/request-transaction.ts): the opening with app.session_gate, the prepared
// cast_vote and `commit`, pipelined in one write, three answers.
import type pg from 'pg';
import { beginAs, sessionGate, type Viewer } from '../../db/viewer.ts';
import { BallotBox, type BallotPosition } from '../../server/votes/ballots.ts';

export async function gatePipeline(pool: pg.Pool, viewer: Viewer, text: string, values: string[]): Promise<void> {
  const client = await pool.connect();
  const stream = client.connection.stream;
  stream.cork();
  const pending = [
    client.query(`${beginAs(viewer)} ${sessionGate(2)}`),
    client.query({ name: 'cast_vote', text, values }),
    client.query('commit'),
  ];
  stream.uncork();
  const settled = await Promise.allSettled(pending);
  client.release();
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}

/** The sealed vote of migrations/frozen/0290 as the API sends it: the statement and its text parameters (global scope only). */
export const sealedVoteText = 'select voted_at, hub_ids, global_tally from app.cast_vote($1, $2, $3, $4, $5, $6)';
export function sealedVoteParams(box: BallotBox, postId: string, position: BallotPosition, batch: number): string[] {
  return [postId, box.keyId, box.seal(postId, null, position).toString('hex'), '{}', '{}', String(batch)];
}

/** BALLOT_KEY of the benchmark's service, and a box with the same key for the load processes. */
export function benchBallotKey(hex: string): { setting: string; box: BallotBox } {
  return { setting: `bench:${hex}`, box: new BallotBox([{ id: 'bench', key: Buffer.from(hex, 'hex') }]) };
}
