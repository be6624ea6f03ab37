// A worker process killed (kill -9) in the middle of a hub fan-out: before its insert commits, and
// after it committed but before graphile-worker recorded the job done. Either way every member is
// notified exactly once, within seconds of a new worker starting (the dead worker's jobs are taken
// back, worker/liveness.ts; the fan-out's key per job and recipient, migrations/frozen/0247).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testImageWorker, type TestApp } from '../../helpers/app.ts';
import { createHub, type TestHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { killAll, type RunningProcess } from '../../helpers/process.ts';
import type { TestUser } from '../../helpers/users.ts';
import { appWithUsers, processOnApp } from '../../helpers/worlds.ts';

const deadAfterSeconds = 3;
const members = 40;
let app: TestApp;
let author: TestUser;
let hub: TestHub;
const workers: RunningProcess[] = [];

beforeAll(async () => {
  [app, author] = await appWithUsers(4);
  hub = await createHub(app, author);
  // Members arranged in SQL: the fan-out reads memberships, nothing else about them.
  await app.owner.query(
    `with u as (insert into app.users select from generate_series(1, $2) returning id)
     insert into app.hub_memberships (hub_id, user_id) select $1, id from u`,
    [hub.id, members],
  );
}, 60_000);

afterAll(async () => {
  await killAll(workers);
  await app.close();
});

async function startWorkerProcess(): Promise<RunningProcess> {
  const worker = await processOnApp(app, 'worker', { WORKER_DEAD_AFTER_SECONDS: String(deadAfterSeconds) });
  workers.push(worker);
  // Registered: its first beat landed (it may come after 'worker running', which a loaded machine shows).
  await worker.waitFor(() => worker.output().includes('worker registered'), 'the worker process registered');
  return worker;
}

function kill9(worker: RunningProcess): Promise<number | null> {
  process.kill(-(worker.child.pid as number), 'SIGKILL');
  return worker.exited;
}

/** The worker role's server processes that wait on a lock (the fan-out or its completion). */
async function waitingWorkerBackends(like: string): Promise<number> {
  const { rows } = await app.owner.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity where datname = current_database() and usename = 'app_worker' and application_name <> '${testImageWorker}'
       and wait_event_type = 'Lock' and query ilike $1`,
    [like],
  );
  return rows[0]?.n ?? 0;
}
const workerBackends = async () =>
  (
    await app.owner.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and usename = 'app_worker' and application_name <> '${testImageWorker}'`,
    )
  ).rows[0]?.n;

