// Notification policies and the live-delivery functions tested directly in SQL (migrations/frozen/0019,
// 0020, 0100, 0182): what the API roles may read and change, mark-read's rules, the dispatcher's
// ranges under out-of-order commits, the per-batch re-check against the reader connection's open
// sessions, and the revocation announcement.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleUrl } from '../../../db/roles.ts';
import { LiveReader } from '../../../server/sse/reader.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, type TestHub } from '../../helpers/hubs.ts';
import { insertNotification, listenTo, sleep } from '../../helpers/notifications.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';
import { hubWithMembers } from '../../helpers/worlds.ts';
import { notificationTypes, publicationTypes } from '../../../server/shapes/notification.ts';

let app: TestApp;
/** A connection like the hub's: logged in as authenticator, no role switched. */
let authenticator: pg.Client;
let hub: TestHub;
let member: TestUser;
let outsider: TestUser;
beforeAll(async () => {
  app = await startTestApp();
  // This file drives the dispatcher itself: the app's hub (and its dispatcher) must not run.
  await app.services.notificationHub.stop();
  authenticator = new pg.Client({ connectionString: roleUrl(app.ownerUrl, 'authenticator') });
  await authenticator.connect();
  hub = await createHub(app, await userAtLevel(app, 4));
  member = await userAtLevel(app, 4);
  outsider = await userAtLevel(app, 4);
  await addMember(app, hub, member);
});
afterAll(async () => {
  await authenticator.end();
  await app.close();
});

const insufficientPrivilege = '42501';
const sessionOf = (user: TestUser): string => JSON.parse(Buffer.from(user.token.split('.')[1] as string, 'base64url').toString()).sid;
const read = (user: TestUser, sql: string, params: unknown[] = []) =>
  asViewer(app, 'app_user', user.id, (c) => rowsOrError(c, sql, params));

async function errorOf(run: Promise<unknown>): Promise<{ code?: string; message: string } | undefined> {
  return run.then(
    () => undefined,
    (error: { code?: string; message: string }) => ({ code: error.code, message: error.message }),
  );
}

describe('grants', () => {
  it('lets app_user read notifications, never write them or read the writing transaction', async () => {
    const row = await insertNotification(app, member.id);
    for (const sql of [
      `update app.notifications set read_at = now() where id = '${row}'`,
      `delete from app.notifications where id = '${row}'`,
      `insert into app.notifications (recipient_id, type) values ('${member.id}', 'user_followed')`,
      'select tx_id from app.notifications',
    ]) {
      expect(await read(member, sql), sql).toBe(insufficientPrivilege);
    }
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, 'select id from app.notifications'))).toBe(
      insufficientPrivilege,
    );
  });

  it('keeps the delivery functions to the authenticator login: no API role may call them', async () => {
    for (const sql of [
      'select app_private.dispatch_notifications()',
      'select app_private.take_notification_dispatch()',
      `select * from app_private.live_notifications('1'::xid8, '2'::xid8)`,
      `select app_private.live_sessions_sync('{}', '{}')`,
      `select * from app_private.ended_sessions('{}')`,
      'select app_private.notification_dispatched_to()',
    ]) {
      expect(await read(member, sql), sql).toBe(insufficientPrivilege);
    }
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, 'select app.mark_notifications_read(null, true)'))).toBe(
      insufficientPrivilege,
    );
  });

  it('gives the authenticator login itself no access to notification rows', async () => {
    expect((await errorOf(authenticator.query('select id from app.notifications')))?.code).toBe(insufficientPrivilege);
    expect((await errorOf(authenticator.query('select * from app_private.notification_dispatch')))?.code).toBe(insufficientPrivilege);
    expect((await errorOf(authenticator.query('select app.mark_notifications_read(null, true)')))?.code).toBe(insufficientPrivilege);
  });
});

