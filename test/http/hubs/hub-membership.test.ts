// The membership state machine (spec part 3, 6.2; contract section 8): every transition, each
// wrong-state attempt, each role check, and who is notified.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, invite, storedNotifications, type TestHub } from '../../helpers/hubs.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

/** A hub with an owner (super_admin), an admin and a plain member. */
async function hubWithStaff(): Promise<{ hub: TestHub; owner: TestUser; admin: TestUser; member: TestUser }> {
  const owner = await userAtLevel(app, 4);
  const hub = await createHub(app, owner);
  const [admin, member] = [await userAtLevel(app, 4), await userAtLevel(app, 4)];
  await addMember(app, hub, admin);
  await addMember(app, hub, member);
  await app.post(`/hubs/${hub.id}/admins`, { userId: admin.id }, { token: owner.token });
  await app.runJobs();
  return { hub, owner, admin, member };
}

async function joinRequestVia(hub: TestHub, admin: TestUser, requester: TestUser): Promise<string> {
  const link = await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: admin.token });
  const request = await app.post(`/hub-invite-links/${link.body.data.token}/join-requests`, undefined, { token: requester.token });
  expect(request.status).toBe(201);
  return request.body.data.requestId;
}

const types = async (user: TestUser, type: string) => (await storedNotifications(app, user.id, type)).length;

describe('admin invitation → accept → active member', () => {
  it('joins at once and tells the other active members (not the joiner)', async () => {
    const { hub, owner, admin, member } = await hubWithStaff();
    const joiner = await userAtLevel(app, 4);
    const invitationId = await invite(app, hub, admin, joiner);
    expect(await storedNotifications(app, joiner.id, 'hub_invite_received')).toEqual([
      { type: 'hub_invite_received', actor_id: admin.id, hub_id: null, invitation_id: invitationId, join_request_id: null },
    ]);
    const before = await Promise.all([owner, admin, member].map((u) => types(u, 'hub_member_joined')));
    const accept = await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: joiner.token });
    expect(accept.status).toBe(200);
    expect(accept.body.data).toEqual({ hubId: hub.id, viewerStatus: 'member' });
    await app.runJobs();
    const after = await Promise.all([owner, admin, member].map((u) => types(u, 'hub_member_joined')));
    expect(after).toEqual(before.map((n) => n + 1));
    expect(await types(joiner, 'hub_member_joined')).toBe(0);
    const joined = await storedNotifications(app, owner.id, 'hub_member_joined');
    expect(joined.at(-1)).toMatchObject({ actor_id: joiner.id, hub_id: hub.id });
    expect((await app.get(`/hubs/${hub.id}`, { token: joiner.token })).body.data).toMatchObject({
      viewerStatus: 'member',
      viewerRole: 'member',
      memberCount: 4,
    });
  });

  it('refuses wrong states: repeat accept, accept after decline, someone else, expired, already a member', async () => {
    const { hub, owner, member } = await hubWithStaff();
    const [invitee, other, late] = [await userAtLevel(app, 4), await userAtLevel(app, 4), await userAtLevel(app, 4)];
    const invitationId = await invite(app, hub, owner, invitee);
    const notMine = await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: other.token });
    expect(notMine.status).toBe(404);
    expect(notMine.body.error.code).toBe('INVITATION_NOT_FOUND');
    await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: invitee.token });
    const again = await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: invitee.token });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('INVITATION_NOT_PENDING');

    const declined = await invite(app, hub, owner, other);
    const decline = await app.post(`/hub-invitations/${declined}/decline`, undefined, { token: other.token });
    expect(decline.body.data).toEqual({ hubId: hub.id, status: 'declined' });
    expect((await app.post(`/hub-invitations/${declined}/accept`, undefined, { token: other.token })).body.error.code).toBe(
      'INVITATION_NOT_PENDING',
    );
    expect((await app.post(`/hub-invitations/${declined}/decline`, undefined, { token: other.token })).body.error.code).toBe(
      'INVITATION_NOT_PENDING',
    );

    const expiring = await invite(app, hub, owner, late);
    await app.owner.query(`update app.hub_invitations set expires_at = now() - interval '1 second' where id = $1`, [expiring]);
    const expired = await app.post(`/hub-invitations/${expiring}/accept`, undefined, { token: late.token });
    expect(expired.status).toBe(410);
    expect(expired.body.error).toEqual({ code: 'INVITATION_EXPIRED', message: 'Invitation has expired.', details: {} });
    const list = await app.get(`/hubs/${hub.id}/invitations`, { token: member.token });
    expect(list.body.data.items.find((i: any) => i.id === expiring).status).toBe('expired');
    expect(list.body.data.items.find((i: any) => i.id === declined).status).toBe('declined');
    expect(list.body.data.items.find((i: any) => i.id === invitationId).status).toBe('accepted');

    // An invitation to someone who joined meanwhile.
    const twice = await userAtLevel(app, 4);
    const first = await invite(app, hub, member, twice);
    await addMember(app, hub, twice);
    expect((await app.post(`/hub-invitations/${first}/accept`, undefined, { token: twice.token })).body.error.code).toBe(
      'ALREADY_HUB_MEMBER',
    );
    expect((await app.post('/hub-invitations/not-an-id/accept', undefined, { token: twice.token })).status).toBe(404);
  });
});

