// What one vote's transaction costs a client, one at a time (`npm run bench -- vote-trip`): the
// time from sending the vote's SQL exactly as the API sends it (RequestTransaction: the deferred
// session check covered by app.cast_vote, the sealed vote, the commit) to its answer, with nothing
// else running, so the figure is the round trip plus the server's work. Variants, interleaved in
// blocks of BENCH_BLOCK votes, BENCH_VOTES votes each:
//   direct    this tree, straight to PostgreSQL
//   pooled    this tree, through a PgBouncer in transaction mode (test/helpers/pgbouncer.ts)
//   before    BENCH_BEFORE_DIR=<a checkout of an older tree>: that tree's db/request-transaction.ts,
//             straight to PostgreSQL (with `name` 'cast_vote', as its API passed it)
// Prints min/median/max of the per-block medians (ms per vote), on the embedded PostgreSQL or
// DATABASE_URL's server.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { migrate } from '../../db/migrate.ts';
import { survivesServerLoss } from '../../db/pools.ts';
import { roleUrl } from '../../db/roles.ts';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer, userViewer } from '../../db/viewer.ts';
import { startPgBouncer } from '../helpers/pgbouncer.ts';
import { cleanUp, stopOnExit } from './cleanup.ts';
import { makePosts, seed } from './vote-data.ts';
import { benchBallotKey, sealedVoteParams, sealedVoteText } from './vote-wire.ts';

const votes = Number(process.env.BENCH_VOTES ?? 2000);
const block = Number(process.env.BENCH_BLOCK ?? 100);
const beforeDir = process.env.BENCH_BEFORE_DIR;
const log = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-vote-trip-'));
stopOnExit(() => rm(dataDir, { recursive: true, force: true }));
// BENCH_DURABLE=1: fsync and synchronous commit on (each vote then waits for its WAL flush, which
// hides the round trip on a slow disk); by default off, so the figure is the round trip and the work.
const durable = process.env.BENCH_DURABLE === '1';
const embedded = process.env.DATABASE_URL ? undefined : await startEmbeddedPostgres(dataDir, { persistent: false, durable });
if (embedded) stopOnExit(() => embedded.stop());
const adminUrl = process.env.DATABASE_URL ?? (embedded?.url as string);
const database = `opinion_vote_trip_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
stopOnExit(() => admin.end());
await admin.query(`create database ${database}`);
stopOnExit(() => admin.query(`drop database ${database} with (force)`));
const version = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;
const ownerUrlObject = new URL(adminUrl);
ownerUrlObject.pathname = `/${database}`;
const ownerUrl = ownerUrlObject.toString();
await migrate(ownerUrl);
const owner = survivesServerLoss(new pg.Pool({ connectionString: ownerUrl, max: 2 }));
stopOnExit(() => owner.end());

type Variant = 'direct' | 'pooled' | 'before';
const variants: Variant[] = beforeDir ? ['direct', 'pooled', 'before'] : ['direct', 'pooled'];
// One fresh (voter, post) pair per vote.
const voterCount = 200;
const data = await seed(owner, voterCount);
const posts = await makePosts(owner, data, Math.ceil(((votes + block) * variants.length) / voterCount) + 1, 'public');
let pair = 0;
const nextPair = () => {
  const n = pair++;
  return { voter: data.voters[n % voterCount] as (typeof data.voters)[number], post: posts[Math.floor(n / voterCount)] as string };
};
await owner.query('vacuum analyze');

const pooler = await startPgBouncer(ownerUrl, { poolSize: 1 });
stopOnExit(() => pooler.close());
const pools: Record<Variant, pg.Pool> = {
  direct: new pg.Pool({ connectionString: roleUrl(ownerUrl, 'authenticator'), max: 1, pipeline: true }),
  pooled: new pg.Pool({ connectionString: roleUrl(ownerUrl, 'authenticator', pooler.url), max: 1, pipeline: true }),
  before: new pg.Pool({ connectionString: roleUrl(ownerUrl, 'authenticator'), max: 1, pipeline: true }),
};
for (const pool of Object.values(pools)) {
  survivesServerLoss(pool);
  stopOnExit(() => pool.end());
}
type Sender = (pool: pg.Pool, voter: { userId: string; sessionId: string }, params: string[]) => Promise<unknown>;
const send: Record<Variant, Sender> = {
  direct: (pool, voter, params) => {
    const tx = new RequestTransaction(pool, anonymousViewer);
    tx.deferSession(userViewer(voter.userId, voter.sessionId), 2);
    return tx.queryAndCommit(sealedVoteText, params, 2);
  },
  pooled: (pool, voter, params) => send.direct(pool, voter, params),
  before: async () => undefined,
};
if (beforeDir) {
  const old = (await import(path.resolve(beforeDir, 'db/request-transaction.ts'))) as {
    RequestTransaction: new (pool: pg.Pool, viewer: unknown) => any;
  };
  send.before = (pool, voter, params) => {
    const tx = new old.RequestTransaction(pool, anonymousViewer);
    tx.deferSession(userViewer(voter.userId, voter.sessionId), 2);
    return tx.queryAndCommit(sealedVoteText, params, 'cast_vote', 2);
  };
}
const { box } = benchBallotKey(randomBytes(32).toString('hex'));

const blocks = new Map<Variant, number[]>(variants.map((variant) => [variant, []]));
for (let done = -block; done < votes; done += block) {
  for (const variant of (done / block) % 2 === 0 ? variants : [...variants].reverse()) {
    const times: number[] = [];
    for (let i = 0; i < block; i++) {
      const { voter, post } = nextPair();
      const params = sealedVoteParams(box, post, 'left', 5);
      const started = performance.now();
      await send[variant](pools[variant], voter, params);
      times.push(performance.now() - started);
    }
    // The first block of each variant warms its connection and plans (not counted).
    if (done >= 0) blocks.get(variant)?.push(median(times));
  }
}
log(
  `vote-trip: ${votes} votes per variant, one at a time; PostgreSQL ${version}${embedded ? ` (embedded, ${durable ? 'durable' : 'fsync and synchronous_commit off'})` : ' (DATABASE_URL)'}; ${os.cpus().length} cores, ${os.cpus()[0]?.model}`,
);
for (const [variant, values] of blocks) {
  log(
    `${variant}: median ${median(values).toFixed(3)} ms per vote (min ${Math.min(...values).toFixed(3)}, max ${Math.max(...values).toFixed(3)}; block medians)`,
  );
}

await cleanUp();
