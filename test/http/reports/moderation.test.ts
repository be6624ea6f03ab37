// Moderation of reports (contract 14, db/sql/reports.sql): reports with a state and a snapshot, one
// open report per reporter and target, and the actions through the real `npm run admin` (a child
// process on the test database) and through internal GraphQL with the admin token: each resolves
// its target's open reports and appends to the moderation log. A removed post vanishes and its
// author gets post_removed; a suspended user is signed out, refused at sign-in and refresh (403
// ACCOUNT_SUSPENDED) and hidden like a deleted account until unsuspended.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalGraphql, runAdmin } from '../../helpers/admin.ts';
import { startTestApp, testOtpCode, type TestApp } from '../../helpers/app.ts';
import { invite } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { hubWithMembers } from '../../helpers/worlds.ts';

const adminToken = 'test-admin-token-moderation-0123456789';
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ ADMIN_API_TOKEN: adminToken });
}, 60_000);
afterAll(() => app.close());

const admin = (args: string[]) => runAdmin(args, { DATABASE_URL: app.ownerUrl });
const graphql = (query: string, token: string, variables: Record<string, unknown> = {}) =>
  internalGraphql(app.url, query, token, variables);

const report = (user: TestUser, kind: 'posts' | 'users' | 'hubs', id: string, reason = 'spam') =>
  app.post(`/reports/${kind}/${id}`, { reason, details: 'see for yourself' }, { token: user.token });

async function openGroups({ npm = false } = {}): Promise<any[]> {
  const list = await runAdmin(['reports', 'list', '--json'], { DATABASE_URL: app.ownerUrl }, { npm });
  expect(list.code, list.stderr).toBe(0);
  return JSON.parse(list.stdout);
}

async function signIn(user: TestUser) {
  const phone = user.phone as { phoneCountryCode: string; phoneNumber: string };
  // A refused sign-in keeps its code (the refusal rolls the verification back), and a new code
  // waits 60 s: then the code sent before is the one to use.
  const request = await app.post('/auth/otp/request', { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber });
  expect([200, 429]).toContain(request.status);
  return app.post('/auth/otp/verify', { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber, code: testOtpCode });
}

