// Hubs and memberships made through the public API.
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import { uploadAsset } from './uploads.ts';
import type { TestUser } from './users.ts';

export interface TestHub {
  id: string;
  owner: TestUser;
}

let hubCounter = 0;

export async function createHub(app: TestApp, owner: TestUser, extra: Record<string, unknown> = {}): Promise<TestHub> {
  hubCounter += 1;
  const profileAssetId = await uploadAsset(app, owner, 'hub_photo');
  const response = await app.post('/hubs', { name: `Hub number ${hubCounter}`, profileAssetId, ...extra }, { token: owner.token });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return { id: response.body.data.hubId, owner };
}

/** Invites a user's phone as `inviter` and returns the invitation id. */
export async function invite(app: TestApp, hub: TestHub, inviter: TestUser, invitee: TestUser): Promise<string> {
  const phone = invitee.phone as { phoneCountryCode: string; phoneNumber: string };
  const response = await app.post(
    `/hubs/${hub.id}/invitations`,
    { invitees: [{ phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber }] },
    { token: inviter.token },
  );
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.data.invitations[0].invitationId;
}

/** Makes `user` an active member through an admin invitation of the owner. */
export async function addMember(app: TestApp, hub: TestHub, user: TestUser): Promise<void> {
  const invitationId = await invite(app, hub, hub.owner, user);
  const accept = await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: user.token });
  expect(accept.body.data).toEqual({ hubId: hub.id, viewerStatus: 'member' });
}

/** Notifications of a user as stored (owner view), optionally of one type. */
export async function storedNotifications(app: TestApp, userId: string, type?: string) {
  const { rows } = await app.owner.query(
    `select type, actor_id, hub_id, invitation_id, join_request_id from app.notifications
     where recipient_id = $1 and ($2::text is null or type::text = $2) order by created_at`,
    [userId, type ?? null],
  );
  return rows;
}

/** The notifications about a post a user got, oldest first: who acted, on which post, comment and hub. */
export async function storedPostNotifications(app: TestApp, userId: string, type: string) {
  const { rows } = await app.owner.query(
    `select actor_id, post_id, comment_id, hub_id from app.notifications where recipient_id = $1 and type::text = $2 order by created_at, id`,
    [userId, type],
  );
  return rows;
}
