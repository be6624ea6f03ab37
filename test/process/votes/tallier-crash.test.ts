// The tallier killed (kill -9) mid-batch, with 400 votes on one post, 50 at a time: the batch it
// held never commits (its ballots stay pending, the counters unchanged), the dead worker's job is
// taken back, two worker processes then tally side by side, and the totals are exact: every ballot
// counted once (contract 7 "Vote anonymity", migrations/frozen/0290, worker/tasks/votes/tally-ballots.ts).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokens } from '../../../server/auth/tokens.ts';
import { testImageWorker, type TestApp } from '../../helpers/app.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { killAll, type RunningProcess } from '../../helpers/process.ts';
import type { TestUser } from '../../helpers/users.ts';
import { appWithUsers, processOnApp } from '../../helpers/worlds.ts';

const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];
const voterCount = 400;
let app: TestApp;
let author: TestUser;
let post: { id: string };
let tokens: string[] = [];
const workers: RunningProcess[] = [];

beforeAll(async () => {
  [app, author] = await appWithUsers(3);
  post = await createPost(app, author, slider);
  // Voters at profile basics with live sessions, made in SQL (a vote reads nothing else of them).
  const { rows } = await app.owner.query<{ user_id: string; session_id: string }>(
    `with made as (
       insert into app.users (username, full_name, terms_accepted_at, terms_version, media_completed_at, contacts_synced_at)
       select 'crash_' || g, 'Crash Voter', now(), 'test', now(), now() from generate_series(1, $1) g returning id),
     phones as (insert into app.phone_identities (user_id, phone_e164) select id, '+1556' || lpad((row_number() over ())::text, 7, '0') from made)
     insert into app.sessions (user_id, expires_at) select id, now() + interval '1 day' from made returning user_id, id as session_id`,
    [voterCount],
  );
  const issuer = createTokens(app.config.jwtSecret);
  tokens = rows.map((r) => issuer.issueAccess({ userId: r.user_id, sessionId: r.session_id }));
}, 120_000);

afterAll(async () => {
  await killAll(workers);
  await app.close();
});

async function startWorkerProcess(): Promise<RunningProcess> {
  const worker = await processOnApp(app, 'worker', {
    BALLOT_KEY: app.config.ballotKeys.map((k) => `${k.id}:${k.key.toString('hex')}`).join(','),
    WORKER_DEAD_AFTER_SECONDS: '3',
  });
  workers.push(worker);
  await worker.waitFor(() => worker.output().includes('worker running'), 'the worker process');
  return worker;
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Votes i in [from, to), 50 at a time; each must answer 201. */
async function castVotes(from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < to) {
        const i = next++;
        const answer = await app.post(`/posts/${post.id}/vote`, { position: positions[i % 5] }, { token: tokens[i] as string });
        expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      }
    }),
  );
}

const counters = async () =>
  Object.values(
    (
      await app.owner.query(
        `select coalesce(sum(strong_left_count), 0)::int a, coalesce(sum(left_count), 0)::int b, coalesce(sum(neutral_count), 0)::int c,
                coalesce(sum(right_count), 0)::int d, coalesce(sum(strong_right_count), 0)::int e
         from app.vote_counters where post_id = $1 and hub_id is null`,
        [post.id],
      )
    ).rows[0],
  ).map(Number);
const pending = async () =>
  (await app.owner.query<{ n: number }>('select count(*)::int as n from app_private.sealed_ballots where post_id = $1', [post.id])).rows[0]
    ?.n as number;
/**
 * Tally jobs still to run. A job replaced while it ran (a vote queued the scope again: same job
 * key) is given its last attempt by graphile-worker; one the killed worker held stays, spent, once
 * taken back: its replacement does its work.
 */
const tallyJobs = async () =>
  (
    await app.owner.query<{ n: number }>(
      `select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = 'tally_ballots' and j.payload ->> 'postId' = $1 and j.attempts < j.max_attempts`,
      [post.id],
    )
  ).rows[0]?.n as number;