describe('the select policy', () => {
  it('shows a recipient their global rows and the rows of hubs they are an active member of, nobody else', async () => {
    const global = await insertNotification(app, outsider.id);
    const hubRow = await insertNotification(app, outsider.id, { type: 'hub_post_created', hubId: hub.id });
    const memberRow = await insertNotification(app, member.id, { type: 'hub_post_created', hubId: hub.id });
    const ids = async (user: TestUser) => ((await read(user, 'select id from app.notifications')) as { id: string }[]).map((row) => row.id);
    expect(await ids(outsider)).toContain(global);
    expect(await ids(outsider)).not.toContain(hubRow);
    expect(await ids(member)).toContain(memberRow);
    expect(await ids(member)).not.toContain(global);
  });
});

describe('app.notification_rows', () => {
  it("returns the viewer's visible rows among the ids, with the actor only when the viewer may see that user", async () => {
    const actor = await userAtLevel(app, 2);
    const blocker = await userAtLevel(app, 2);
    expect((await app.post(`/users/${actor.id}/block`, undefined, { token: blocker.token })).status).toBe(200);
    const shown = await insertNotification(app, member.id, { actorId: actor.id });
    const blockedActor = await insertNotification(app, blocker.id, { actorId: actor.id });
    const hidden = await insertNotification(app, outsider.id, { type: 'hub_post_created', hubId: hub.id, actorId: actor.id });
    const rowsFor = (user: TestUser) =>
      read(user, 'select notification_id, actor_id, actor_username from app.notification_rows($1)', [[shown, blockedActor, hidden]]);
    expect(await rowsFor(member)).toEqual([{ notification_id: shown, actor_id: actor.id, actor_username: actor.username }]);
    expect(await rowsFor(blocker)).toEqual([{ notification_id: blockedActor, actor_id: null, actor_username: null }]);
    expect(await rowsFor(outsider)).toEqual([]);
  });
});

describe('app.mark_notifications_read', () => {
  const mark = (user: TestUser, ids: string[] | null, all: boolean) =>
    asViewer(app, 'app_user', user.id, (c) => rowsOrError(c, 'select app.mark_notifications_read($1::uuid[], $2) as updated', [ids, all]));

  it("fails with NOTIFICATION_NOT_FOUND on an unknown id or another user's, before changing anything", async () => {
    const own = await insertNotification(app, outsider.id);
    const theirs = await insertNotification(app, member.id);
    const failed = await asViewer(app, 'app_user', outsider.id, (c) =>
      errorOf(c.query('select app.mark_notifications_read($1::uuid[], false)', [[own, theirs]])),
    );
    expect(failed).toEqual({ code: 'P0001', message: 'NOTIFICATION_NOT_FOUND' });
    expect(await mark(outsider, [randomUUID()], false)).toBe('P0001');
    expect(await mark(outsider, [own], false)).toEqual([{ updated: 1 }]);
  });

  it('counts and changes visible unread rows only', async () => {
    const visible = await insertNotification(app, outsider.id);
    const hidden = await insertNotification(app, outsider.id, { type: 'hub_role_changed', hubId: hub.id });
    expect(await mark(outsider, [visible, hidden, visible], false)).toEqual([{ updated: 1 }]);
    expect(await mark(outsider, [hidden], false)).toEqual([{ updated: 0 }]);
    const all = (await mark(outsider, null, true)) as { updated: number }[];
    const { rows } = await app.owner.query(
      `select count(*)::int as n from app.notifications n where n.recipient_id = $1 and n.read_at is null and n.hub_id is null`,
      [outsider.id],
    );
    expect(all[0]?.updated).toBe(rows[0].n);
  });
});

