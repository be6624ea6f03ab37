// The vote as the API of migrations/0130 sent it (BENCH_BEFORE of that era; this tree's API sends
// one batch with one Sync, db/single-sync.ts): the opening with app.session_gate, the prepared
// cast_vote and `commit`, pipelined in one write, three answers.
import type pg from 'pg';
import { beginAs, sessionGate, type Viewer } from '../../db/viewer.ts';

export async function gatePipeline(pool: pg.Pool, viewer: Viewer, text: string, values: string[]): Promise<void> {
  const client = await pool.connect();
  const stream = client.connection.stream;
  stream.cork();
  const pending = [client.query(`${beginAs(viewer)} ${sessionGate(viewer, 2)}`), client.query({ name: 'cast_vote', text, values }), client.query('commit')];
  stream.uncork();
  const settled = await Promise.allSettled(pending);
  client.release();
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}
