// Hubs: creation, reading, editing, links, settings, my hubs and hub search (spec 2.5, 4.6;
// contract section 8).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, invite, storedNotifications } from '../../helpers/hubs.ts';
import { uploadAsset } from '../../helpers/uploads.ts';
import { nextPhone, userAtLevel, verifyPhone } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('POST /hubs', () => {
  it('creates the hub with its creator as super_admin and first member, and admin invitations', async () => {
    const owner = await userAtLevel(app, 4);
    const existing = await userAtLevel(app, 4);
    const stranger = nextPhone();
    const profileAssetId = await uploadAsset(app, owner, 'hub_photo');
    const existingPhone = existing.phone as { phoneCountryCode: string; phoneNumber: string };
    const response = await app.post(
      '/hubs',
      {
        name: 'Book Club',
        profileAssetId,
        description: 'Monthly reads',
        customLink: 'Book-Club',
        initialInvitees: [
          { phoneCountryCode: existingPhone.phoneCountryCode, phoneNumber: existingPhone.phoneNumber },
          { phoneCountryCode: stranger.phoneCountryCode, phoneNumber: stranger.phoneNumber },
          { phoneCountryCode: stranger.phoneCountryCode, phoneNumber: stranger.phoneNumber },
        ],
      },
      { token: owner.token },
    );
    expect(response.status).toBe(201);
    const { hubId, role, initialInvitations } = response.body.data;
    expect(role).toBe('super_admin');
    expect(initialInvitations).toHaveLength(2);
    for (const invitation of initialInvitations) {
      expect(invitation).toMatchObject({
        requiresAdminApproval: false,
        inviteUrl: `https://opinion.example/hub-invitations/${invitation.invitationId}`,
      });
      expect(invitation.maskedPhoneNumber).toMatch(/^\+1\d•+\d{3}$/);
      expect(invitation.shareText).toContain('Book Club');
      expect(response.text).not.toContain(stranger.phoneNumber);
    }
    const hub = await app.get(`/hubs/${hubId}`, { token: owner.token });
    expect(hub.body.data).toMatchObject({
      id: hubId,
      name: 'Book Club',
      description: 'Monthly reads',
      customLink: 'book-club',
      memberCount: 1,
      activeUsers24h: 1,
      viewerStatus: 'member',
      viewerRole: 'super_admin',
    });
    expect(await fetch(hub.body.data.profilePhotoUrl).then((r) => r.status)).toBe(200);
    // The creator's public profile lists the hub for signed-in viewers, not for anonymous requests.
    const seen = await app.get(`/users/by-username/${owner.username}`, { token: existing.token });
    expect(seen.body.data.adminHubs).toEqual([{ id: hubId, name: 'Book Club', profilePhotoUrl: expect.any(String) }]);
    expect((await app.get(`/users/by-username/${owner.username}`)).body.data.adminHubs).toEqual([]);
    // The existing user is notified (globally: not a member yet); the new phone waits.
    expect(await storedNotifications(app, existing.id, 'hub_invite_received')).toEqual([
      { type: 'hub_invite_received', actor_id: owner.id, hub_id: null, invitation_id: expect.any(String), join_request_id: null },
    ]);
    const later = await verifyPhone(app, stranger);
    const attached = await storedNotifications(app, later.id, 'hub_invite_received');
    expect(attached).toHaveLength(1);
    expect(
      (await app.owner.query('select invitee_id from app.hub_invitations where id = $1', [attached[0].invitation_id])).rows[0].invitee_id,
    ).toBe(later.id);
  });

  it('reserves the custom link case-insensitively (409 HUB_LINK_TAKEN)', async () => {
    const owner = await userAtLevel(app, 4);
    await createHub(app, owner, { customLink: 'unique-link' });
    const profileAssetId = await uploadAsset(app, owner, 'hub_photo');
    const clash = await app.post('/hubs', { name: 'Another', profileAssetId, customLink: 'UNIQUE-link' }, { token: owner.token });
    expect(clash.status).toBe(409);
    expect(clash.body.error).toEqual({ code: 'HUB_LINK_TAKEN', message: 'Hub link is already taken.', details: {} });
    const { rows } = await app.owner.query(`select count(*)::int as n from app.hubs where name = 'Another'`);
    expect(rows[0].n).toBe(0);
  });

  it('validates the body, the image and the access level', async () => {
    const owner = await userAtLevel(app, 4);
    const photo = await uploadAsset(app, owner, 'hub_photo');
    const profilePhoto = await uploadAsset(app, owner, 'profile_photo');
    const phones = Array.from({ length: 51 }, (_, i) => ({ phoneCountryCode: '+1', phoneNumber: `55501${String(i).padStart(5, '0')}` }));
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'ab', profileAssetId: photo }, 'name'],
      [{ name: 'x'.repeat(61), profileAssetId: photo }, 'name'],
      [{ name: 'Valid', profileAssetId: photo, description: 'x'.repeat(1001) }, 'description'],
      [{ name: 'Valid', profileAssetId: photo, customLink: 'no spaces' }, 'customLink'],
      [{ name: 'Valid', profileAssetId: photo, customLink: 'ab' }, 'customLink'],
      [{ name: 'Valid', profileAssetId: photo, initialInvitees: [] }, 'initialInvitees'],
      [{ name: 'Valid', profileAssetId: photo, initialInvitees: phones }, 'initialInvitees'],
      [{ name: 'Valid' }, 'profileAssetId'],
      [{ name: 'Valid', profileAssetId: profilePhoto }, 'profileAssetId'],
    ];
    for (const [body, field] of cases) {
      const response = await app.post('/hubs', body, { token: owner.token });
      expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(response.body.error.details.fields, field).toHaveProperty(field);
    }
    const notReady = await userAtLevel(app, 3);
    const gate = await app.post('/hubs', { name: 'Valid', profileAssetId: photo }, { token: notReady.token });
    expect(gate.status).toBe(403);
    expect(gate.body.error.code).toBe('HUB_READINESS_REQUIRED');
    expect((await app.post('/hubs', { name: 'Valid', profileAssetId: photo })).status).toBe(401);
  });
});

