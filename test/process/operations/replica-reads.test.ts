// Reads from a real streaming replica (contract part 17): a PostgreSQL 15 primary and a hot standby
// made with pg_basebackup (test/helpers/replica.ts), lag simulated with recovery_min_apply_delay.
// The API serves read-only GETs from the replica once it has replayed past the session's floor;
// a session reads its own writes at once however far behind the replica is, a revoked session
// stops at once, a lagging replica is skipped, and a replica that stops (mid-request too) costs no
// request anything but a read from the primary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../config.ts';
import { migrate } from '../../../db/migrate.ts';
import type { Replica, ReplicaSet } from '../../../db/replicas.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createHub, invite } from '../../helpers/hubs.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { startStreamingPair, type StreamingPair } from '../../helpers/replica.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { usersAtLevels } from '../../helpers/worlds.ts';

let pair: StreamingPair;
let app: TestApp;
let replicas: ReplicaSet;
let replica: Replica;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMillis = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

/** What the replica holds now, read there as the owner. */
const onReplica = async (text: string, values: unknown[]) => (await pair.query<{ n: number }>('replica', text, values)).rows[0]!.n;

/** GET as `user`, and which host served it: 'replica' or 'primary'. */
async function read(user: TestUser, path: string) {
  const served = replica.served;
  const response = await app.get(path, { token: user.token });
  expect(response.status, `${path}: ${response.text}`).toBe(200);
  return { data: response.body.data, host: replica.served > served ? 'replica' : 'primary' };
}

beforeAll(async () => {
  pair = await startStreamingPair();
  await migrate(pair.primaryUrl);
  app = await startTestApp({}, {}, { database: { ownerUrl: pair.primaryUrl, replicaUrls: [pair.replicaUrl], replicaMaxLagMillis: 2000 } });
  replicas = app.pools.replicas!;
  replica = replicas.replicas[0]!;
  await until('the replica is usable', () => replicas.usable(replica));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await pair?.stop();
});