describe('the dispatcher', () => {
  /** The announced transaction-id ranges, in order. */
  const ranges = (payloads: string[]) =>
    payloads.map((payload) => {
      const parsed = JSON.parse(payload);
      return { from: BigInt(parsed.from), to: BigInt(parsed.to) };
    });
  const dispatch = () => authenticator.query('select app_private.dispatch_notifications()');
  const txOf = async (id: string) =>
    BigInt((await app.owner.query('select tx_id::text as tx from app.notifications where id = $1', [id])).rows[0].tx);
  const watermark = async () =>
    BigInt((await app.owner.query('select dispatched_to::text as w from app_private.notification_dispatch')).rows[0].w);

  it('announces only ranges that hold rows, and moves no watermark when nothing was written', async () => {
    // First every row written so far is announced (xmin is cluster-wide: other files' transactions may hold it).
    const lastTx = BigInt((await app.owner.query(`select coalesce(max(tx_id), '0')::text as t from app.notifications`)).rows[0].t);
    while ((await watermark()) <= lastTx) {
      await dispatch();
      await sleep(20);
    }
    const listener = await listenTo(app, 'notifications');
    try {
      const before = await watermark();
      await anonymousUser(app);
      await dispatch();
      await sleep(100);
      // A transaction of an earlier test (a worker job still running when the loop above ended)
      // may commit rows now: announcing those is right. An announced range must hold rows.
      for (const { from, to } of ranges(listener.payloads)) {
        const { rows } = await app.owner.query(
          'select count(*)::int as n from app.notifications where tx_id >= $1::text::xid8 and tx_id < $2::text::xid8',
          [from.toString(), to.toString()],
        );
        expect(rows[0].n).toBeGreaterThan(0);
      }
      if (listener.payloads.length === 0) expect(await watermark()).toBe(before);
    } finally {
      await listener.end();
    }
  });

  it(
    'covers every committed row by exactly one announced range, also when an older transaction commits last',
    { timeout: 40_000 },
    async () => {
      await dispatch();
      const listener = await listenTo(app, 'notifications');
      const slow = new pg.Client({ connectionString: app.ownerUrl });
      await slow.connect();
      try {
        await slow.query('begin');
        const late = (
          await slow.query(`insert into app.notifications (recipient_id, type) values ($1, 'user_followed') returning id`, [outsider.id])
        ).rows[0].id;
        // Another recipient: a row for the same one would add to the same unread counter, and when both
        // picked the same of its random slots this insert would wait for the open transaction for ever.
        const early = await insertNotification(app, member.id);
        await dispatch();
        await sleep(50);
        // While the older transaction runs, no range reaches the committed newer row.
        const earlyTx = await txOf(early);
        expect(ranges(listener.payloads).every((range) => range.to <= earlyTx)).toBe(true);
        await slow.query('commit');
        const lateTx = await txOf(late);
        expect(lateTx).toBeLessThan(earlyTx);
        const covering = (tx: bigint) => ranges(listener.payloads).filter((range) => range.from <= tx && tx < range.to);
        // Until xmin passes both (it is cluster-wide: other test files' transactions hold it too, for
        // example graphql-bounds' table lock for its 5 s statement timeout). Bounded below the test's
        // timeout: a loop left running after a timeout would keep dispatching on the shared
        // authenticator connection under the file's next tests, and its finally would never close
        // the clients.
        const deadline = Date.now() + 25_000;
        while (covering(earlyTx).length === 0 || covering(lateTx).length === 0) {
          if (Date.now() > deadline)
            throw new Error(
              `no range covered ${lateTx} and ${earlyTx} within 25 s; announced: ${ranges(listener.payloads)
                .map((range) => `${range.from}-${range.to}`)
                .join(', ')}`,
            );
          await dispatch();
          await sleep(20);
        }
        expect(covering(lateTx)).toHaveLength(1);
        expect(covering(earlyTx)).toHaveLength(1);
        // Consecutive ranges: each starts where the previous ended.
        const announced = ranges(listener.payloads);
        for (let i = 1; i < announced.length; i += 1) expect(announced[i]?.from).toBe(announced[i - 1]?.to);
      } finally {
        await slow.end();
        await listener.end();
      }
    },
  );

  it('is led by one connection at a time, and passes on when that connection ends', async () => {
    const other = new pg.Client({ connectionString: roleUrl(app.ownerUrl, 'authenticator') });
    await other.connect();
    try {
      const take = async (client: pg.Client) =>
        (await client.query('select app_private.take_notification_dispatch() as lead')).rows[0].lead;
      expect(await take(authenticator)).toBe(true);
      expect(await take(other)).toBe(false);
      const third = new pg.Client({ connectionString: roleUrl(app.ownerUrl, 'authenticator') });
      await third.connect();
      expect(await take(third)).toBe(false);
      await authenticator.query('select pg_advisory_unlock_all()');
      expect(await take(third)).toBe(true);
      await third.end();
      // The lock goes when the server has ended that backend, a moment after the client closed.
      let taken = false;
      for (let attempt = 0; attempt < 100 && !taken; attempt += 1) {
        taken = await take(other);
        if (!taken) await sleep(20);
      }
      expect(taken).toBe(true);
    } finally {
      await other.end();
    }
  });
});