describe('reports', () => {
  it('keep one open report per reporter and target, with a snapshot that outlives the content', async () => {
    const [author, reporter, other] = await Promise.all([userAtLevel(app, 3), userAtLevel(app, 2), userAtLevel(app, 2)]);
    const post = await createPost(app, author, { thoughtText: 'something reportable' });
    const first = await report(reporter, 'posts', post.id);
    expect(first.status).toBe(201);
    const again = await report(reporter, 'posts', post.id, 'hate');
    expect(again.status).toBe(201);
    expect(again.body.data.reportId).toBe(first.body.data.reportId);
    const second = await report(other, 'posts', post.id, 'hate');
    expect(second.body.data.reportId).not.toBe(first.body.data.reportId);
    // Concurrent repeats of one reporter answer one id.
    const racing = await Promise.all(Array.from({ length: 5 }, () => report(other, 'users', author.id)));
    expect(new Set(racing.map((r) => r.body.data.reportId)).size).toBe(1);

    expect((await app.delete(`/posts/${post.id}`, { token: author.token })).status).toBe(200);
    const groups = await openGroups({ npm: true }); // as an operator types it
    const group = groups.find((g) => g.targetId === post.id);
    expect(group).toEqual({
      targetType: 'post',
      targetId: post.id,
      reportIds: [first.body.data.reportId, second.body.data.reportId],
      count: 2,
      reasons: ['hate', 'spam'],
      snapshot: expect.objectContaining({ authorId: author.id, authorUsername: author.username, thoughtText: 'something reportable' }),
    });
    expect(groups.find((g) => g.targetId === author.id)).toMatchObject({
      targetType: 'user',
      count: 1,
      snapshot: { username: author.username },
    });
    // Reporting something one cannot see stays a 404, changing nothing.
    expect((await report(other, 'posts', post.id)).status).toBe(404);
  });

  it('resolve, dismiss and reopen through the CLI; unknown ids and bad arguments exit 1 naming the problem', async () => {
    const [target, reporter] = await Promise.all([userAtLevel(app, 2), userAtLevel(app, 2)]);
    const reportId = (await report(reporter, 'users', target.id)).body.data.reportId;
    for (const [verb, state] of [
      ['dismiss', 'dismissed'],
      ['reopen', 'open'],
      ['resolve', 'resolved'],
    ] as const) {
      const result = await admin(['reports', verb, reportId, '--json']);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({
        action: `${verb}_report`,
        targetType: 'user',
        targetId: target.id,
        reportIds: [reportId],
      });
      expect((await app.owner.query('select state::text from app.reports where id = $1', [reportId])).rows[0].state).toBe(state);
    }
    // Once resolved, the same reporter may file again (a new open report).
    const later = await report(reporter, 'users', target.id);
    expect(later.body.data.reportId).not.toBe(reportId);

    const unknownReport = await admin(['reports', 'resolve', '00000000-0000-4000-8000-000000000000']);
    expect(unknownReport).toMatchObject({ code: 1, stdout: '' });
    expect(unknownReport.stderr.trim().split('\n')).toEqual(['no report with the id "00000000-0000-4000-8000-000000000000"']);
    // Each names its problem; a missing or unknown argument adds the usage line.
    const usage = expect.stringMatching(/^usage: npm run admin -- reports list /);
    const logged = async () => (await app.owner.query('select count(*)::int as n from app.moderation_log')).rows[0].n as number;
    const loggedBefore = await logged();
    for (const [args, lines] of [
      [
        ['reports', 'resolve'],
        ['missing report id', usage],
      ],
      [['posts', 'remove', later.body.data.reportId], ['--reason <text> is required']],
      [['users', 'suspend', target.id, '--days', 'x', '--reason', 'r'], ['--days must be a whole number from 1 to 36500']],
      [['hubs', 'remove', 'not-an-id', '--reason', 'r'], ['no hub with the id "not-an-id"']],
      // The reason's and the days' rules are the SQL functions' (VALIDATION_FAILED), named per command.
      [['posts', 'remove', later.body.data.reportId, '--reason', '   '], ['--reason must be 1 to 1000 characters, not blank']],
      [['hubs', 'remove', target.id, '--reason', 'x'.repeat(1001)], ['--reason must be 1 to 1000 characters, not blank']],
      [
        ['users', 'suspend', target.id, '--days', '36501', '--reason', 'r'],
        ['--reason must be 1 to 1000 characters, not blank, and --days a whole number from 1 to 36500'],
      ],
      [['reports', 'explode'], [usage]],
    ] as const) {
      const result = await admin([...args]);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n'), args.join(' ')).toEqual(lines);
    }
    // None of the refused commands changed anything.
    expect(await logged()).toBe(loggedBefore);
    expect(
      (await app.owner.query('select count(*)::int as n from app_private.account_states where user_id = $1', [target.id])).rows[0].n,
    ).toBe(0);
    const unknownUser = await admin(['users', 'suspend', '00000000-0000-4000-8000-000000000000', '--reason', 'nobody']);
    expect(unknownUser.code).toBe(1);
    expect(unknownUser.stderr.trim()).toBe('no user with the id "00000000-0000-4000-8000-000000000000"');
    expect(
      (
        await app.owner.query(
          `select count(*)::int as n from app_private.account_states where user_id = '00000000-0000-4000-8000-000000000000'`,
        )
      ).rows[0].n,
    ).toBe(0);
  });
});