describe('a replica 1 s behind', () => {
  let author: TestUser;
  let reader: TestUser;
  let hubOwner: TestUser;
  let joiner: TestUser;
  let hub: { id: string };
  let invitation: string;
  let post: { id: string };

  beforeAll(async () => {
    [author, reader, hubOwner, joiner] = await usersAtLevels(app, 4, 4, 4, 4);
    hub = await createHub(app, hubOwner);
    invitation = await invite(app, hub as never, hubOwner, joiner);
    post = await createPost(app, author, slider);
    await pair.caughtUp();
    await pair.setApplyDelay(1000);
  }, 60_000);

  it('shows a session every write of its own at once: post, comment, vote, follow, profile edit, hub join, mark read', async () => {
    // Each write, then at once the read that must show it. The replica has not replayed the write
    // when the read answers (checked there as the owner), so a read it served would have missed it.
    const posted = await createPost(app, reader, { thoughtText: 'Fresh thought' });
    expect((await read(reader, `/posts/${posted.id}`)).data.id).toBe(posted.id);
    expect(await onReplica('select count(*)::int as n from app.posts where id = $1', [posted.id])).toBe(0);

    expect((await app.post(`/posts/${post.id}/vote`, { position: 'left' }, { token: reader.token })).status).toBe(201);
    expect((await read(reader, `/posts/${post.id}/vote/me`)).data.hasVoted).toBe(true);
    expect(
      await onReplica('select count(*)::int as n from app.vote_receipts where post_id = $1 and user_id = $2', [post.id, reader.id]),
    ).toBe(0);

    const commented = await app.post(`/posts/${post.id}/comments`, { text: 'Mine' }, { token: reader.token });
    expect(commented.status).toBe(201);
    const comments = await read(reader, `/posts/${post.id}/comments`);
    expect(comments.data.items.map((c: { id: string }) => c.id)).toContain(commented.body.data.id);
    expect(await onReplica('select count(*)::int as n from app.comments where id = $1', [commented.body.data.id])).toBe(0);

    expect((await app.post(`/users/${author.id}/follow`, undefined, { token: reader.token })).status).toBeLessThan(300);
    expect((await read(reader, `/users/${reader.id}/following`)).data.items.map((u: { id: string }) => u.id)).toContain(author.id);
    expect(await onReplica('select count(*)::int as n from app.follows where follower_id = $1', [reader.id])).toBe(0);

    expect((await app.patch('/users/me/profile', { fullName: 'Renamed Reader' }, { token: reader.token })).status).toBe(200);
    expect((await read(reader, '/users/me/profile')).data.fullName).toBe('Renamed Reader');
    expect(await onReplica("select count(*)::int as n from app.users where id = $1 and full_name = 'Renamed Reader'", [reader.id])).toBe(0);

    expect((await app.post(`/hub-invitations/${invitation}/accept`, undefined, { token: joiner.token })).status).toBeLessThan(300);
    expect((await read(joiner, '/users/me/hubs')).data.items.map((h: { id: string }) => h.id)).toContain(hub.id);
    expect(
      await onReplica('select count(*)::int as n from app.hub_memberships where hub_id = $1 and user_id = $2', [hub.id, joiner.id]),
    ).toBe(0);

    // The follow gave the author a notification; the replica shows it once replayed.
    await pair.caughtUp();
    expect((await read(author, '/notifications/unread-count')).data.unreadCount).toBeGreaterThan(0);
    expect((await app.patch('/notifications/read', { markAll: true }, { token: author.token })).status).toBe(200);
    expect((await read(author, '/notifications/unread-count')).data.unreadCount).toBe(0);
  });

  it('serves a session from the replica once the replica has replayed past its writes', async () => {
    expect((await app.patch('/users/me/profile', { fullName: 'Later Reader' }, { token: reader.token })).status).toBe(200);
    const first = await read(reader, '/users/me/profile');
    expect(first).toMatchObject({ host: 'primary', data: { fullName: 'Later Reader' } });
    await pair.caughtUp();
    await until('a poll saw the replica past the write', async () => {
      await replicas.poll();
      return replicas.usable(replica);
    });
    const later = await read(reader, '/users/me/profile');
    expect(later).toMatchObject({ host: 'replica', data: { fullName: 'Later Reader' } });
    // Proof by content: with the replica's replay paused, a change made on the primary by someone
    // else (not the reader's session, so not its floor) is missing from what the reader is served.
    await pair.query('replica', 'select pg_wal_replay_pause()');
    try {
      await pair.query('primary', "update app.users set full_name = 'Changed Elsewhere' where id = $1", [reader.id]);
      expect(await read(reader, '/users/me/profile')).toMatchObject({ host: 'replica', data: { fullName: 'Later Reader' } });
    } finally {
      await pair.query('replica', 'select pg_wal_replay_resume()');
    }
  });

  it('never shows a session a past older than what it read on the primary', async () => {
    // The reader read at the primary (its own write); the author's new post, made after, was in
    // that read's view if it listed it; the next reads of the reader never lose it.
    const fresh = await createPost(app, author, { thoughtText: 'Seen on the primary' });
    expect((await app.patch('/users/me/profile', { bio: 'b' }, { token: reader.token })).status).toBe(200);
    const seen = await read(reader, `/posts/${fresh.id}`);
    expect(seen.host).toBe('primary');
    for (let i = 0; i < 5; i += 1) expect((await read(reader, `/posts/${fresh.id}`)).data.id).toBe(fresh.id);
  });

  it('checks the session on the primary: a revoked token stops at once', async () => {
    const user = await userAtLevel(app, 2);
    await pair.caughtUp();
    await until('the replica is usable', () => replicas.usable(replica));
    expect((await app.get('/users/me/profile', { token: user.token })).status).toBe(200);
    expect(
      (await app.post('/auth/logout', { refreshToken: user.refreshToken, logoutFromAllDevices: false }, { token: user.token })).status,
    ).toBe(200);
    expect((await app.get('/users/me/profile', { token: user.token })).status).toBe(401);
  });
});