describe('app_private.live_notifications', () => {
  /** The sessions the connection's table holds (app_private.live_sessions_sync), as the hub's reader keeps them. */
  let synced = new Set<string>();
  const openSessions = async (sessions: string[]) => {
    const remove = [...synced].filter((id) => !sessions.includes(id));
    await authenticator.query('select app_private.live_sessions_sync($1::uuid[], $2::uuid[])', [sessions, remove]);
    synced = new Set(sessions);
  };
  const batch = async (from: bigint, to: bigint, sessions: string[]) => {
    await openSessions(sessions);
    const { rows } = await authenticator.query(
      'select session_id, live, notification_id, type, hub_id, actor_id, actor_username from app_private.live_notifications($1::xid8, $2::xid8)',
      [from.toString(), to.toString()],
    );
    return rows;
  };
  const xmin = async () => BigInt((await app.owner.query('select pg_snapshot_xmin(pg_current_snapshot())::text as x')).rows[0].x);
  /** Waits until every transaction that wrote a notification so far is below xmin (other databases' transactions hold it too). */
  const finishedBound = async () => {
    const lastTx = BigInt((await app.owner.query('select max(tx_id)::text as t from app.notifications')).rows[0].t);
    let to = await xmin();
    while (to <= lastTx) {
      await sleep(20);
      to = await xmin();
    }
    return to;
  };

  it("returns, in one statement for every session, the range's rows its user may see now in (tx_id, id) order, and whether the session is live", async () => {
    const from = await xmin();
    const anonymous = await anonymousUser(app);
    const memberRows = [
      await insertNotification(app, member.id, { ageSeconds: 1 }),
      await insertNotification(app, member.id, { type: 'hub_post_created', hubId: hub.id }),
    ];
    const hidden = await insertNotification(app, outsider.id, { type: 'hub_post_created', hubId: hub.id });
    const anonymousRow = await insertNotification(app, anonymous.id);
    await app.owner.query('update app.sessions set revoked_at = now() where id = $1', [sessionOf(anonymous)]);
    const to = await finishedBound();
    const rows = await batch(from, to, [sessionOf(member), sessionOf(outsider), sessionOf(anonymous), randomUUID()]);
    const of = (session: string) => rows.filter((row) => row.session_id === session);
    expect(of(sessionOf(member)).map((row) => [row.notification_id, row.live])).toEqual(memberRows.map((id) => [id, true]));
    expect(of(sessionOf(anonymous)).map((row) => [row.notification_id, row.live])).toEqual([[anonymousRow, false]]);
    // The outsider's only row is hidden: nothing at all. Unknown sessions: nothing.
    expect(rows).toHaveLength(3);
    expect(JSON.stringify(rows)).not.toContain(hidden);
    // The range's end is exclusive, its start inclusive.
    expect(await batch(from, from, [sessionOf(member)])).toEqual([]);
  });

  it('shows the actor exactly as app.notification_rows shows it to the recipient: null across a block either way', async () => {
    const actor = await userAtLevel(app, 2);
    const blocker = await userAtLevel(app, 2);
    const blocked = await userAtLevel(app, 2);
    expect((await app.post(`/users/${actor.id}/block`, undefined, { token: blocker.token })).status).toBe(200);
    expect((await app.post(`/users/${blocked.id}/block`, undefined, { token: actor.token })).status).toBe(200);
    const from = await xmin();
    const rowsByUser = new Map<TestUser, string>();
    for (const user of [member, blocker, blocked]) rowsByUser.set(user, await insertNotification(app, user.id, { actorId: actor.id }));
    const to = await finishedBound();
    const rows = await batch(from, to, [member, blocker, blocked].map(sessionOf));
    for (const [user, id] of rowsByUser) {
      const live = rows.find((row) => row.notification_id === id);
      const listed = (await read(user, 'select actor_id, actor_username from app.notification_rows($1)', [[id]])) as unknown[];
      expect(listed).toHaveLength(1);
      expect({ actor_id: live?.actor_id, actor_username: live?.actor_username }).toEqual(listed[0]);
    }
    expect(rows.find((row) => row.notification_id === rowsByUser.get(member))?.actor_id).toBe(actor.id);
    expect(rows.find((row) => row.notification_id === rowsByUser.get(blocker))?.actor_id).toBeNull();
    expect(rows.find((row) => row.notification_id === rowsByUser.get(blocked))?.actor_id).toBeNull();
  });

  it("reads for the sessions the connection's table holds now, which only the sync function changes", async () => {
    const from = await xmin();
    const row = await insertNotification(app, member.id);
    const to = await finishedBound();
    expect((await batch(from, to, [sessionOf(member)])).map((r) => r.notification_id)).toEqual([row]);
    // Removed (the member's last stream closed): nothing for that session any more.
    expect(await batch(from, to, [sessionOf(outsider)])).toEqual([]);
    // The table belongs to the function's owner: the login role can neither read nor change it itself.
    for (const sql of [
      'select id from pg_temp.live_open_sessions',
      `insert into pg_temp.live_open_sessions values ('${sessionOf(member)}')`,
    ]) {
      expect((await errorOf(authenticator.query(sql)))?.code, sql).toBe(insufficientPrivilege);
    }
    // Another connection has a table of its own: empty until it syncs, so it reads nothing for anyone.
    const other = new pg.Client({ connectionString: roleUrl(app.ownerUrl, 'authenticator') });
    await other.connect();
    try {
      await other.query('select app_private.live_sessions_sync($1::uuid[], $2::uuid[])', [[], []]);
      expect(
        (await other.query('select * from app_private.live_notifications($1::xid8, $2::xid8)', [from.toString(), to.toString()])).rows,
      ).toEqual([]);
    } finally {
      await other.end();
    }
  });

  it("the service's reader (LiveReader) sends only what changed: a session whose last stream closed reads nothing, one that opens again reads", async () => {
    const reader = new LiveReader(roleUrl(app.ownerUrl, 'authenticator'), app.storage);
    const [first, second] = [await anonymousUser(app), await anonymousUser(app)];
    const open = { sessionsVersion: 0, list: [] as string[], sessions: () => open.list };
    try {
      const from = await xmin();
      const rows = [await insertNotification(app, first.id), await insertNotification(app, second.id)];
      const to = await finishedBound();
      /** The open sessions become `users`' (a new version); what the reader's batch delivers, per session. */
      const deliveredTo = async (...users: TestUser[]) => {
        open.list = users.map(sessionOf);
        open.sessionsVersion += 1;
        const { bySession } = await reader.batch(from, to, open);
        return Object.fromEntries([...bySession].map(([session, events]) => [session, events.map((event) => event.id)]));
      };
      expect(await deliveredTo(first, second)).toEqual({ [sessionOf(first)]: [rows[0]], [sessionOf(second)]: [rows[1]] });
      expect(await deliveredTo(second)).toEqual({ [sessionOf(second)]: [rows[1]] });
      expect(await deliveredTo(first)).toEqual({ [sessionOf(first)]: [rows[0]] });
      expect(await deliveredTo()).toEqual({});
    } finally {
      await reader.end();
    }
  });

  it('names the sessions that are no longer live', async () => {
    const live = await anonymousUser(app);
    const ended = await anonymousUser(app);
    await app.post('/auth/logout', { refreshToken: ended.refreshToken, logoutFromAllDevices: false }, { token: ended.token });
    const unknown = randomUUID();
    const { rows } = await authenticator.query('select id from app_private.ended_sessions($1::uuid[]) as id', [
      [sessionOf(live), sessionOf(ended), unknown],
    ]);
    expect(rows.map((row) => row.id).sort()).toEqual([sessionOf(ended), unknown].sort());
  });
});

