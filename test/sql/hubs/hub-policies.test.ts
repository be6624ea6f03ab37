// Hub policies tested directly in SQL: what outsiders, invited users and members can read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub, invite, type TestHub } from '../../helpers/hubs.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let hub: TestHub;
let owner: TestUser;
let member: TestUser;
let invited: TestUser;
let outsider: TestUser;
let requester: TestUser;
let invitationId: string;
beforeAll(async () => {
  [app, owner] = await appWithUsers(4);
  hub = await createHub(app, owner);
  member = await userAtLevel(app, 4);
  await addMember(app, hub, member);
  invited = await userAtLevel(app, 4);
  invitationId = await invite(app, hub, member, invited);
  outsider = await userAtLevel(app, 4);
  const link = await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: owner.token });
  requester = await userAtLevel(app, 4);
  await app.post(`/hub-invite-links/${link.body.data.token}/join-requests`, undefined, { token: requester.token });
});
afterAll(() => app.close());

const read = (user: TestUser, sql: string, params: unknown[] = []) =>
  asViewer(app, 'app_user', user.id, (c) => rowsOrError(c, sql, params));

describe('a non-member', () => {
  it('reads no membership, invitation, join request, invite link or phone of the hub', async () => {
    expect(await read(outsider, 'select user_id from app.hub_memberships where hub_id = $1', [hub.id])).toEqual([]);
    expect(await read(outsider, 'select id from app.hub_invitations where hub_id = $1', [hub.id])).toEqual([]);
    expect(await read(outsider, 'select id from app.hub_join_requests where hub_id = $1', [hub.id])).toEqual([]);
    expect(await read(outsider, 'select id from app.hub_invite_links where hub_id = $1', [hub.id])).toEqual([]);
    expect(await read(outsider, 'select phone_e164 from app.phone_identities where user_id = any($1)', [[owner.id, member.id]])).toEqual(
      [],
    );
    expect(await read(outsider, 'select display_name from app.hub_profiles where user_id = $1', [member.id])).toEqual([]);
  });

  it('never reads raw invitation phones or invitees, even as a member', async () => {
    expect(await read(member, 'select phone_e164 from app.hub_invitations')).toBe('42501');
    expect(await read(member, 'select invitee_id from app.hub_invitations')).toBe('42501');
    const masked = (await read(member, 'select id, masked_phone from app.hub_invitations where hub_id = $1 order by id', [hub.id])) as {
      id: string;
      masked_phone: string;
    }[];
    const { rows: all } = await app.owner.query('select id from app.hub_invitations where hub_id = $1 order by id', [hub.id]);
    expect(masked.map((row) => row.id)).toEqual(all.map((row) => row.id));
    expect(masked.map((row) => row.id)).toContain(invitationId);
    for (const row of masked) expect(row.masked_phone).toMatch(/^\+1\d•+\d{3}$/);
  });
});

describe('an invited user', () => {
  it('reads the preview (members) but no phone and no Hub identity', async () => {
    const members = await read(invited, 'select user_id from app.hub_member_page($1, null, null, null, 50) order by joined_at', [hub.id]);
    expect(members).toEqual([{ user_id: owner.id }, { user_id: member.id }]);
    expect(await read(invited, 'select user_id from app.hub_memberships where hub_id = $1 order by user_id', [hub.id])).toEqual(
      [owner.id, member.id].sort().map((user_id) => ({ user_id })),
    );
    // Column grants: members' join times and mute settings are not app_user's to read (0091).
    for (const column of ['joined_at', 'content_muted']) {
      expect(await read(invited, `select ${column} from app.hub_memberships where hub_id = $1`, [hub.id]), column).toBe('42501');
    }
    expect(await read(invited, 'select app.viewer_hub_content_muted($1) as muted', [hub.id])).toEqual([{ muted: false }]);
    expect(await read(invited, 'select phone_e164 from app.phone_identities where user_id = any($1)', [[owner.id, member.id]])).toEqual([]);
    // Their own phone, as everyone reads their own.
    expect(await read(invited, 'select user_id from app.phone_identities')).toEqual([{ user_id: invited.id }]);
    expect(await read(invited, 'select id from app.hub_invitations')).toEqual([{ id: invitationId }]);
    expect(await read(invited, 'select id from app.hub_join_requests where hub_id = $1', [hub.id])).toEqual([]);
  });
});

describe('an active member', () => {
  it("reads co-members' phones and nothing of admins' queues", async () => {
    const phones = await read(member, 'select user_id from app.phone_identities where user_id = any($1) order by user_id', [
      [owner.id, member.id, invited.id, outsider.id],
    ]);
    expect(phones, 'their own and the co-member owner, not the invited user or an outsider').toEqual(
      [owner.id, member.id].sort().map((user_id) => ({ user_id })),
    );
    expect(await read(member, 'select id from app.hub_join_requests where hub_id = $1', [hub.id])).toEqual([]);
    expect(await read(owner, 'select user_id from app.hub_join_requests where hub_id = $1', [hub.id])).toEqual([{ user_id: requester.id }]);
    expect(await read(member, 'select id from app.hub_invite_links where hub_id = $1', [hub.id])).toEqual([]);
  });

  it('below level 4, membership reveals nothing', async () => {
    await app.owner.query('update app.users set contacts_synced_at = null where id = $1', [member.id]);
    try {
      expect(await read(member, 'select phone_e164 from app.phone_identities where user_id = $1', [owner.id])).toEqual([]);
    } finally {
      await app.owner.query('update app.users set contacts_synced_at = now() where id = $1', [member.id]);
    }
  });
});

describe('hub-scoped notifications (spec 6.3 rule 3)', () => {
  it('are visible only while the recipient is an active member; leaving hides, rejoining reveals', async () => {
    const user = await userAtLevel(app, 4);
    await addMember(app, hub, user);
    await app.owner.query(
      `insert into app.notifications (recipient_id, type, hub_id) values ($1, 'hub_role_changed', $2), ($1, 'user_followed', null)`,
      [user.id, hub.id],
    );
    const visible = () =>
      read(
        user,
        `select type from app.notifications where type in ('hub_role_changed', 'user_followed', 'hub_member_joined') order by type::text`,
      );
    expect(await visible()).toEqual([{ type: 'hub_role_changed' }, { type: 'user_followed' }]);
    await app.delete(`/hubs/${hub.id}/membership`, { token: user.token });
    expect(await visible()).toEqual([{ type: 'user_followed' }]);
    expect(
      (
        await app.owner.query(`select count(*)::int as n from app.notifications where recipient_id = $1 and type = 'hub_role_changed'`, [
          user.id,
        ])
      ).rows[0].n,
    ).toBe(1);
    await addMember(app, hub, user);
    expect(await visible()).toEqual([{ type: 'hub_role_changed' }, { type: 'user_followed' }]);
    // Rows of a hub that does not exist fail closed.
    await app.owner.query(
      `insert into app.notifications (recipient_id, type, hub_id) values ($1, 'hub_member_joined', gen_random_uuid())`,
      [user.id],
    );
    expect(await visible()).toEqual([{ type: 'hub_role_changed' }, { type: 'user_followed' }]);
  });
});