describe('member invitation → accept → pending admin approval → approve / reject', () => {
  it('waits for approval, tells admins only, then approval makes a member and tells everyone', async () => {
    const { hub, owner, admin, member } = await hubWithStaff();
    const joiner = await userAtLevel(app, 4);
    const invitationId = await invite(app, hub, member, joiner);
    const list = await app.get(`/hubs/${hub.id}/invitations`, { token: member.token });
    expect(list.body.data.items[0]).toMatchObject({ id: invitationId, status: 'invited', invitedBy: { id: member.id } });
    const accept = await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: joiner.token });
    expect(accept.body.data).toEqual({ hubId: hub.id, viewerStatus: 'pending_admin_approval' });
    await app.runJobs();
    expect(await types(owner, 'hub_join_request_created')).toBe(1);
    expect(await types(admin, 'hub_join_request_created')).toBe(1);
    expect(await types(member, 'hub_join_request_created')).toBe(0);

    const requests = await app.get(`/hubs/${hub.id}/join-requests`, { token: admin.token });
    expect(requests.body.data.items).toEqual([
      {
        id: expect.any(String),
        user: expect.objectContaining({ id: joiner.id }),
        source: 'member_invitation',
        createdAt: expect.any(String),
      },
    ]);
    const requestId = requests.body.data.items[0].id;
    expect((await app.get(`/hubs/${hub.id}/join-requests`, { token: member.token })).body.error.code).toBe('HUB_ADMIN_REQUIRED');
    expect((await app.post(`/hubs/${hub.id}/join-requests/${requestId}/approve`, undefined, { token: member.token })).body.error.code).toBe(
      'HUB_ADMIN_REQUIRED',
    );

    const joinedBefore = await Promise.all([owner, admin, member].map((u) => storedNotifications(app, u.id, 'hub_member_joined')));
    const approve = await app.post(`/hubs/${hub.id}/join-requests/${requestId}/approve`, undefined, { token: admin.token });
    expect(approve.body.data).toEqual({ requestId, status: 'approved' });
    await app.runJobs();
    expect(await storedNotifications(app, joiner.id, 'hub_join_request_approved')).toEqual([
      { type: 'hub_join_request_approved', actor_id: admin.id, hub_id: hub.id, invitation_id: null, join_request_id: requestId },
    ]);
    // Each member, the approving admin included, is told once that the joiner joined (a doubled
    // fan-out would show two), and the joiner is its actor, not the admin who approved.
    const joinedNow = await Promise.all([owner, admin, member].map((u) => storedNotifications(app, u.id, 'hub_member_joined')));
    expect(joinedNow.map((rows, i) => rows.slice(joinedBefore[i]!.length))).toEqual(
      [owner, admin, member].map(() => [
        { type: 'hub_member_joined', actor_id: joiner.id, hub_id: hub.id, invitation_id: null, join_request_id: null },
      ]),
    );
    expect(await types(joiner, 'hub_member_joined')).toBe(0);
    const again = await app.post(`/hubs/${hub.id}/join-requests/${requestId}/reject`, undefined, { token: owner.token });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('JOIN_REQUEST_NOT_PENDING');
  });

  it('rejects: the requester is told (globally) and stays out', async () => {
    const { hub, admin } = await hubWithStaff();
    const requester = await userAtLevel(app, 4);
    const requestId = await joinRequestVia(hub, admin, requester);
    const reject = await app.post(`/hubs/${hub.id}/join-requests/${requestId}/reject`, undefined, { token: admin.token });
    expect(reject.body.data).toEqual({ requestId, status: 'rejected' });
    expect(await storedNotifications(app, requester.id, 'hub_join_request_rejected')).toEqual([
      { type: 'hub_join_request_rejected', actor_id: admin.id, hub_id: null, invitation_id: null, join_request_id: requestId },
    ]);
    expect((await app.get(`/hubs/${hub.id}`, { token: requester.token })).body.data.viewerStatus).toBeNull();
    expect((await app.post(`/hubs/${hub.id}/join-requests/${requestId}/approve`, undefined, { token: admin.token })).body.error.code).toBe(
      'JOIN_REQUEST_NOT_PENDING',
    );
    expect(
      (await app.post(`/hubs/${hub.id}/join-requests/00000000-0000-4000-8000-000000000000/approve`, undefined, { token: admin.token })).body
        .error.code,
    ).toBe('JOIN_REQUEST_NOT_FOUND');
  });

  it('approves exactly once when two admins approve at the same moment', async () => {
    const { hub, owner, admin } = await hubWithStaff();
    const requester = await userAtLevel(app, 4);
    const requestId = await joinRequestVia(hub, admin, requester);
    await app.runJobs();
    await app.owner.query('delete from graphile_worker._private_jobs');
    const results = await Promise.all(
      [owner, admin].map((u) => app.post(`/hubs/${hub.id}/join-requests/${requestId}/approve`, undefined, { token: u.token })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.status === 409)?.body.error.code).toBe('JOIN_REQUEST_NOT_PENDING');
    const jobs = await app.owner.query(
      `select payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'hub_notification_fanout'`,
    );
    expect(jobs.rows.map((r) => r.payload.type)).toEqual(['hub_member_joined']);
    expect(await types(requester, 'hub_join_request_approved')).toBe(1);
    const members = await app.owner.query('select count(*)::int as n from app.hub_memberships where hub_id = $1 and user_id = $2', [
      hub.id,
      requester.id,
    ]);
    expect(members.rows[0].n).toBe(1);
  });
});

