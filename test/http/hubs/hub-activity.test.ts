// The order of GET /users/me/hubs (migrations/frozen/0106, 0330): a hub's latest activity as the list knows
// it. The actor's own row moves with the action (a vote on a hub post moves its hub to the top
// without writing the hub's row, which every voter of the hub would otherwise queue on); the other
// members' rows move with the worker's sweep, never in the action's transaction; the kept rows
// agree with the memberships, join requests and invitations they describe.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, invite, type TestHub } from '../../helpers/hubs.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

interface MyHub {
  id: string;
  lastActivityAt: string;
  viewerStatus: string;
  viewerRole: string | null;
  invitationId: string | null;
}

async function myHubs(token: string, query = ''): Promise<{ items: MyHub[]; nextCursor: string | null }> {
  const response = await app.get(`/users/me/hubs${query}`, { token });
  expect(response.status).toBe(200);
  return response.body.data;
}

const ids = async (token: string) => (await myHubs(token)).items.map((h) => h.id);

/** Runs the worker's sweep (the task the crontab starts every minute). */
async function sweep(): Promise<void> {
  await app.owner.query(`select graphile_worker.add_job('propagate_hub_activity')`);
  await app.runJobs();
}

/** The kept row of (user, hub): its key and row version. */
const entryOf = async (user: TestUser, hub: TestHub) =>
  (
    await app.owner.query('select activity_at, xmin::text from app_private.hub_list_entries where user_id = $1 and hub_id = $2', [
      user.id,
      hub.id,
    ])
  ).rows[0];