describe('GET and PATCH /hubs/{hubId}', () => {
  it('shows viewerStatus and viewerRole for members, invited, pending and unrelated viewers', async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner);
    const [invited, pending, outsider] = [await userAtLevel(app, 4), await userAtLevel(app, 4), await userAtLevel(app, 4)];
    await invite(app, hub, owner, invited);
    const link = await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: owner.token });
    await app.post(`/hub-invite-links/${link.body.data.token}/join-requests`, undefined, { token: pending.token });
    const status = async (token: string) => {
      const { viewerStatus, viewerRole } = (await app.get(`/hubs/${hub.id}`, { token })).body.data;
      return [viewerStatus, viewerRole];
    };
    expect(await status(owner.token)).toEqual(['member', 'super_admin']);
    expect(await status(invited.token)).toEqual(['invited', null]);
    expect(await status(pending.token)).toEqual(['pending_admin_approval', null]);
    expect(await status(outsider.token)).toEqual([null, null]);
    expect((await app.get('/hubs/00000000-0000-4000-8000-000000000000', { token: owner.token })).body.error.code).toBe('HUB_NOT_FOUND');
  });

  it('lets admins edit name, description, image and link; others get 403', async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner, { customLink: 'old-link' });
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const edited = await app.patch(`/hubs/${hub.id}`, { name: 'Renamed Hub', description: 'New words' }, { token: owner.token });
    expect(edited.status).toBe(200);
    expect(edited.body.data).toMatchObject({ name: 'Renamed Hub', description: 'New words' });
    const denied = await app.patch(`/hubs/${hub.id}`, { name: 'Member Edit' }, { token: member.token });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('HUB_ADMIN_REQUIRED');
    expect((await app.patch(`/hubs/${hub.id}`, {}, { token: owner.token })).status).toBe(422);

    const link = await app.patch(`/hubs/${hub.id}/link`, { customLink: 'New-Link' }, { token: owner.token });
    expect(link.body.data).toEqual({ customLink: 'new-link' });
    const other = await createHub(app, owner);
    const taken = await app.patch(`/hubs/${other.id}/link`, { customLink: 'NEW-LINK' }, { token: owner.token });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('HUB_LINK_TAKEN');
    expect((await app.patch(`/hubs/${hub.id}/link`, { customLink: 'x' }, { token: owner.token })).status).toBe(422);
    expect((await app.patch(`/hubs/${hub.id}/link`, { customLink: 'member-link' }, { token: member.token })).body.error.code).toBe(
      'HUB_ADMIN_REQUIRED',
    );
  });
});

describe('notification settings', () => {
  it('reads and sets contentMuted for active members only', async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner);
    expect((await app.get(`/hubs/${hub.id}/notification-settings`, { token: owner.token })).body.data).toEqual({ contentMuted: false });
    const patched = await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: true }, { token: owner.token });
    expect(patched.body.data).toEqual({ contentMuted: true });
    expect((await app.get(`/hubs/${hub.id}/notification-settings`, { token: owner.token })).body.data).toEqual({ contentMuted: true });
    const outsider = await userAtLevel(app, 4);
    const denied = await app.get(`/hubs/${hub.id}/notification-settings`, { token: outsider.token });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    expect((await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: 'yes' }, { token: owner.token })).status).toBe(422);
  });
});

