// Internal GraphQL runs beside REST, not on its event loop (server/graphql/thread.ts): PostGraphile
// plans, runs and serialises each operation in a worker thread of its own, at a lower CPU priority
// than the API's thread, with a pool of its own. Read from the operating system (Linux's
// /proc/self/task): the thread's nice value, and which thread spends the CPU time of operations.
import { spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphqlThreadNiceness } from '../../../server/graphql/mount.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

const linux = process.platform === 'linux';
let app: TestApp;
let alice: TestUser;
beforeAll(async () => {
  [app, alice] = await appWithUsers(3);
  await app.owner.query(
    "insert into app.users (username, full_name, bio) select 'thread_' || g, 'Thread ' || g, repeat('bio ', 30) from generate_series(1, 150) g",
  );
  await app.services.graphql.ready();
});
afterAll(() => app.close());

/** A thread's nice value and CPU time so far (clock ticks), from /proc/self/task/<id>/stat. */
function threadStat(threadId: number): { nice: number; cpuTicks: number } {
  const stat = readFileSync(`/proc/self/task/${threadId}/stat`, 'utf8');
  // The fields after "(comm) ": state is field 3 of the line, utime 14, stime 15, nice 19.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const field = (number: number) => Number(fields[number - 3]);
  return { nice: field(19), cpuTicks: field(14) + field(15) };
}

/**
 * An operation of ten aliases, each a page of users with a nested page of follows, named after
 * `round`: a document grafast has not seen, so it is planned again (most of an operation's work),
 * while the answer stays small for the thread that reads it.
 */
const planned = (round: number) =>
  `{ ${Array.from({ length: 10 }, (_, i) => `r${round}a${i}: allUsers(first: 10, orderBy: USERNAME_ASC) { nodes { rowId username fullName followsByFollowerId(first: 2) { nodes { seq followeeId } } } }`).join(' ')} }`;

async function graphql(
  query: string,
): Promise<{ status: number; body: { data?: Record<string, { nodes: unknown[] }>; errors?: unknown[] } }> {
  const response = await fetch(`${app.url}/internal/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${alice.token}` },
    body: JSON.stringify({ query }),
  });
  return { status: response.status, body: (await response.json()) as never };
}