describe('invite links', () => {
  it('previews for any signed-in user, asks to join (never joins), and expires', async () => {
    const { hub, owner, admin, member } = await hubWithStaff();
    expect((await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: member.token })).body.error.code).toBe('HUB_ADMIN_REQUIRED');
    const link = await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: admin.token });
    expect(link.status).toBe(201);
    const { token, url, expiresAt } = link.body.data;
    expect(url).toBe(`https://opinion.example/hub-invite-links/${token}`);
    expect(Math.round((Date.parse(expiresAt) - Date.now()) / 86_400_000)).toBe(7);

    const anonymous = await userAtLevel(app, 1);
    const preview = await app.get(`/hub-invite-links/${token}`, { token: anonymous.token });
    expect(preview.body.data).toEqual({
      hubId: hub.id,
      name: expect.any(String),
      description: '',
      profilePhotoUrl: expect.any(String),
      memberCount: 3,
    });
    expect((await app.post(`/hub-invite-links/${token}/join-requests`, undefined, { token: anonymous.token })).body.error.code).toBe(
      'PROFILE_BASICS_REQUIRED',
    );

    const requester = await userAtLevel(app, 4);
    const first = await app.post(`/hub-invite-links/${token}/join-requests`, undefined, { token: requester.token });
    expect(first.body.data).toEqual({ requestId: expect.any(String), hubId: hub.id, viewerStatus: 'pending_admin_approval' });
    const repeat = await app.post(`/hub-invite-links/${token}/join-requests`, undefined, { token: requester.token });
    expect(repeat.body.data.requestId).toBe(first.body.data.requestId);
    await app.runJobs();
    expect(await types(owner, 'hub_join_request_created')).toBe(1);
    expect(await types(member, 'hub_join_request_created')).toBe(0);
    expect((await app.post(`/hub-invite-links/${token}/join-requests`, undefined, { token: member.token })).body.error.code).toBe(
      'ALREADY_HUB_MEMBER',
    );

    expect((await app.get('/hub-invite-links/unknown-token', { token: requester.token })).body.error.code).toBe('INVITE_LINK_NOT_FOUND');
    await app.owner.query(`update app.hub_invite_links set expires_at = now() - interval '1 second' where token = $1`, [token]);
    const expired = await app.get(`/hub-invite-links/${token}`, { token: requester.token });
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('INVITE_LINK_EXPIRED');
    expect(
      (await app.post(`/hub-invite-links/${token}/join-requests`, undefined, { token: (await userAtLevel(app, 4)).token })).status,
    ).toBe(410);
  });
});