describe('a client that sends back its Read-Floor (replica 1 s behind)', () => {
  const maxLagMillis = 2000;
  let user: TestUser;
  let other: TestUser;
  /** Calls of the primary's session check (db/replicas.ts sessionFloor) since the spy went in. */
  let primaryChecks = 0;
  let original: ReplicaSet['sessionFloor'];

  beforeAll(async () => {
    [user, other] = await usersAtLevels(app, 2, 2);
    original = replicas.sessionFloor.bind(replicas);
    replicas.sessionFloor = (...args) => {
      primaryChecks += 1;
      return original(...args);
    };
    await pair.setApplyDelay(1000);
  });
  afterAll(() => {
    replicas.sessionFloor = original;
  });

  /** GET with the floor `floor` (as the client keeps it), which host served it, and the floor it was handed back. */
  async function readWith(who: TestUser, floor: string | null, path = '/users/me/profile') {
    const served = replica.served;
    const checks = primaryChecks;
    const response = await app.get(path, { token: who.token, headers: floor ? { 'Read-Floor': floor } : {} });
    return {
      status: response.status,
      data: response.body.data,
      host: replica.served > served ? 'replica' : 'primary',
      checkedOnPrimary: primaryChecks > checks,
      floor: response.headers.get('read-floor'),
    };
  }

  it('reads its own writes at once, and once the replica replayed them is served and checked there: the primary runs nothing', async () => {
    const written = await app.patch('/users/me/profile', { bio: 'carried floor' }, { token: user.token });
    expect(written.status).toBe(200);
    const floor = written.headers.get('read-floor');
    expect(floor).toMatch(/^[0-9A-F]+\/[0-9A-F]+\.[A-Za-z0-9_-]{22}$/);
    // The replica holds the write back for a second: the read goes to the primary, and shows it.
    const first = await readWith(user, floor);
    expect(first).toMatchObject({ status: 200, host: 'primary', data: { bio: 'carried floor' } });
    expect(await onReplica("select count(*)::int as n from app.users where id = $1 and bio = 'carried floor'", [user.id])).toBe(0);
    await pair.caughtUp();
    const checks = replicas.sessionChecks;
    await until('the read is served by the replica', async () => {
      await replicas.poll();
      return (await readWith(user, first.floor)).host === 'replica';
    });
    const later = await readWith(user, first.floor);
    expect(later).toMatchObject({ status: 200, host: 'replica', checkedOnPrimary: false, data: { bio: 'carried floor' } });
    expect(later.floor).toBe(first.floor);
    expect(replicas.sessionChecks).toBeGreaterThan(checks);
    // Without the header (or with another session's, or a forged one) the session is checked on the primary.
    expect((await readWith(user, null)).checkedOnPrimary).toBe(true);
    expect((await readWith(other, first.floor)).checkedOnPrimary).toBe(true);
    expect((await readWith(user, `${first.floor!.split('.')[0]}.AAAAAAAAAAAAAAAAAAAAAA`)).checkedOnPrimary).toBe(true);
  });

  it('stops a revoked session within REPLICA_MAX_LAG_MS even when it sends an older floor, never with a 500', async () => {
    const before = await readWith(user, null);
    expect(before.status).toBe(200);
    await pair.caughtUp();
    await until('the replica serves the session', async () => (await readWith(user, before.floor)).host === 'replica');
    const session = await app.post('/auth/anonymous/session', { deviceId: `replica-revoke-${Date.now()}` });
    const revoked = { token: session.body.data.accessToken as string, refreshToken: session.body.data.refreshToken as string };
    const seen = await readWith(revoked as TestUser, null);
    expect(seen.status).toBe(200);
    const logout = await app.post(
      '/auth/logout',
      { refreshToken: revoked.refreshToken, logoutFromAllDevices: false },
      { token: revoked.token },
    );
    expect(logout.status).toBe(200);
    const revokedAt = Date.now();
    // Until the bound a read may still be answered (the replica is a second behind); never a 500.
    const statuses: number[] = [];
    while (Date.now() < revokedAt + maxLagMillis) statuses.push((await readWith(revoked as TestUser, seen.floor)).status);
    expect(statuses.filter((status) => status !== 200 && status !== 401)).toEqual([]);
    for (let i = 0; i < 5; i += 1) expect((await readWith(revoked as TestUser, seen.floor)).status).toBe(401);
  });

  it('stops a revoked session within REPLICA_MAX_LAG_MS on another API process, which never saw the logout', async () => {
    const second = await startTestApp(
      {},
      {},
      { database: { ownerUrl: pair.primaryUrl, replicaUrls: [pair.replicaUrl], replicaMaxLagMillis: maxLagMillis } },
    );
    try {
      const theirs = second.pools.replicas!;
      await until('the second process sees the replica usable', () => theirs.usable(theirs.replicas[0]!));
      const session = await app.post('/auth/anonymous/session', { deviceId: `replica-revoke-other-${Date.now()}` });
      const token = session.body.data.accessToken as string;
      const first = await app.get('/users/me/profile', { token });
      expect(first.status).toBe(200);
      const floor = first.headers.get('read-floor') as string;
      const checks = theirs.sessionChecks;
      // Once the replica replayed the session, the second process checks it there (a read it served
      // on the primary would raise its own floor past the replica again).
      await pair.caughtUp();
      await theirs.poll();
      expect((await second.get('/users/me/profile', { token, headers: { 'Read-Floor': floor } })).status).toBe(200);
      expect(theirs.sessionChecks).toBeGreaterThan(checks);
      const logout = await app.post(
        '/auth/logout',
        { refreshToken: session.body.data.refreshToken, logoutFromAllDevices: false },
        { token },
      );
      expect(logout.status).toBe(200);
      const revokedAt = Date.now();
      const statuses: number[] = [];
      while (Date.now() < revokedAt + maxLagMillis)
        statuses.push((await second.get('/users/me/profile', { token, headers: { 'Read-Floor': floor } })).status);
      expect(statuses.filter((status) => status !== 200 && status !== 401)).toEqual([]);
      for (let i = 0; i < 5; i += 1)
        expect((await second.get('/users/me/profile', { token, headers: { 'Read-Floor': floor } })).status).toBe(401);
    } finally {
      await second.close();
    }
  });
});