const notified = async (postId: string) =>
  (
    await app.owner.query<{ rows: number; recipients: number }>(
      `select count(*)::int as rows, count(distinct recipient_id)::int as recipients from app.notifications
       where post_id = $1 and type = 'hub_post_created'`,
      [postId],
    )
  ).rows[0] as { rows: number; recipients: number };

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a worker starved of CPU', () => {
  it('keeps its running job while a neighbour beats past the dead-after time, then finishes it once', { timeout: 120_000 }, async () => {
    const holder = new pg.Client({ connectionString: app.ownerUrl });
    await holder.connect();
    let starved: RunningProcess | undefined;
    try {
      await holder.query('begin');
      await holder.query('lock table app.notifications in share mode');
      starved = await startWorkerProcess();
      const { rows: registered } = await app.owner.query<{ worker_id: string }>('select worker_id from app_private.worker_heartbeats');
      expect(registered).toHaveLength(1);
      const starvedId = registered[0]?.worker_id as string;
      const post = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
      await until(async () => (await waitingWorkerBackends('%fan_out_hub_notification%')) === 1, 'the fan-out to wait');
      // No CPU at all (SIGSTOP) stands for a starved process: it sends no beat, its sockets stay open.
      process.kill(-(starved.child.pid as number), 'SIGSTOP');
      const neighbour = await startWorkerProcess();
      // The neighbour beats (every deadAfterSeconds / 5) after the starved worker has been silent for
      // twice the dead-after time: each of those beats would have taken its jobs back.
      await until(
        async () =>
          (
            await app.owner.query(
              `select 1 from app_private.worker_heartbeats n, app_private.worker_heartbeats s
               where s.worker_id = $1 and n.worker_id <> $1 and n.seen_at > s.seen_at + 2 * $2::interval`,
              [starvedId, `${deadAfterSeconds} seconds`],
            )
          ).rowCount === 1,
        'the neighbour to beat long after the starved worker went silent',
      );
      const { rows: job } = await app.owner.query<{ locked_by: string | null }>(
        `select locked_by from graphile_worker._private_jobs where payload ->> 'postId' = $1`,
        [post.id],
      );
      expect(job[0]?.locked_by).toBe(starvedId);
      expect((await app.owner.query('select 1 from app_private.worker_heartbeats where worker_id = $1', [starvedId])).rowCount).toBe(1);

      process.kill(-(starved.child.pid as number), 'SIGCONT');
      await holder.query('commit');
      await until(
        async () =>
          (await app.owner.query(`select 1 from graphile_worker._private_jobs where payload ->> 'postId' = $1`, [post.id])).rowCount === 0,
        'the starved worker to finish its job',
      );
      expect(await notified(post.id)).toEqual({ rows: members, recipients: members });
      for (const worker of [starved, neighbour]) {
        expect(worker.output()).not.toContain('took back the jobs');
        worker.child.kill('SIGTERM');
        expect(await worker.exited).toBe(0);
        expect(worker.problems()).toEqual([]);
      }
      expect((await app.owner.query('select worker_id from app_private.worker_heartbeats')).rowCount).toBe(0);
    } finally {
      if (starved?.child.exitCode === null) process.kill(-(starved.child.pid as number), 'SIGCONT');
      await holder.query('rollback').catch(() => undefined);
      await holder.end();
    }
  });
});

describe('a worker that stops', () => {
  it(
    "keeps beating while its last job finishes, takes back a dead worker's jobs then, and reports no outage",
    { timeout: 120_000 },
    async () => {
      const holder = new pg.Client({ connectionString: app.ownerUrl });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('lock table app.notifications in share mode');
        const stopping = await startWorkerProcess();
        const post = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
        await until(async () => (await waitingWorkerBackends('%fan_out_hub_notification%')) === 1, 'the fan-out to wait');
        stopping.child.kill('SIGTERM');
        // Its idle workers end; the busy one waits for its job. A worker dead long ago, meanwhile:
        await stopping.waitFor(() => stopping.output().includes('SIGTERM: shutting down'), 'the stop to begin');
        await app.owner.query(
          "insert into app_private.worker_heartbeats (worker_id, seen_at) values ('pool-dead-long-ago', now() - interval '1 hour')",
        );
        await stopping.waitFor(() => stopping.output().includes('took back the jobs of 1 worker(s)'), 'a beat during the stop');
        await holder.query('commit');
        expect(await stopping.exited).toBe(0);
        expect(await notified(post.id)).toEqual({ rows: members, recipients: members });
        // The take-back is the one line: a stopping pool is not nudged (its workers ended), no outage.
        expect(stopping.problems().map((line) => line.msg)).toEqual([
          `took back the jobs of 1 worker(s) silent for over ${deadAfterSeconds} s`,
        ]);
        expect((await app.owner.query('select worker_id from app_private.worker_heartbeats')).rowCount).toBe(0);
      } finally {
        await holder.query('rollback').catch(() => undefined);
        await holder.end();
      }
    },
  );
});