describe('app.notification_replay', () => {
  const replay = (user: TestUser, after: string, before: bigint, limit = 500) =>
    read(user, 'select place::text, ids from app.notification_replay($1, $2::xid8, $3)', [after, before.toString(), limit]).then((rows) => {
      const [row] = rows as { place: string | null; ids: string[] | null }[];
      expect(row?.place === null).toBe(row?.ids === null);
      return row?.ids;
    });
  const txOf = async (id: string) =>
    BigInt((await app.owner.query('select tx_id::text as t from app.notifications where id = $1', [id])).rows[0].t);
  const beyond = async () => BigInt((await app.owner.query('select pg_current_xact_id()::text as t')).rows[0].t) + 1n;

  it("returns the viewer's rows after the given one in (tx_id, id) order, below the bound, at most the limit", async () => {
    const user = await anonymousUser(app);
    const [a, b, c, d] = [
      await insertNotification(app, user.id),
      await insertNotification(app, user.id),
      await insertNotification(app, user.id),
      await insertNotification(app, user.id),
    ] as string[];
    await insertNotification(app, outsider.id);
    const bound = await beyond();
    expect(await replay(user, a as string, bound)).toEqual([b, c, d]);
    expect(await replay(user, a as string, bound, 2)).toEqual([b, c]);
    expect(await replay(user, a as string, await txOf(c as string))).toEqual([b]);
    expect(await replay(user, d as string, bound)).toEqual([]);
    expect(await read(user, 'select place::text from app.notification_replay($1, $2::xid8, 1)', [b, bound.toString()])).toEqual([
      { place: (await txOf(b as string)).toString() },
    ]);
  });

  it('applies hub visibility at replay time: a leaver gets none of that hub, also when the place is a hub row', async () => {
    const owner = await userAtLevel(app, 4);
    const leaver = await userAtLevel(app, 4);
    const ownHub = await hubWithMembers(app, owner, leaver);
    const place = await insertNotification(app, leaver.id);
    const hubRow = await insertNotification(app, leaver.id, { type: 'hub_post_created', hubId: ownHub.id, postId: randomUUID() });
    const global = await insertNotification(app, leaver.id);
    const bound = await beyond();
    expect(await replay(leaver, place, bound)).toEqual([hubRow, global]);
    expect((await app.delete(`/hubs/${ownHub.id}/membership`, { token: leaver.token })).status).toBe(200);
    const after = await replay(leaver, place, bound);
    expect(after).not.toContain(hubRow);
    expect(after).toContain(global);
    expect(await replay(leaver, hubRow, bound)).toEqual([global]);
  });

  it("is null for an id that is not one of the viewer's rows", async () => {
    const user = await anonymousUser(app);
    await insertNotification(app, user.id);
    const others = await insertNotification(app, outsider.id);
    const bound = await beyond();
    expect(await replay(user, randomUUID(), bound)).toBeNull();
    expect(await replay(user, others, bound)).toBeNull();
  });
});