describe('read floors', () => {
  it('are swept by the worker once untouched for an hour; a session without one reads from the primary position again', async () => {
    const user = await userAtLevel(app, 2);
    expect((await app.get('/users/me/profile', { token: user.token })).status).toBe(200);
    const { rows } = await app.owner.query<{ id: string }>('select id from app.sessions where user_id = $1', [user.id]);
    const sessionId = rows[0]!.id;
    const floors = async () =>
      (await app.owner.query('select count(*)::int as n from app_private.session_read_floors where session_id = $1', [sessionId])).rows[0]
        .n;
    expect(await floors()).toBe(1);
    const stale = '00000000-0000-4000-8000-00000000f100';
    await app.owner.query(
      "insert into app_private.session_read_floors (session_id, floor, noted_at) values ($1, '0/1', now() - interval '61 minutes') on conflict (session_id) do update set noted_at = excluded.noted_at",
      [stale],
    );
    await app.owner.query(`select graphile_worker.add_job('sweep_session_read_floors', '{}'::json)`);
    await app.runJobs();
    expect(
      (await app.owner.query('select count(*)::int as n from app_private.session_read_floors where session_id = $1', [stale])).rows[0].n,
    ).toBe(0);
    expect(await floors()).toBe(1);
    await app.owner.query("update app_private.session_read_floors set noted_at = now() - interval '61 minutes' where session_id = $1", [
      sessionId,
    ]);
    await app.owner.query(`select graphile_worker.add_job('sweep_session_read_floors', '{}'::json)`);
    await app.runJobs();
    expect(await floors()).toBe(0);
    // The next read notes a floor again (the primary's position now) and is answered.
    expect((await app.get('/users/me/profile', { token: user.token })).status).toBe(200);
    expect(await floors()).toBe(1);
  });
});