describe('removing a post', () => {
  it('hides it like a deleted post, tells its author with post_removed, resolves its reports, and restores', async () => {
    const [author, reader] = await Promise.all([userAtLevel(app, 3), userAtLevel(app, 2)]);
    const post = await createPost(app, author, { thoughtText: 'to be removed' });
    const reportId = (await report(reader, 'posts', post.id)).body.data.reportId;

    const removed = await admin(['posts', 'remove', post.id, '--reason', 'spam ring', '--json']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout)).toEqual({
      action: 'remove_post',
      targetType: 'post',
      targetId: post.id,
      reason: 'spam ring',
      reportIds: [reportId],
      createdAt: expect.any(String),
    });
    expect((await app.get(`/posts/${post.id}`, { token: reader.token })).status).toBe(404);
    expect((await app.get(`/users/${author.id}/feed`, { token: reader.token })).body.data.items).toEqual([]);
    const notifications = (await app.get('/notifications', { token: author.token })).body.data.items;
    expect(notifications.filter((n: { type: string }) => n.type === 'post_removed')).toEqual([
      expect.objectContaining({ type: 'post_removed', postId: post.id, actor: null }),
    ]);
    expect((await app.owner.query('select state::text from app.reports where id = $1', [reportId])).rows[0].state).toBe('resolved');
    expect((await openGroups()).some((g) => g.targetId === post.id)).toBe(false);

    const restored = await admin(['posts', 'restore', post.id]);
    expect(restored.code, restored.stderr).toBe(0);
    expect((await app.get(`/posts/${post.id}`, { token: reader.token })).status).toBe(200);
    expect((await app.owner.query('select * from app_private.counter_drift()')).rows).toEqual([]);
    expect((await app.owner.query('select * from app_private.unread_counter_drift()')).rows).toEqual([]);

    const log = await admin(['moderation-log', '--json']);
    expect(log.code).toBe(0);
    const entries = JSON.parse(log.stdout).filter((e: { targetId: string }) => e.targetId === post.id);
    expect(entries.map((e: { action: string }) => e.action)).toEqual(['restore_post', 'remove_post']);
    expect(Object.keys(entries[0]).sort()).toEqual(['action', 'createdAt', 'reason', 'reportIds', 'targetId', 'targetType']);
  });
});