describe('removal, roles and leaving', () => {
  it('removes members with hub_member_removed; only the super_admin removes admins; nobody removes the super_admin', async () => {
    const { hub, owner, admin, member } = await hubWithStaff();
    const memberRemove = await app.post(`/hubs/${hub.id}/members/${admin.id}/remove`, undefined, { token: member.token });
    expect(memberRemove.status).toBe(403);
    expect(memberRemove.body.error.code).toBe('HUB_ADMIN_REQUIRED');
    const admin2 = await userAtLevel(app, 4);
    await addMember(app, hub, admin2);
    await app.post(`/hubs/${hub.id}/admins`, { userId: admin2.id }, { token: owner.token });
    expect((await app.post(`/hubs/${hub.id}/members/${admin2.id}/remove`, undefined, { token: admin.token })).body.error.code).toBe(
      'FORBIDDEN',
    );
    const superAdmin = await app.post(`/hubs/${hub.id}/members/${owner.id}/remove`, undefined, { token: admin.token });
    expect(superAdmin.status).toBe(409);
    expect(superAdmin.body.error.code).toBe('SUPER_ADMIN_CANNOT_LEAVE');

    const removed = await app.post(`/hubs/${hub.id}/members/${member.id}/remove`, undefined, { token: admin.token });
    expect(removed.body.data).toEqual({ removed: true });
    expect(await storedNotifications(app, member.id, 'hub_member_removed')).toEqual([
      { type: 'hub_member_removed', actor_id: admin.id, hub_id: null, invitation_id: null, join_request_id: null },
    ]);
    expect((await app.get(`/hubs/${hub.id}`, { token: member.token })).body.data).toMatchObject({ viewerStatus: null, memberCount: 3 });
    expect((await app.post(`/hubs/${hub.id}/members/${member.id}/remove`, undefined, { token: admin.token })).body.error.code).toBe(
      'USER_NOT_FOUND',
    );
    expect((await app.post(`/hubs/${hub.id}/members/${admin2.id}/remove`, undefined, { token: owner.token })).status).toBe(200);
  });

  it('promotes and demotes (super_admin only) with hub_role_changed to the target', async () => {
    const { hub, owner, admin, member } = await hubWithStaff();
    expect(await storedNotifications(app, admin.id, 'hub_role_changed')).toEqual([
      { type: 'hub_role_changed', actor_id: owner.id, hub_id: hub.id, invitation_id: null, join_request_id: null },
    ]);
    const byAdmin = await app.post(`/hubs/${hub.id}/admins`, { userId: member.id }, { token: admin.token });
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.body.error.code).toBe('FORBIDDEN');
    expect((await app.post(`/hubs/${hub.id}/admins`, { userId: member.id }, { token: member.token })).body.error.code).toBe(
      'HUB_ADMIN_REQUIRED',
    );
    const promote = await app.post(`/hubs/${hub.id}/admins`, { userId: member.id }, { token: owner.token });
    expect(promote.body.data).toEqual({ userId: member.id, role: 'admin' });
    expect(await types(member, 'hub_role_changed')).toBe(1);
    const admins = await app.get(`/hubs/${hub.id}/admins`, { token: member.token });
    expect(admins.body.data.items.map((i: any) => [i.id, i.role])).toEqual([
      [owner.id, 'super_admin'],
      [admin.id, 'admin'],
      [member.id, 'admin'],
    ]);
    const demote = await app.delete(`/hubs/${hub.id}/admins/${member.id}`, { token: owner.token });
    expect(demote.body.data).toEqual({ userId: member.id, role: 'member' });
    expect(await types(member, 'hub_role_changed')).toBe(2);
    expect((await app.delete(`/hubs/${hub.id}/admins/${owner.id}`, { token: owner.token })).body.error.code).toBe(
      'SUPER_ADMIN_CANNOT_LEAVE',
    );
    const outsider = await userAtLevel(app, 4);
    expect((await app.post(`/hubs/${hub.id}/admins`, { userId: outsider.id }, { token: owner.token })).body.error.code).toBe(
      'USER_NOT_FOUND',
    );
  });

  it('lets members leave, but not the super_admin; mute never silences membership events', async () => {
    const { hub, owner, member } = await hubWithStaff();
    await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: true }, { token: owner.token });
    const leave = await app.delete(`/hubs/${hub.id}/membership`, { token: member.token });
    expect(leave.body.data).toEqual({ left: true });
    expect((await app.delete(`/hubs/${hub.id}/membership`, { token: member.token })).body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    const ownerLeave = await app.delete(`/hubs/${hub.id}/membership`, { token: owner.token });
    expect(ownerLeave.status).toBe(409);
    expect(ownerLeave.body.error.code).toBe('SUPER_ADMIN_CANNOT_LEAVE');
    const before = await types(owner, 'hub_member_joined');
    await addMember(app, hub, await userAtLevel(app, 4));
    await app.runJobs();
    expect(await types(owner, 'hub_member_joined')).toBe(before + 1);
  });

  it('needs a relationship to invite: outsiders get HUB_MEMBERSHIP_REQUIRED', async () => {
    const { hub } = await hubWithStaff();
    const [outsider, target] = [await userAtLevel(app, 4), await userAtLevel(app, 4)];
    const response = await app.post(
      `/hubs/${hub.id}/invitations`,
      { invitees: [{ phoneCountryCode: '+1', phoneNumber: (target.phone as any).phoneNumber }] },
      { token: outsider.token },
    );
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    expect((await app.post(`/hubs/${hub.id}/invitations`, { invitees: [] }, { token: outsider.token })).status).toBe(422);
  });
});