describe('replicas that cannot serve', () => {
  let user: TestUser;
  beforeAll(async () => {
    await pair.setApplyDelay(0);
    user = await userAtLevel(app, 2);
    await pair.caughtUp();
    await until('the replica is usable', () => replicas.usable(replica));
  });

  it('refuses, on the replica, a read whose floor the replica has not replayed in time (RB001), and anywhere but on a standby; waits for a replay under way', async () => {
    const { rows } = await pair.query<{ lsn: string }>('replica', 'select pg_last_wal_replay_lsn()::text as lsn');
    await expect(pair.query('replica', 'select app.replica_caught_up($1, 0)', [rows[0]!.lsn])).resolves.toBeDefined();
    await expect(pair.query('replica', "select app.replica_caught_up('FFFFFFFF/0', 0)")).rejects.toMatchObject({ code: 'RB001' });
    await expect(pair.query('primary', "select app.replica_caught_up('0/0', 0)")).rejects.toMatchObject({ code: 'RB001' });
    // It waits for the replay: a floor the replica gets to while the check waits is reached.
    const { rows: ahead } = await pair.query<{ lsn: string }>('primary', 'select pg_current_wal_insert_lsn()::text as lsn');
    await pair.query('replica', 'select pg_wal_replay_pause()');
    await pair.query('primary', "update app.users set bio = 'replayed while waiting' where id = $1", [user.id]);
    const { rows: after } = await pair.query<{ lsn: string }>('primary', 'select pg_current_wal_insert_lsn()::text as lsn');
    expect(after[0]!.lsn).not.toBe(ahead[0]!.lsn);
    const waiting = pair.query('replica', 'select app.replica_caught_up($1, 1000)', [after[0]!.lsn]);
    await pair.query('replica', 'select pg_wal_replay_resume()');
    await expect(waiting).resolves.toBeDefined();
  });

  it('skips a replica lagging more than REPLICA_MAX_LAG_MS, and uses it again once it caught up', async () => {
    await pair.setApplyDelay(4000);
    const writer = await userAtLevel(app, 2);
    // Writes keep coming; the replica holds them back 4 s, more than the 2 s allowed.
    const writing = (async () => {
      for (let i = 0; i < 30 && replicas.usable(replica); i += 1) {
        await app.patch('/users/me/profile', { bio: `bio ${i}` }, { token: writer.token });
        await sleep(100);
      }
    })();
    await until('the replica is out of rotation', () => !replicas.usable(replica), 10_000);
    await writing;
    expect(replica.lagMillis).toBeGreaterThan(2000);
    const skipped = await read(user, '/users/me/profile');
    expect(skipped.host).toBe('primary');

    await pair.setApplyDelay(0);
    await pair.caughtUp();
    await until('the replica is back', () => replicas.usable(replica), 10_000);
    await until('the user reads from the replica', async () => (await read(user, '/users/me/profile')).host === 'replica');
  });

  it('skips a stopped replica, mid-request too, with no 500; uses it again when it is back', async () => {
    await until('the replica is usable', () => replicas.usable(replica));
    const readers = await Promise.all([1, 2, 3, 4].map(() => userAtLevel(app, 2)));
    await pair.caughtUp();
    const statuses: number[] = [];
    const load = Promise.all(
      readers.map(async (reader) => {
        for (let i = 0; i < 40; i += 1) statuses.push((await app.get(`/users/${reader.id}/followers`, { token: reader.token })).status);
      }),
    );
    await sleep(50);
    await pair.stopReplica();
    await load;
    expect(statuses.length).toBe(160);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(replicas.usable(replica)).toBe(false);
    expect((await read(user, '/users/me/profile')).host).toBe('primary');

    await pair.startReplica();
    await pair.caughtUp();
    await until('the replica is back', () => replicas.usable(replica), 15_000);
    await until('the user reads from the replica', async () => (await read(user, '/users/me/profile')).host === 'replica');
  });
});

describe('DATABASE_REPLICA_URLS and REPLICA_MAX_LAG_MS', () => {
  const base = {
    NODE_ENV: 'test',
    JWT_SECRET: 'x',
    BALLOT_KEY: `k:${'ab'.repeat(32)}`,
    DATABASE_URL: 'postgres://owner:secret@db:5432/opinion',
  };
  it('take comma-separated owner-form URLs and a lag in milliseconds (default 2000)', () => {
    const config = loadConfig({
      ...base,
      DATABASE_REPLICA_URLS: 'postgres://owner:secret@r1:5432/opinion, postgres://owner:secret@r2:5433/opinion',
    });
    expect(config.databaseReplicaUrls).toEqual(['postgres://owner:secret@r1:5432/opinion', 'postgres://owner:secret@r2:5433/opinion']);
    expect(config.replicaMaxLagMillis).toBe(2000);
    expect(loadConfig({ ...base, REPLICA_MAX_LAG_MS: '500' }).replicaMaxLagMillis).toBe(500);
    expect(loadConfig(base).databaseReplicaUrls).toEqual([]);
  });

  it('refuse what is not a postgres URL (without echoing its password), a replica without DATABASE_URL, and a lag that is not a positive whole number', () => {
    expect(() => loadConfig({ ...base, DATABASE_REPLICA_URLS: 'http://owner:secret@r1/opinion' })).toThrow(
      /DATABASE_REPLICA_URLS must list postgres:\/\/ URLs \(got "http:\/\/…@r1\/opinion"/,
    );
    expect(() => loadConfig({ ...base, DATABASE_URL: '', DATABASE_REPLICA_URLS: 'postgres://owner:secret@r1/opinion' })).toThrow(
      /DATABASE_REPLICA_URLS needs DATABASE_URL/,
    );
    expect(() => loadConfig({ ...base, REPLICA_MAX_LAG_MS: '2s' })).toThrow(/REPLICA_MAX_LAG_MS must be a positive whole number/);
  });
});