describe('hub activity', () => {
  it('moves a hub to the top of GET /users/me/hubs when a member votes on its post, leaving the hub row alone', async () => {
    const owner = await userAtLevel(app, 4);
    const member = await userAtLevel(app, 4);
    const quiet = await createHub(app, owner);
    const busy = await hubWithMembers(app, owner, member);
    const post = await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [busy.id] });
    await addMember(app, quiet, member);
    const before = (await myHubs(member.token)).items;
    expect(before.map((h) => h.id)).toEqual([quiet.id, busy.id]);
    const hubRow = await app.owner.query('select last_activity_at, xmin::text from app.hubs where id = $1', [busy.id]);

    expect((await vote(app, member, post.id, 'left')).status).toBe(201);
    const after = (await myHubs(member.token)).items;
    expect(after.map((h) => h.id)).toEqual([busy.id, quiet.id]);
    const busyAfter = after.find((h) => h.id === busy.id) as MyHub;
    expect(Date.parse(busyAfter.lastActivityAt)).toBeGreaterThan(
      Date.parse(before.find((h) => h.id === busy.id)?.lastActivityAt as string),
    );
    const voted = await app.owner.query('select voted_at from app.vote_receipts where post_id = $1 and user_id = $2', [post.id, member.id]);
    expect(busyAfter.lastActivityAt).toBe(voted.rows[0].voted_at.toISOString());
    expect((await app.owner.query('select last_activity_at, xmin::text from app.hubs where id = $1', [busy.id])).rows).toEqual(hubRow.rows);
  });

  it("moves the other members' rows with the sweep, not in the action's transaction", async () => {
    const owner = await userAtLevel(app, 4);
    const member = await userAtLevel(app, 4);
    const quiet = await createHub(app, owner);
    const busy = await hubWithMembers(app, owner, member);
    await addMember(app, quiet, member);
    await sweep();
    expect(await ids(member.token)).toEqual([quiet.id, busy.id]);
    const memberRow = await entryOf(member, busy);

    // The owner posts into the busy hub: the owner's list moves at once, the member's row is not written.
    await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [busy.id] });
    expect((await ids(owner.token))[0]).toBe(busy.id);
    expect(await entryOf(member, busy)).toEqual(memberRow);
    expect(await ids(member.token)).toEqual([quiet.id, busy.id]);
    const dirty = async () => (await app.owner.query('select from app_private.hub_list_dirty where hub_id = $1', [busy.id])).rowCount;
    expect(await dirty()).toBe(1);

    await sweep();
    const after = (await myHubs(member.token)).items;
    expect(after.map((h) => h.id)).toEqual([busy.id, quiet.id]);
    const latest = await app.owner.query('select app.hub_last_activity_at($1) as at', [busy.id]);
    expect(after[0]?.lastActivityAt).toBe(latest.rows[0].at.toISOString());
    // Swept: no longer dirty, and not swept again before 1 ms per row of the hub has passed.
    expect(await dirty()).toBe(0);
    const swept = await app.owner.query(
      `select target_at, not_before > statement_timestamp() - interval '1 minute' as recent from app_private.hub_list_sweeps where hub_id = $1`,
      [busy.id],
    );
    expect(swept.rows).toEqual([{ target_at: null, recent: true }]);
  });

  it('sweeps a hub in steps of at most the batch, each on from the last user reached', async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner);
    const members = await Promise.all([0, 1, 2, 3, 4].map(() => userAtLevel(app, 4)));
    for (const member of members) await addMember(app, hub, member);
    await sweep();
    await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [hub.id] });
    const target = (await app.owner.query('select app.hub_last_activity_at($1) as at', [hub.id])).rows[0].at;
    const step = async () => (await app.owner.query('select app_private.propagate_hub_activity(2) as n')).rows[0].n as number | null;
    // Not before its time: 1 ms per row after the end of its last sweep.
    await app.owner.query(`update app_private.hub_list_sweeps set not_before = now() + interval '1 hour' where hub_id = $1`, [hub.id]);
    expect(await step()).toBeNull();
    await app.owner.query('update app_private.hub_list_sweeps set not_before = now() where hub_id = $1', [hub.id]);
    // The claim, then steps of 2 rows: 6 rows (owner and 5 members) take three full steps and an empty last one.
    const steps: (number | null)[] = [];
    do steps.push(await step());
    while (steps.at(-1) !== null);
    expect(steps).toEqual([0, 2, 2, 2, 0, null]);
    const keys = await app.owner.query('select distinct activity_at from app_private.hub_list_entries where hub_id = $1', [hub.id]);
    expect(keys.rows).toEqual([{ activity_at: target }]);
  });

  it('never waits for a list row another transaction is writing: that row keeps its key until the next sweep', async () => {
    const owner = await userAtLevel(app, 4);
    const member = await userAtLevel(app, 4);
    const hub = await hubWithMembers(app, owner, member);
    await sweep();
    const before = await entryOf(member, hub);
    await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [hub.id] });
    await app.owner.query('update app_private.hub_list_sweeps set not_before = now() where hub_id = $1', [hub.id]);
    const target = (await app.owner.query('select app.hub_last_activity_at($1) as at', [hub.id])).rows[0].at;
    // Another transaction writes the member's row (as an action in the hub would) and stays open.
    const writer = await app.owner.connect();
    const sweeper = await app.owner.connect();
    try {
      await writer.query('begin');
      await writer.query('update app_private.hub_list_entries set status = status where hub_id = $1 and user_id = $2', [hub.id, member.id]);
      await sweeper.query(`set lock_timeout = '2s'`);
      while ((await sweeper.query('select app_private.propagate_hub_activity(1000) as n')).rows[0].n !== null);
      await writer.query('rollback');
    } finally {
      writer.release();
      await sweeper.query('reset lock_timeout');
      sweeper.release();
    }
    expect((await entryOf(member, hub)).activity_at).toEqual(before.activity_at);
    expect((await entryOf(owner, hub)).activity_at).toEqual(target);
    // The hub's next activity and sweep bring it up.
    await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [hub.id] });
    await app.owner.query('update app_private.hub_list_sweeps set not_before = now() where hub_id = $1', [hub.id]);
    await sweep();
    const latest = (await app.owner.query('select app.hub_last_activity_at($1) as at', [hub.id])).rows[0].at;
    expect((await entryOf(member, hub)).activity_at).toEqual(latest);
  });

  it('pages without listing a hub twice while activity moves hubs to the top', async () => {
    const owner = await userAtLevel(app, 4);
    const viewer = await userAtLevel(app, 4);
    const hubs: TestHub[] = [];
    for (let i = 0; i < 4; i += 1) {
      const hub = await hubWithMembers(app, owner, viewer);
      hubs.push(hub);
    }
    const [h1, h2, h3, h4] = hubs as [TestHub, TestHub, TestHub, TestHub];
    const first = await myHubs(viewer.token, '?limit=2');
    expect(first.items.map((h) => h.id)).toEqual([h4.id, h3.id]);
    // The viewer acts in a hub already listed and in one not listed yet: both go to the top.
    await createPost(app, viewer, { ...slider, visibility: 'public_hub', hubIds: [h3.id] });
    await createPost(app, viewer, { ...slider, visibility: 'public_hub', hubIds: [h1.id] });
    const second = await myHubs(viewer.token, `?limit=2&cursor=${first.nextCursor}`);
    expect(second.items.map((h) => h.id)).toEqual([h2.id]);
    expect(second.nextCursor).toBeNull();
    expect(await ids(viewer.token)).toEqual([h1.id, h3.id, h4.id, h2.id]);
  });

  it('keeps one row per (user, hub) that agrees with memberships, join requests and invitations, through concurrent changes', async () => {
    const owner = await userAtLevel(app, 4);
    const people = await Promise.all(Array.from({ length: 6 }, () => userAtLevel(app, 4)));
    const hubs = await Promise.all([0, 1, 2].map(() => createHub(app, owner)));
    const links = await Promise.all(
      hubs.map(async (hub) => (await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: owner.token })).body.data.token),
    );
    const [a, b, c, d, e, f] = people as [TestUser, TestUser, TestUser, TestUser, TestUser, TestUser];
    const [h0, h1, h2] = hubs as [TestHub, TestHub, TestHub];
    await Promise.all([
      addMember(app, h0, a),
      addMember(app, h1, a),
      addMember(app, h0, b),
      invite(app, h2, owner, c),
      addMember(app, h0, d),
    ]);
    const requested = await app.post(`/hub-invite-links/${links[1]}/join-requests`, undefined, { token: e.token });
    await Promise.all([
      app.post(`/hub-invite-links/${links[2]}/join-requests`, undefined, { token: f.token }),
      app.post(`/hubs/${h0.id}/admins`, { userId: a.id }, { token: owner.token }),
      app.delete(`/hubs/${h1.id}/membership`, { token: a.token }),
      app.post(`/hubs/${h0.id}/members/${b.id}/remove`, undefined, { token: owner.token }),
      invite(app, h0, owner, c),
      invite(app, h1, owner, d),
      app.post(`/hubs/${h1.id}/join-requests/${requested.body.data.requestId}/approve`, undefined, { token: owner.token }),
    ]);
    expect((await app.owner.query('select * from app_private.hub_list_entry_drift()')).rows).toEqual([]);

    const status = async (user: TestUser) =>
      Object.fromEntries((await myHubs(user.token)).items.map((h) => [h.id, [h.viewerStatus, h.viewerRole, h.invitationId !== null]]));
    expect(await status(a)).toEqual({ [h0.id]: ['member', 'admin', false] });
    expect(await status(b)).toEqual({});
    expect(await status(c)).toEqual({ [h0.id]: ['invited', null, true], [h2.id]: ['invited', null, true] });
    expect(await status(d)).toEqual({ [h0.id]: ['member', 'member', false], [h1.id]: ['invited', null, true] });
    expect(await status(e)).toEqual({ [h1.id]: ['member', 'member', false] });
    expect(await status(f)).toEqual({ [h2.id]: ['pending_admin_approval', null, false] });

    // An invitation that expires by the clock leaves the list at once, and its row goes with the next sweep.
    await app.owner.query(
      `update app_private.hub_list_entries set expires_at = now() - interval '1 second' where user_id = $1 and hub_id = $2`,
      [c.id, h2.id],
    );
    expect(Object.keys(await status(c))).toEqual([h0.id]);
    // Activity in the hub queues a sweep, which deletes the expired row.
    await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [h2.id] });
    await app.owner.query('update app_private.hub_list_sweeps set not_before = now() where hub_id = $1', [h2.id]);
    await sweep();
    expect(await entryOf(c, h2)).toBeUndefined();
    await app.owner.query(`update app.hub_invitations set expires_at = now() - interval '1 second' where invitee_id = $1 and hub_id = $2`, [
      c.id,
      h2.id,
    ]);
    expect((await app.owner.query('select * from app_private.hub_list_entry_drift()')).rows).toEqual([]);
  });
});