describe('a worker killed mid fan-out', () => {
  it('a fan-out run twice with one key inserts its rows once', async () => {
    const post = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
    const { rows } = await app.owner.query<{ payload: unknown }>(
      `select payload from graphile_worker._private_jobs where payload ->> 'postId' = $1`,
      [post.id],
    );
    const payload = JSON.stringify(rows[0]?.payload);
    const run = async () =>
      (await app.pools.worker.query<{ n: number }>('select app_private.fan_out_hub_notification($1) as n', [payload])).rows[0]?.n;
    expect(await run()).toBe(members);
    expect(await run()).toBe(0);
    expect(await notified(post.id)).toEqual({ rows: members, recipients: members });
    await app.owner.query(`delete from graphile_worker._private_jobs where payload ->> 'postId' = $1`, [post.id]);
  });

  it('notifies every member once when killed before and after its insert commits', { timeout: 120_000 }, async () => {
    const holder = new pg.Client({ connectionString: app.ownerUrl });
    await holder.connect();
    try {
      // Before the insert commits: the fan-out waits on a lock of the notifications table.
      await holder.query('begin');
      await holder.query('lock table app.notifications in share mode');
      const first = await startWorkerProcess();
      const before = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
      await until(async () => (await waitingWorkerBackends('%fan_out_hub_notification%')) === 1, 'the fan-out to wait');
      expect(await kill9(first)).toBe(null);
      // The killed worker's server process stops its statement (client_connection_check_interval).
      await until(async () => (await workerBackends()) === 0, "the killed worker's statements to end");
      await holder.query('commit');
      expect(await notified(before.id)).toEqual({ rows: 0, recipients: 0 });

      const secondStarted = Date.now();
      const second = await startWorkerProcess();
      await until(async () => (await notified(before.id)).rows === members, 'the fan-out to run again');
      const firstRecovery = (Date.now() - secondStarted) / 1000;
      expect(await notified(before.id)).toEqual({ rows: members, recipients: members });
      expect(second.output()).toContain('took back the jobs of 1 worker(s)');

      // After the insert committed: graphile-worker cannot record the job done (its row is locked).
      await holder.query('begin');
      await holder.query('lock table app.notifications in share mode');
      const after = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
      await until(async () => (await waitingWorkerBackends('%fan_out_hub_notification%')) === 1, 'the fan-out to wait');
      const locker = new pg.Client({ connectionString: app.ownerUrl });
      await locker.connect();
      await locker.query('begin');
      await locker.query(`select 1 from graphile_worker._private_jobs where payload ->> 'postId' = $1 for update`, [after.id]);
      await holder.query('commit');
      await until(async () => (await notified(after.id)).rows === members, 'the fan-out to commit');
      await until(async () => (await waitingWorkerBackends('%_private_jobs%')) === 1, 'the job completion to wait');
      expect(await kill9(second)).toBe(null);
      await until(async () => (await workerBackends()) === 0, "the killed worker's statements to end");
      await locker.query('rollback');
      await locker.end();
      const { rows: locked } = await app.owner.query(
        `select locked_by from graphile_worker._private_jobs where payload ->> 'postId' = $1`,
        [after.id],
      );
      expect(locked[0]?.locked_by).toMatch(/^pool-/);

      const thirdStarted = Date.now();
      const third = await startWorkerProcess();
      await until(
        async () =>
          (await app.owner.query(`select 1 from graphile_worker._private_jobs where payload ->> 'postId' = $1`, [after.id])).rowCount === 0,
        'the job to run again and complete',
      );
      const secondRecovery = (Date.now() - thirdStarted) / 1000;
      expect(await notified(after.id)).toEqual({ rows: members, recipients: members });
      expect(third.output()).toContain('took back the jobs of 1 worker(s)');
      // Within seconds of a new worker starting (the dead worker must first be silent for deadAfterSeconds).
      expect(firstRecovery).toBeLessThan(deadAfterSeconds + 10);
      expect(secondRecovery).toBeLessThan(deadAfterSeconds + 10);
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
      // A clean stop forgets the worker; the killed ones were forgotten when their jobs came back.
      expect((await app.owner.query('select worker_id from app_private.worker_heartbeats')).rowCount).toBe(0);
    } finally {
      await holder.end();
    }
  });
});