describe('session revocation announcements', () => {
  it('announces a session once, when it becomes revoked, with its id only', async () => {
    const listener = await listenTo(app, 'session_revoked');
    try {
      const user = await anonymousUser(app);
      const session = sessionOf(user);
      await app.owner.query(`update app.sessions set expires_at = expires_at + interval '1 day' where id = $1`, [session]);
      await app.owner.query('update app.sessions set revoked_at = now() where id = $1', [session]);
      await app.owner.query('update app.sessions set revoked_at = now() where id = $1', [session]);
      await sleep(100);
      expect(listener.payloads).toEqual([session]);
    } finally {
      await listener.end();
    }
  });
});

describe('publication alerts and the content mute', () => {
  it('are the types server/shapes/notification.ts names (app_private.is_publication, app_private.content_mute_silences, pushed_type)', async () => {
    const { rows } = await app.owner.query<{ type: string; publication: boolean; muted: boolean; unmuted: boolean; pushed: boolean }>(
      `select t as type, app_private.is_publication(t::app.notification_type) as publication,
              app_private.content_mute_silences(true, t::app.notification_type) as muted,
              app_private.content_mute_silences(false, t::app.notification_type) as unmuted,
              app_private.pushed_type(t::app.notification_type) as pushed
       from unnest($1::text[]) t`,
      [notificationTypes],
    );
    const publication = new Set<string>(publicationTypes);
    expect(rows).toEqual(
      notificationTypes.map((type) => ({
        type,
        publication: publication.has(type),
        muted: publication.has(type) || type === 'post_reposted',
        unmuted: false,
        pushed: !publication.has(type),
      })),
    );
  });
});