describe('suspending a user', () => {
  it('signs them out, refuses sign-in and refresh with 403 ACCOUNT_SUSPENDED, hides them, and unsuspending brings all back', async () => {
    const [user, viewer, reporter] = await Promise.all([userAtLevel(app, 4), userAtLevel(app, 4), userAtLevel(app, 2)]);
    const hub = await hubWithMembers(app, viewer, user);
    const post = await createPost(app, user);
    expect((await app.post(`/users/${user.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
    expect(
      (
        await app.post(
          '/users/me/push-devices',
          { provider: 'fcm', token: `suspended-${user.id}`, platform: 'android' },
          { token: user.token },
        )
      ).status,
    ).toBe(201);
    const reportId = (await report(reporter, 'users', user.id)).body.data.reportId;
    const memberCount = async () => (await app.get(`/hubs/${hub.id}`, { token: viewer.token })).body.data.memberCount;
    const members = await memberCount();

    const suspended = await admin(['users', 'suspend', user.id, '--days', '3', '--reason', 'harassment', '--json']);
    expect(suspended.code, suspended.stderr).toBe(0);
    expect(JSON.parse(suspended.stdout)).toMatchObject({ action: 'suspend_user', targetId: user.id, reportIds: [reportId] });

    expect((await app.get('/users/me/profile', { token: user.token })).status).toBe(401);
    const refresh = await app.post('/auth/session/refresh', { refreshToken: user.refreshToken });
    expect(refresh.status).toBe(403);
    expect(refresh.body.error.code).toBe('ACCOUNT_SUSPENDED');
    const signIn1 = await signIn(user);
    expect(signIn1.status).toBe(403);
    expect(signIn1.body.error.code).toBe('ACCOUNT_SUSPENDED');
    expect((await app.owner.query('select count(*)::int as n from app.push_devices where user_id = $1', [user.id])).rows[0].n).toBe(0);
    expect((await app.get(`/users/by-username/${user.username}`, { token: viewer.token })).status).toBe(404);
    expect((await app.get(`/posts/${post.id}`, { token: viewer.token })).status).toBe(404);
    expect((await app.get(`/search/users?q=${user.username}`, { token: viewer.token })).body.data.items).toEqual([]);
    expect(await memberCount()).toBe(members - 1);
    // The end of the term is scheduled.
    const job = (await app.owner.query(`select run_at from graphile_worker.jobs where key = $1`, [`lift_suspension:${user.id}`])).rows[0];
    expect(Math.abs(new Date(job.run_at).getTime() - (Date.now() + 3 * 86_400_000))).toBeLessThan(120_000);

    const lifted = await admin(['users', 'unsuspend', user.id]);
    expect(lifted.code, lifted.stderr).toBe(0);
    const back = await signIn(user);
    expect(back.status).toBe(200);
    expect(back.body.data.user.restored).toBeUndefined();
    expect((await app.get(`/users/by-username/${user.username}`, { token: viewer.token })).status).toBe(200);
    expect((await app.get(`/posts/${post.id}`, { token: viewer.token })).status).toBe(200);
    expect(await memberCount()).toBe(members);
    expect(
      (await app.owner.query(`select count(*)::int as n from graphile_worker.jobs where key = $1`, [`lift_suspension:${user.id}`])).rows[0]
        .n,
    ).toBe(0);
    expect((await app.owner.query('select * from app_private.counter_drift()')).rows).toEqual([]);
  });

  it('ends a suspension for a time at its term (the worker task’s function), and one for good only by unsuspending', async () => {
    const user = await userAtLevel(app, 3);
    expect((await admin(['users', 'suspend', user.id, '--days', '1', '--reason', 'cool off'])).code).toBe(0);
    expect((await app.owner.query('select app_private.lift_suspension($1) as lifted', [user.id])).rows[0].lifted).toBe(false);
    await app.owner.query(`update app_private.account_states set suspended_until = now() - interval '1 second' where user_id = $1`, [
      user.id,
    ]);
    expect((await app.owner.query('select app_private.lift_suspension($1) as lifted', [user.id])).rows[0].lifted).toBe(true);
    expect((await signIn(user)).status).toBe(200);

    expect((await admin(['users', 'suspend', user.id, '--reason', 'for good'])).code).toBe(0);
    expect(
      (await app.owner.query('select suspended_until from app_private.account_states where user_id = $1', [user.id])).rows[0]
        .suspended_until,
    ).toBeNull();
    expect((await app.owner.query('select app_private.lift_suspension($1) as lifted', [user.id])).rows[0].lifted).toBe(false);
    expect((await signIn(user)).body.error.code).toBe('ACCOUNT_SUSPENDED');
  });
});

describe('removing a hub', () => {
  it('hides it from everyone, ends its memberships and resolves its reports', async () => {
    const [owner, member, reporter, invitee, requester, linkUser] = (await Promise.all(
      Array.from({ length: 6 }, () => userAtLevel(app, 4)),
    )) as [TestUser, TestUser, TestUser, TestUser, TestUser, TestUser];
    const hub = await hubWithMembers(app, owner, member);
    await invite(app, hub, owner, invitee);
    const link = (await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: owner.token })).body.data.token as string;
    expect((await app.post(`/hub-invite-links/${link}/join-requests`, undefined, { token: requester.token })).status).toBe(201);
    const reportId = (await report(reporter, 'hubs', hub.id)).body.data.reportId;
    const removed = await admin(['hubs', 'remove', hub.id, '--reason', 'illegal content', '--json']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout)).toMatchObject({ action: 'remove_hub', targetType: 'hub', targetId: hub.id, reportIds: [reportId] });
    for (const user of [owner, member, reporter]) {
      const response = await app.get(`/hubs/${hub.id}`, { token: user.token });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('HUB_NOT_FOUND');
    }
    expect((await app.get('/users/me/hubs', { token: member.token })).body.data.items).toEqual([]);
    // Every membership ends; pending invitations, invite links and join requests stop working.
    const open = await app.owner.query(
      `select (select count(*) from app.hub_memberships where hub_id = $1)::int as memberships,
              (select count(*) from app.hub_invitations where hub_id = $1 and status = 'invited' and expires_at > now())::int as invitations,
              (select count(*) from app.hub_invite_links where hub_id = $1 and expires_at > now())::int as links,
              (select count(*) from app.hub_join_requests where hub_id = $1 and status = 'pending')::int as requests`,
      [hub.id],
    );
    expect(open.rows[0]).toEqual({ memberships: 0, invitations: 0, links: 0, requests: 0 });
    const late = await app.post(`/hub-invite-links/${link}/join-requests`, undefined, { token: linkUser.token });
    expect(late.status).toBe(410);
    expect(late.body.error.code).toBe('INVITE_LINK_EXPIRED');
    expect((await report(reporter, 'hubs', hub.id)).status).toBe(404);
    expect((await app.owner.query('select * from app_private.counter_drift()')).rows).toEqual([]);
  });
});

describe('internal GraphQL', () => {
  it('runs the same actions as mutations for the admin token only, and lists the queue', async () => {
    const [user, reporter] = await Promise.all([userAtLevel(app, 3), userAtLevel(app, 2)]);
    const post = await createPost(app, user);
    const reportId = (await report(reporter, 'posts', post.id)).body.data.reportId;
    const queue = await graphql('{ openReportGroups { nodes { targetType targetId reportIds count } } }', adminToken);
    expect(queue.errors).toBeUndefined();
    expect(queue.data.openReportGroups.nodes).toContainEqual({ targetType: 'post', targetId: post.id, reportIds: [reportId], count: 1 });

    const asUser = await graphql(
      'mutation($id: UUID!) { removePost(input: { pPostId: $id, pReason: "x" }) { clientMutationId } }',
      user.token,
      { id: post.id },
    );
    // The user schema has no mutations at all: refused before anything runs.
    expect(asUser.errors?.map((e: { message: string }) => e.message)).toEqual(['This schema has no mutation operations.']);
    expect((await app.get(`/posts/${post.id}`, { token: reporter.token })).status).toBe(200);

    const removed = await graphql(
      'mutation($id: UUID!) { removePost(input: { pPostId: $id, pReason: "by graphql" }) { result { action targetId reportIds actor } } }',
      adminToken,
      { id: post.id },
    );
    expect(removed.errors).toBeUndefined();
    expect(removed.data.removePost.result).toEqual({
      action: 'remove_post',
      targetId: post.id,
      reportIds: [reportId],
      actor: 'admin token',
    });
    expect((await app.get(`/posts/${post.id}`, { token: reporter.token })).status).toBe(404);

    const suspended = await graphql(
      'mutation($id: UUID!) { suspendUser(input: { pUserId: $id, pDays: null, pReason: "by graphql" }) { result { action } } }',
      adminToken,
      { id: user.id },
    );
    expect(suspended.errors).toBeUndefined();
    expect((await signIn(user)).body.error.code).toBe('ACCOUNT_SUSPENDED');
    const log = await graphql('{ allModerationLogs(orderBy: CREATED_AT_DESC, first: 2) { nodes { action targetId actor } } }', adminToken);
    expect(log.errors).toBeUndefined();
    expect(log.data.allModerationLogs.nodes[0]).toEqual({ action: 'suspend_user', targetId: user.id, actor: 'admin token' });
    expect(
      (await graphql('{ allModerationLogs { nodes { action } } }', reporter.token)).errors?.map((e: { message: string }) => e.message),
    ).toEqual(['Cannot query field "allModerationLogs" on type "Query".']);
    const unknown = await graphql(
      'mutation { unsuspendUser(input: { pUserId: "00000000-0000-4000-8000-000000000000" }) { clientMutationId } }',
      adminToken,
    );
    expect(unknown.errors?.[0]?.message).toBe('User does not exist.');
  });
});

describe('the moderation log', () => {
  it('is append-only, for the owner too', async () => {
    const user = await userAtLevel(app, 2);
    expect((await admin(['users', 'suspend', user.id, '--reason', 'log me'])).code).toBe(0);
    await expect(app.owner.query(`update app.moderation_log set reason = 'changed' where target_id = $1`, [user.id])).rejects.toThrow(
      /append-only/,
    );
    await expect(app.owner.query('delete from app.moderation_log where target_id = $1', [user.id])).rejects.toThrow(/append-only/);
    const entry = (await app.owner.query('select actor, reason from app.moderation_log where target_id = $1', [user.id])).rows[0];
    expect(entry).toEqual({ actor: expect.stringMatching(/^cli:/), reason: 'log me' });
  });
});
