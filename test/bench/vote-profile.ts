// Where a vote's database time goes: `npm run bench vote-profile` against a DATABASE_URL server
// that loads pg_stat_statements (shared_preload_libraries; track = all shows the statements
// inside functions). Runs the vote's SQL as the API sends it, BENCH_VOTES times over 1,000 public
// and 1,000 hub posts at BENCH_CONCURRENCY, then prints the statements and functions by total
// time per vote. Pass BENCH_BEFORE=<git ref> to profile that commit's migrations instead.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { roleUrl } from '../../db/roles.ts';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer, userViewer } from '../../db/viewer.ts';
import { makePosts, seed } from './vote-data.ts';
import { benchBallotKey, gatePipeline, sealedVoteParams, sealedVoteText } from './vote-wire.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const votes = Number(process.env.BENCH_VOTES ?? 2000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) throw new Error('vote-profile needs DATABASE_URL (a server with pg_stat_statements loaded)');
const log = (line: string) => process.stdout.write(`${line}\n`);

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const database = `opinion_profile_${randomBytes(3).toString('hex')}`;
await admin.query(`create database ${database}`);
const url = new URL(adminUrl);
url.pathname = `/${database}`;
const ownerUrl = url.toString();
const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-profile-'));
try {
  let dir = root;
  if (process.env.BENCH_BEFORE) {
    dir = scratch;
    execFileSync('sh', ['-c', `git -C "${root}" archive "${process.env.BENCH_BEFORE}" | tar -x -C "${dir}"`]);
    execFileSync('ln', ['-s', path.join(root, 'node_modules'), path.join(dir, 'node_modules')]);
  }
  execFileSync(process.execPath, [path.join(dir, 'db', 'cli', 'migrate.ts')], {
    cwd: dir,
    env: { ...process.env, DATABASE_URL: ownerUrl, LOG_LEVEL: 'silent' },
  });
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 2 });
  owner.on('error', () => {});
  const data = await seed(owner, votes);
  const publicPosts = await makePosts(owner, data, 1000, 'public');
  const hubPosts = await makePosts(owner, data, 1000, 'hub');
  await owner.query('create extension if not exists pg_stat_statements');
  // As the API of the profiled schema sends it: cast_vote checks the session itself (0170), or the
  // gate pipeline of 0130 (BENCH_BEFORE).
  const inVote = await owner.query<{ in_vote: boolean; sealed: boolean }>(
    `select to_regprocedure('app.cast_vote(uuid, text, text, uuid[], text[], int)') is not null as sealed,
            (select prosrc like '%app.viewer_session_id()%' from pg_proc where oid = to_regprocedure('app.cast_vote(uuid, app.vote_position)')) as in_vote`,
  );
  const sealed = inVote.rows[0]?.sealed ?? false;
  const statementGateLevel = sealed || inVote.rows[0]?.in_vote ? 2 : undefined;
  const { box } = benchBallotKey(randomBytes(32).toString('hex'));
  const api = new pg.Pool({ connectionString: roleUrl(ownerUrl, 'authenticator'), max: concurrency, pipeline: true });
  api.on('error', () => {}); // dropping the database at the end ends connections still closing
  let next = 0;
  const started = performance.now();
  let reset = false;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < votes) {
        const i = next++;
        // Statistics start after every connection has warmed up.
        if (i === concurrency * 4 && !reset) {
          reset = true;
          await owner.query('select pg_stat_statements_reset(), pg_stat_reset()');
        }
        const voter = data.voters[i] as { userId: string; sessionId: string };
        const viewer = userViewer(voter.userId, voter.sessionId);
        const post = (i % 2 === 0 ? publicPosts : hubPosts)[i % 1000] as string;
        const text = 'select voted_at, hub_ids, global_tally from app.cast_vote($1, $2)';
        if (statementGateLevel === undefined) {
          // An older schema: as its API sent the vote.
          await gatePipeline(api, viewer, text, [post, 'left']);
          continue;
        }
        const tx = new RequestTransaction(api, anonymousViewer);
        tx.deferSession(viewer, 2);
        // Hub posts: the API's second try, sealed for the hub too, is what a vote costs once it knows the post's hubs.
        if (sealed) {
          const params = sealedVoteParams(box, post, 'left', 5);
          if (i % 2 === 1) [params[3], params[4]] = [`{${data.hubId}}`, `{${box.seal(post, data.hubId, 'left').toString('hex')}}`];
          await tx.queryAndCommit(sealedVoteText, params, 2);
        } else {
          await tx.queryAndCommit(text, [post, 'left'], statementGateLevel);
        }
      }
    }),
  );
  const counted = votes - concurrency * 4;
  log(`${votes} votes (half on hub posts) in ${((performance.now() - started) / 1000).toFixed(1)} s; statistics over the last ${counted}`);
  const statements = await owner.query(
    `select calls, round((total_exec_time * 1000 / $1)::numeric, 1) as us_per_vote, round((total_plan_time * 1000 / $1)::numeric, 1) as plan_us_per_vote,
            left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as query
     from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
     order by total_exec_time + total_plan_time desc limit 25`,
    [counted],
  );
  log('\nstatements (track = all: nested statements included), µs per vote:');
  for (const row of statements.rows)
    log(
      `  ${String(row.us_per_vote).padStart(7)} exec ${String(row.plan_us_per_vote).padStart(6)} plan ${String(row.calls).padStart(6)} calls  ${row.query}`,
    );
  const functions = await owner.query(
    `select schemaname || '.' || funcname as name, calls, round((total_time * 1000 / $1)::numeric, 1) as total_us, round((self_time * 1000 / $1)::numeric, 1) as self_us
     from pg_stat_user_functions order by total_time desc limit 15`,
    [counted],
  );
  log('\nfunctions (track_functions = all), µs per vote:');
  for (const row of functions.rows)
    log(
      `  ${String(row.total_us).padStart(7)} total ${String(row.self_us).padStart(7)} self ${String(row.calls).padStart(6)} calls  ${row.name}`,
    );
  await api.end();
  await owner.end();
} finally {
  await admin.query(`drop database ${database} with (force)`);
  await admin.end();
  await rm(scratch, { recursive: true, force: true });
}