describe('GET /hubs/{hubId}/members', () => {
  it('projects phone numbers between active members only; invited and pending viewers get the dark preview', async () => {
    const { hub, owner, admin, member } = await hubWithStaff();
    await app.patch('/users/me/hub-profile', { displayName: 'Hub Alias' }, { token: member.token });
    const [invited, pending, outsider] = [await userAtLevel(app, 4), await userAtLevel(app, 4), await userAtLevel(app, 4)];
    await invite(app, hub, owner, invited);
    await joinRequestVia(hub, admin, pending);

    const asMember = await app.get(`/hubs/${hub.id}/members`, { token: admin.token });
    expect(asMember.body.data.items.map((i: any) => [i.id, i.phoneNumber])).toEqual([
      [owner.id, owner.phone?.e164],
      [admin.id, admin.phone?.e164],
      [member.id, member.phone?.e164],
    ]);
    expect(asMember.body.data.items[2].name).toBe('Hub Alias');
    for (const viewer of [invited, pending]) {
      const dark = await app.get(`/hubs/${hub.id}/members`, { token: viewer.token });
      expect(dark.status).toBe(200);
      expect(dark.body.data.items.map((i: any) => i.phoneNumber)).toEqual([null, null, null]);
      expect(dark.body.data.items[2].name).toBe('Test Person');
      expect(dark.text).not.toContain(owner.phone?.e164.slice(2));
    }
    const denied = await app.get(`/hubs/${hub.id}/members`, { token: outsider.token });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    expect(denied.text).not.toContain(owner.phone?.e164.slice(2));

    const admins = await app.get(`/hubs/${hub.id}/members?role=admin`, { token: member.token });
    expect(admins.body.data.items.map((i: any) => i.id)).toEqual([admin.id]);
    const searched = await app.get(`/hubs/${hub.id}/members?q=alias`, { token: owner.token });
    expect(searched.body.data.items.map((i: any) => i.id)).toEqual([member.id]);
    const page = await app.get(`/hubs/${hub.id}/members?limit=2`, { token: owner.token });
    const next = await app.get(`/hubs/${hub.id}/members?limit=2&cursor=${page.body.data.nextCursor}`, { token: owner.token });
    expect([...page.body.data.items, ...next.body.data.items].map((i: any) => i.id)).toEqual([owner.id, admin.id, member.id]);
    expect(next.body.data.nextCursor).toBeNull();
    expect((await app.get(`/hubs/${hub.id}/members?role=boss`, { token: owner.token })).status).toBe(422);
    expect((await app.get(`/hubs/${hub.id}/members?limit=101`, { token: owner.token })).status).toBe(422);
  });
});