describe('GET /users/me/hubs', () => {
  it('lists active, invited (with invitationId) and pending hubs, most recent activity first', async () => {
    const user = await userAtLevel(app, 4);
    const owner = await userAtLevel(app, 4);
    const [activeHub, invitedHub, pendingHub] = [await createHub(app, owner), await createHub(app, owner), await createHub(app, owner)];
    await addMember(app, activeHub, user);
    const invitationId = await invite(app, invitedHub, owner, user);
    const link = await app.post(`/hubs/${pendingHub.id}/invite-links`, undefined, { token: owner.token });
    await app.post(`/hub-invite-links/${link.body.data.token}/join-requests`, undefined, { token: user.token });
    const response = await app.get('/users/me/hubs', { token: user.token });
    expect(response.status).toBe(200);
    const byId = Object.fromEntries(response.body.data.items.map((i: any) => [i.id, i]));
    expect(byId[activeHub.id]).toMatchObject({ viewerStatus: 'member', viewerRole: 'member', invitationId: null, memberCount: 2 });
    expect(byId[invitedHub.id]).toMatchObject({ viewerStatus: 'invited', viewerRole: null, invitationId });
    expect(byId[pendingHub.id]).toMatchObject({ viewerStatus: 'pending_admin_approval', viewerRole: null, invitationId: null });
    const times = response.body.data.items.map((i: any) => i.lastActivityAt);
    expect([...times].sort().reverse()).toEqual(times);
    const paged = await app.get('/users/me/hubs?limit=2', { token: user.token });
    const rest = await app.get(`/users/me/hubs?limit=2&cursor=${paged.body.data.nextCursor}`, { token: user.token });
    expect([...paged.body.data.items, ...rest.body.data.items].map((i: any) => i.id)).toEqual(
      response.body.data.items.map((i: any) => i.id),
    );
    expect((await app.get('/users/me/hubs?limit=51', { token: user.token })).status).toBe(422);
  });
});

describe('GET /search/hubs', () => {
  it('finds hubs by name words, lists recommended hubs for an empty q, and counts active users', async () => {
    const owner = await userAtLevel(app, 4);
    const chess = await createHub(app, owner);
    await app.patch(`/hubs/${chess.id}`, { name: 'Ñandú Chess Society' }, { token: owner.token });
    const member = await userAtLevel(app, 4);
    await addMember(app, chess, member);
    const recommended = await createHub(app, owner);
    await app.owner.query('update app.hubs set is_recommended = true where id = $1', [recommended.id]);
    const viewer = await userAtLevel(app, 4);
    const found = await app.get('/search/hubs?q=nandu', { token: viewer.token });
    expect(found.body.data.items).toEqual([{ id: chess.id, name: 'Ñandú Chess Society', activeUsers24h: 2, isRecommended: false }]);
    expect((await app.get('/search/hubs?q=CHESS', { token: viewer.token })).body.data.items.map((i: any) => i.id)).toEqual([chess.id]);
    expect((await app.get('/search/hubs?q=hess', { token: viewer.token })).body.data.items).toEqual([]);
    const empty = await app.get('/search/hubs', { token: viewer.token });
    expect(empty.body.data.items.map((i: any) => i.id)).toEqual([recommended.id]);
    expect(empty.body.data.items[0].isRecommended).toBe(true);
    expect((await app.get('/search/hubs?limit=51', { token: viewer.token })).status).toBe(422);
    expect((await app.get('/search/hubs')).status).toBe(401);
  });
});

describe('reports', () => {
  it('files reports on users and hubs, notifying nobody', async () => {
    const reporter = await userAtLevel(app, 1);
    const target = await userAtLevel(app, 4);
    const hub = await createHub(app, target);
    const before = await app.owner.query('select count(*)::int as n from app.notifications');
    const user = await app.post(`/reports/users/${target.id}`, { reason: 'spam', details: 'Buy now' }, { token: reporter.token });
    expect(user.status).toBe(201);
    expect(user.body.data).toEqual({ reportId: expect.any(String) });
    const hubReport = await app.post(`/reports/hubs/${hub.id}`, { reason: 'other' }, { token: reporter.token });
    expect(hubReport.status).toBe(201);
    const after = await app.owner.query('select count(*)::int as n from app.notifications');
    expect(after.rows[0].n).toBe(before.rows[0].n);
    const { rows } = await app.owner.query('select reporter_id, target_type, target_id, reason from app.reports order by created_at');
    expect(rows).toEqual([
      { reporter_id: reporter.id, target_type: 'user', target_id: target.id, reason: 'spam' },
      { reporter_id: reporter.id, target_type: 'hub', target_id: hub.id, reason: 'other' },
    ]);
    expect((await app.post(`/reports/users/${target.id}`, { reason: 'rude' }, { token: reporter.token })).status).toBe(422);
    expect(
      (await app.post(`/reports/users/${target.id}`, { reason: 'spam', details: 'x'.repeat(1001) }, { token: reporter.token })).status,
    ).toBe(422);
    expect(
      (await app.post('/reports/hubs/00000000-0000-4000-8000-000000000000', { reason: 'spam' }, { token: reporter.token })).body.error.code,
    ).toBe('HUB_NOT_FOUND');
    expect((await app.post(`/reports/users/${reporter.id}`, { reason: 'spam' }, { token: reporter.token })).body.error.code).toBe(
      'USER_NOT_FOUND',
    );
  });
});