describe.runIf(linux)('the internal GraphQL thread', () => {
  it('is a thread of this process, at a lower priority than the thread that serves REST, but not below nice 5', async () => {
    const { threadId } = await app.services.graphql.poolStats();
    const own = Number(readlinkSync('/proc/thread-self').split('/').pop());
    expect(threadId).toEqual(expect.any(Number));
    expect(threadId).not.toBe(own);
    expect(threadStat(threadId as number).nice).toBe(graphqlThreadNiceness);
    expect(threadStat(own).nice).toBe(0);
    // Nice 5 is a third of a nice-0 thread's weight; at nice 10 (a tenth) a CPU spike starved the
    // thread past the admission's 2 s (docs/internal-tooling.md).
    expect(graphqlThreadNiceness).toBeGreaterThan(0);
    expect(graphqlThreadNiceness).toBeLessThanOrEqual(5);
  });

  it("builds every role's schema at the priority of the process after the first request, and lowers its own only then", async () => {
    const fresh = await startTestApp();
    try {
      // A user's first operation builds the user schema; the admin one follows, still at nice 0.
      const user = await userAtLevel(fresh, 3);
      const first = await fetch(`${fresh.url}/internal/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(first.status).toBe(200);
      // The stats message is answered between the build's waits for the database.
      const samples: { nice: number; built: string[] }[] = [];
      for (;;) {
        const { threadId, built } = await fresh.services.graphql.poolStats();
        const sample = { nice: threadStat(threadId as number).nice, built: built.toSorted() };
        samples.push(sample);
        if (sample.nice !== 0) break;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(samples[0]?.built).toContain('app_user');
      // Lowered only with both built: no moderator's first operation waits for a build at the lower priority.
      expect(samples.at(-1)).toEqual({ nice: graphqlThreadNiceness, built: ['app_admin', 'app_user'] });
    } finally {
      await fresh.close();
    }
  });

  it('spends the CPU time of operations, not the thread that serves REST', async () => {
    const { threadId } = await app.services.graphql.poolStats();
    const own = Number(readlinkSync('/proc/thread-self').split('/').pop());
    // Warm: connections, and the code of planning.
    expect((await graphql(planned(0))).status).toBe(200);
    // Which thread spends the time, not how long the operations wait for it: at the process's own
    // priority for the measurement (as root), so that a busy machine does not starve the thread at
    // its lower priority past the test's time-out. Its priority is the test above.
    const lowered = threadStat(threadId as number).nice;
    try {
      os.setPriority(threadId as number, 0);
    } catch {
      // Not root: a thread's priority can only be lowered.
    }
    const before = { graphql: threadStat(threadId as number).cpuTicks, rest: threadStat(own).cpuTicks };
    const started = performance.now();
    for (let round = 1; round <= 20; round++) {
      const { status, body } = await graphql(planned(round));
      expect(status).toBe(200);
      expect(body.errors).toBeUndefined();
      expect(body.data?.[`r${round}a9`]?.nodes).toHaveLength(10);
    }
    const spent = { graphql: threadStat(threadId as number).cpuTicks - before.graphql, rest: threadStat(own).cpuTicks - before.rest };
    os.setPriority(threadId as number, lowered);
    // What this thread spends anyway over as long (the app's timers, the job runner's polls): on a
    // busy machine the operations take longer, and that part grows with them, not with the work.
    // Read over an idle window of up to 3 s and scaled to the rounds' time.
    const elapsed = performance.now() - started;
    const window = Math.min(elapsed, 3000);
    const idleFrom = threadStat(own).cpuTicks;
    await new Promise((resolve) => setTimeout(resolve, window));
    const anyway = Math.round(((threadStat(own).cpuTicks - idleFrom) * elapsed) / window);
    // This thread also sent the requests, checked the tokens and read the answers; the GraphQL
    // thread planned, ran and wrote the operations, which is most of the work.
    expect(spent.graphql, JSON.stringify({ ...spent, anyway, elapsed: Math.round(elapsed) })).toBeGreaterThan(2 * (spent.rest - anyway));
  });

  it('answers operations during a CPU spike (a busy process per core, at nice 0) in seconds, refusing none', async () => {
    // What a moderator waits while every core is busy at normal priority: the thread, at nice 5,
    // has a third of a nice-0 thread's weight, so its operations slow down but are not starved
    // (at nice 10, a tenth, beside the test suite's own processes and two more they waited past the
    // admission's 2 s and the test's time-out). Each operation is a new document, planned again.
    // How long is the machine's: alone on this 2-core VM, 0.2-0.3 s at nice 5, 0.7-0.8 s at nice 10
    // and 3-4 s at nice 19, so the 5 s bound holds the outcome and the test above the priority.
    expect((await graphql(planned(100))).status).toBe(200);
    const { threadId } = await app.services.graphql.poolStats();
    const cpuBefore = threadStat(threadId as number).cpuTicks;
    const quietStart = performance.now();
    expect((await graphql(planned(101))).status).toBe(200);
    const quiet = { wallMs: Math.round(performance.now() - quietStart), cpuTicks: threadStat(threadId as number).cpuTicks - cpuBefore };
    // `timeout`: a spinner ends by itself even if this process dies before it kills them.
    const spinners = Array.from({ length: os.availableParallelism() }, () => spawn('timeout', ['60', 'yes'], { stdio: 'ignore' }));
    const waits: number[] = [];
    try {
      for (let round = 102; round <= 106; round++) {
        const started = performance.now();
        const { status, body } = await graphql(planned(round));
        waits.push(Math.round(performance.now() - started));
        expect(status).toBe(200);
        expect(body.data?.[`r${round}a9`]?.nodes).toHaveLength(10);
      }
    } finally {
      for (const spinner of spinners) spinner.kill();
    }
    expect(Math.max(...waits), JSON.stringify({ quiet, waits })).toBeLessThan(5000);
  });

  it('leaves the session check and admission on the API thread, and runs operations on its own pool', async () => {
    let sessionChecks = 0;
    const counted = () => (sessionChecks += 1);
    app.pools.graphql.on('acquire', counted);
    try {
      const pool = (await app.services.graphql.poolStats()).checkouts;
      expect((await graphql('{ allUsers(first: 1) { nodes { rowId } } }')).status).toBe(200);
      // One checkout of the API thread's pool (the session check); the operation's are the thread's.
      expect(sessionChecks).toBe(1);
      expect((await app.services.graphql.poolStats()).checkouts - pool).toBeGreaterThanOrEqual(1);
    } finally {
      app.pools.graphql.off('acquire', counted);
    }
  });

  it('names the connections of each pool in pg_stat_activity', async () => {
    expect((await graphql('{ allUsers(first: 1) { nodes { rowId } } }')).status).toBe(200);
    await app.runJobs();
    const rest = await fetch(`${app.url}/api/v1/users/me/onboarding/status`, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(rest.status).toBe(200);
    const { rows } = await app.owner.query<{ name: string; role: string }>(
      `select distinct application_name as name, usename as role from pg_stat_activity
        where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`,
    );
    const names = rows.map((row) => `${row.name} as ${row.role}`);
    for (const expected of [
      'api as authenticator',
      'graphql as authenticator',
      'graphql session checks as authenticator',
      'worker as app_worker',
    ]) {
      expect(names).toContain(expected);
    }
  });
});