describe('a tallier killed mid-batch under 400 votes, 50 at a time', () => {
  it('counts every ballot exactly once', { timeout: 240_000 }, async () => {
    const holder = new pg.Client({ connectionString: app.ownerUrl });
    await holder.connect();
    try {
      // The counter rows held: a tallier opens its batch, deletes its ballots, then waits here.
      await holder.query('begin');
      await holder.query('select 1 from app.vote_counters where post_id = $1 for update', [post.id]);
      const first = await startWorkerProcess();
      await castVotes(0, voterCount / 2);
      await until(
        async () =>
          (
            await app.owner.query<{ n: number }>(
              `select count(*)::int as n from pg_stat_activity where datname = current_database() and usename = 'app_worker' and application_name <> '${testImageWorker}'
                 and wait_event_type = 'Lock' and query ilike '%tally_ballots%'`,
            )
          ).rows[0]?.n === 1,
        'a tallier to wait mid-batch',
      );
      process.kill(-(first.child.pid as number), 'SIGKILL');
      expect(await first.exited).toBe(null);
      // Its server process ends its statement (client_connection_check_interval): the batch rolls back.
      await until(
        async () =>
          (
            await app.owner.query(
              `select count(*)::int as n from pg_stat_activity where datname = current_database() and usename = 'app_worker' and application_name <> '${testImageWorker}'`,
            )
          ).rows[0].n === 0,
        "the killed tallier's transaction to end",
      );
      await holder.query('commit');
      expect(await counters()).toEqual([0, 0, 0, 0, 0]);
      expect(await pending()).toBe(voterCount / 2);
      // The reads were exact all along: counters plus pending ballots.
      const half = (await app.get(`/posts/${post.id}/vote/distribution`, { token: author.token })).body.data;
      expect(half.buckets.map((b: any) => b.count)).toEqual(Array(5).fill(voterCount / 10));

      // Two workers (overlapping talliers) take back the dead worker's job and tally the rest as it comes.
      await Promise.all([startWorkerProcess(), startWorkerProcess()]);
      await castVotes(voterCount / 2, voterCount);
      // Done when no tally is queued or running and fewer than k ballots wait. A batch that
      // concurrent votes each saw incomplete is queued by the minute's sweep (tally_sweep): run
      // its statement whenever nothing is queued, rather than wait for the minute.
      const sweepWhenIdle = async () => {
        if ((await tallyJobs()) > 0) return false;
        if ((await pending()) < app.config.ballotBatch) return true;
        await app.owner.query('select app_private.queue_due_tallies($1)', [app.config.ballotBatch]);
        return false;
      };
      await until(sweepWhenIdle, 'the talliers to finish', 150_000).catch(async (error: Error) => {
        const jobs = await app.owner.query(
          `select t.identifier, j.attempts, j.last_error, j.locked_by, j.run_at, j.key from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id`,
        );
        throw new Error(
          `${error.message}: ${await pending()} pending, jobs ${JSON.stringify(jobs.rows)}, output ${workers.map((w) => w.output().slice(-2000)).join('\n---\n')}`,
        );
      });
    } finally {
      await holder.end();
    }
    const left = await pending();
    const counted = await counters();
    expect(counted.reduce((a, b) => a + b, 0) + left).toBe(voterCount);
    const distribution = (await app.get(`/posts/${post.id}/vote/distribution`, { token: author.token })).body.data;
    expect(distribution.totalVotes).toBe(voterCount);
    expect(distribution.buckets.map((b: any) => b.count)).toEqual(Array(5).fill(voterCount / 5));
    // Every counted ballot was folded in a batch of at least k: the counters moved only by batches.
    expect(counted.every((n) => n <= voterCount / 5)).toBe(true);
    for (const worker of workers.slice(1)) expect(worker.problems().filter((line) => !/took back the jobs/.test(line.msg))).toEqual([]);
  });
});
