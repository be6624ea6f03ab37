// Writes that a unique constraint (or a "reuse the pending one" rule) guards, sent by one client in
// a race with itself: nothing answers 500, and every repeat answers as the contract answers a
// second request of the same kind (the same pending request, 409 ALREADY_FOLLOWING, ...), with one
// row and one notification or fan-out for the state made.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import type { ApiResponse } from '../../helpers/client.ts';
import { addMember, createHub, invite, type TestHub } from '../../helpers/hubs.ts';
import { idpClaims, startTestIdp, type TestIdp } from '../../helpers/idp.ts';
import { createPost } from '../../helpers/posts.ts';
import { nextPhone, userAtLevel, verifyPhone, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let idp: TestIdp;
let owner: TestUser;
let hub: TestHub;
beforeAll(async () => {
  idp = await startTestIdp();
  app = await startTestApp({ IDP_JWKS_URL: idp.jwksUrl });
  owner = await userAtLevel(app, 4);
  hub = await createHub(app, owner);
});
afterAll(async () => {
  await app.close();
  await idp.close();
});

const times = <T>(n: number, fn: () => Promise<T>) => Promise.all(Array.from({ length: n }, fn));
const statuses = (answers: ApiResponse[]) => answers.map((a) => a.status).sort();
const count = async (sql: string, params: unknown[]) =>
  (await app.owner.query<{ n: number }>(`select count(*)::int as n from ${sql}`, params)).rows[0]?.n;
const queuedJobs = (task: string, field: string, value: string) =>
  count(
    `graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
     where t.identifier = $1 and j.payload ->> $2 = $3`,
    [task, field, value],
  );
/** Exactly one answer is `first`, the others `repeat`. */
function oneThenRepeats(answers: ApiResponse[], first: number, repeat: { status: number; code: string }) {
  expect(
    answers.filter((a) => a.status === first),
    JSON.stringify(answers.map((a) => a.body)),
  ).toHaveLength(1);
  for (const answer of answers.filter((a) => a.status !== first)) {
    expect(answer.status).toBe(repeat.status);
    expect(answer.body.error.code).toBe(repeat.code);
  }
}

describe('hub transitions under concurrency', () => {
  it('answers 10 users x 10 concurrent join requests with the same pending request to every repeat', { timeout: 60_000 }, async () => {
    const link = await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: owner.token });
    const users = await Promise.all(Array.from({ length: 10 }, () => userAtLevel(app, 4)));
    const answers = await Promise.all(
      users.map((user) =>
        times(10, () => app.post(`/hub-invite-links/${link.body.data.token}/join-requests`, undefined, { token: user.token })),
      ),
    );
    for (const [i, perUser] of answers.entries()) {
      expect(statuses(perUser), JSON.stringify(perUser.find((a) => a.status !== 201)?.body)).toEqual(Array(10).fill(201));
      const ids = new Set(perUser.map((a) => a.body.data.requestId));
      expect(ids.size).toBe(1);
      expect(perUser[0]?.body.data).toEqual({ requestId: [...ids][0], hubId: hub.id, viewerStatus: 'pending_admin_approval' });
      const user = users[i] as TestUser;
      expect(await count(`app.hub_join_requests where hub_id = $1 and user_id = $2`, [hub.id, user.id])).toBe(1);
      expect(await queuedJobs('hub_notification_fanout', 'joinRequestId', [...ids][0])).toBe(1);
    }
  });

  /** A second pending invitation of `invitationId`'s phone and kind (the API would reuse the first). */
  async function secondInvitation(invitationId: string, invitedBy: string): Promise<string> {
    const { rows } = await app.owner.query<{ id: string }>(
      `insert into app.hub_invitations (hub_id, invited_by, phone_e164, invitee_id, requires_admin_approval)
       select hub_id, $2, phone_e164, invitee_id, requires_admin_approval from app.hub_invitations where id = $1 returning id`,
      [invitationId, invitedBy],
    );
    return rows[0]?.id as string;
  }

  it('makes one membership from two invitations accepted at once: the other answers ALREADY_HUB_MEMBER', async () => {
    for (let round = 0; round < 3; round += 1) {
      const invitee = await userAtLevel(app, 4);
      const first = await invite(app, hub, owner, invitee);
      const invitations = [first, await secondInvitation(first, owner.id)];
      const answers = await Promise.all(
        invitations.map((id) => app.post(`/hub-invitations/${id}/accept`, undefined, { token: invitee.token })),
      );
      oneThenRepeats(answers, 200, { status: 409, code: 'ALREADY_HUB_MEMBER' });
      expect(await count(`app.hub_memberships where hub_id = $1 and user_id = $2`, [hub.id, invitee.id])).toBe(1);
      const joined = await count(
        `graphile_worker._private_jobs j where j.payload ->> 'type' = 'hub_member_joined' and j.payload -> 'except' ->> 0 = $1`,
        [invitee.id],
      );
      expect(joined).toBe(1);
    }
  });

  it('accepts one invitation once when accepted 10 times at once', async () => {
    const invitee = await userAtLevel(app, 4);
    const invitationId = await invite(app, hub, owner, invitee);
    const answers = await times(10, () => app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: invitee.token }));
    oneThenRepeats(answers, 200, { status: 409, code: 'INVITATION_NOT_PENDING' });
    expect(await count(`app.hub_memberships where hub_id = $1 and user_id = $2`, [hub.id, invitee.id])).toBe(1);
  });

  it('reuses one pending invitation when the same phone is invited 10 times at once', async () => {
    const invitee = await userAtLevel(app, 3);
    const phone = invitee.phone as { phoneCountryCode: string; phoneNumber: string; e164: string };
    const body = { invitees: [{ phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber }] };
    const answers = await times(10, () => app.post(`/hubs/${hub.id}/invitations`, body, { token: owner.token }));
    expect(statuses(answers)).toEqual(Array(10).fill(201));
    expect(new Set(answers.map((a) => a.body.data.invitations[0].invitationId)).size).toBe(1);
    expect(await count(`app.hub_invitations where hub_id = $1 and phone_e164 = $2`, [hub.id, phone.e164])).toBe(1);
    expect(await count(`app.notifications where recipient_id = $1 and type = 'hub_invite_received'`, [invitee.id])).toBe(1);
    // Two requests naming the same phones in opposite orders do not wait on each other.
    const others = [await userAtLevel(app, 3), await userAtLevel(app, 3)].map((u) => {
      const { phoneCountryCode, phoneNumber } = u.phone as { phoneCountryCode: string; phoneNumber: string };
      return { phoneCountryCode, phoneNumber };
    });
    const crossed = await Promise.all(
      [others, [...others].reverse()].flatMap((list) =>
        [0, 1].map(() => app.post(`/hubs/${hub.id}/invitations`, { invitees: list }, { token: owner.token })),
      ),
    );
    expect(statuses(crossed)).toEqual(Array(4).fill(201));
  });

  it('answers concurrent member invitations that need approval with one join request', async () => {
    const members = [await userAtLevel(app, 4), await userAtLevel(app, 4)];
    for (const member of members) await addMember(app, hub, member);
    const invitee = await userAtLevel(app, 4);
    const first = await invite(app, hub, members[0] as TestUser, invitee);
    const second = await secondInvitation(first, (members[1] as TestUser).id);
    const answers = await Promise.all(
      [first, second].map((id) => app.post(`/hub-invitations/${id}/accept`, undefined, { token: invitee.token })),
    );
    expect(statuses(answers)).toEqual([200, 200]);
    expect(answers.map((a) => a.body.data.viewerStatus)).toEqual(['pending_admin_approval', 'pending_admin_approval']);
    expect(await count(`app.hub_join_requests where hub_id = $1 and user_id = $2`, [hub.id, invitee.id])).toBe(1);
  });

  it('answers one of two hubs taking one custom link at once with HUB_LINK_TAKEN', async () => {
    const hubs = [await createHub(app, owner), await createHub(app, owner)];
    const answers = await Promise.all(
      hubs.map((h) => app.patch(`/hubs/${h.id}/link`, { customLink: 'race-link' }, { token: owner.token })),
    );
    oneThenRepeats(answers, 200, { status: 409, code: 'HUB_LINK_TAKEN' });
  });
});

describe('user writes under concurrency', () => {
  it('follows once: one 200, the repeats 409 ALREADY_FOLLOWING, one row and one notification', async () => {
    const [follower, followee] = [await userAtLevel(app, 2), await userAtLevel(app, 2)] as [TestUser, TestUser];
    const answers = await times(10, () => app.post(`/users/${followee.id}/follow`, undefined, { token: follower.token }));
    oneThenRepeats(answers, 200, { status: 409, code: 'ALREADY_FOLLOWING' });
    expect(await count(`app.follows where follower_id = $1 and followee_id = $2`, [follower.id, followee.id])).toBe(1);
    expect(await count(`app.notifications where recipient_id = $1 and type = 'user_followed'`, [followee.id])).toBe(1);
    expect((await app.owner.query(`select app_private.counter_value('user_followers', $1) as n`, [followee.id])).rows[0].n).toBe(1);
  });

  it('blocks once: one 200, the repeats 409 ALREADY_BLOCKED', async () => {
    const [blocker, blocked] = [await userAtLevel(app, 1), await userAtLevel(app, 2)] as [TestUser, TestUser];
    const answers = await times(10, () => app.post(`/users/${blocked.id}/block`, undefined, { token: blocker.token }));
    oneThenRepeats(answers, 200, { status: 409, code: 'ALREADY_BLOCKED' });
    expect(await count(`app.blocks where blocker_id = $1 and blocked_id = $2`, [blocker.id, blocked.id])).toBe(1);
  });

  it('saves a post and a discussion once, answering saved to every repeat', async () => {
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const post = await createPost(app, owner, { visibility: 'public_hub', hubIds: [hub.id] });
    const saves = await times(10, () => app.post(`/posts/${post.id}/save`, undefined, { token: member.token }));
    expect(statuses(saves)).toEqual(Array(10).fill(200));
    expect(await count(`app.saved_posts where user_id = $1 and post_id = $2`, [member.id, post.id])).toBe(1);
    const { rows } = await app.owner.query<{ id: string }>(`select id from app.hub_discussions where hub_id = $1 and post_id = $2`, [
      hub.id,
      post.id,
    ]);
    const discussionId = rows[0]?.id as string;
    const discussionSaves = await times(10, () =>
      app.post(`/hubs/${hub.id}/discussions/${discussionId}/save`, undefined, { token: member.token }),
    );
    expect(statuses(discussionSaves)).toEqual(Array(10).fill(200));
    expect(await count(`app.saved_discussions where user_id = $1 and discussion_id = $2`, [member.id, discussionId])).toBe(1);
  });

  it('shares a post into a hub once however many times at once: one placement, one discussion', async () => {
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const author = await userAtLevel(app, 3);
    const post = await createPost(app, author);
    const answers = await times(10, () => app.post(`/posts/${post.id}/share/hubs`, { hubIds: [hub.id] }, { token: member.token }));
    expect(statuses(answers)).toEqual(Array(10).fill(201));
    expect(await count(`app.post_hubs where post_id = $1 and hub_id = $2`, [post.id, hub.id])).toBe(1);
    expect(await count(`app.hub_discussions where post_id = $1 and hub_id = $2`, [post.id, hub.id])).toBe(1);
  });

  it('takes one handle once when two users ask for it at once', async () => {
    const users = [await userAtLevel(app, 1), await userAtLevel(app, 1)];
    const answers = await Promise.all(
      users.map((u) =>
        app.put(
          '/users/me/onboarding/profile-basics',
          { fullName: 'Race Person', username: 'race_handle', acceptTerms: true },
          { token: u.token },
        ),
      ),
    );
    oneThenRepeats(answers, 200, { status: 409, code: 'USERNAME_TAKEN' });
  });
});

describe('sign-in under concurrency', () => {
  it('signs a new phone in once from concurrent identity-provider tokens: one user, one identity', async () => {
    const phone = nextPhone();
    const token = idp.sign(
      idpClaims('opinion-test', { sub: `race-${phone.e164}`, phone_number: phone.e164, firebase: { sign_in_provider: 'phone' } }),
    );
    const answers = await times(8, () => app.post('/auth/idp/token', { idToken: token }));
    expect(statuses(answers), JSON.stringify(answers.find((a) => a.status !== 200)?.body)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body.data.user.id)).size).toBe(1);
    expect(await count(`app.phone_identities where phone_e164 = $1`, [phone.e164])).toBe(1);
  });

  it('attaches one phone to a phoneless caller verifying two phones at once; the other phone signs in as its own user', async () => {
    const caller = await userAtLevel(app, 2);
    const phones = [nextPhone(), nextPhone()];
    for (const phone of phones) {
      expect(
        (await app.post('/auth/otp/request', { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber })).status,
      ).toBe(200);
    }
    const answers = await Promise.all(
      phones.map((phone) =>
        app.post(
          '/auth/otp/verify',
          { phoneCountryCode: phone.phoneCountryCode, phoneNumber: phone.phoneNumber, code: '1234' },
          { token: caller.token },
        ),
      ),
    );
    expect(statuses(answers)).toEqual([200, 200]);
    expect(answers.filter((a) => a.body.data.user.id === caller.id)).toHaveLength(1);
    expect(await count(`app.phone_identities where user_id = $1`, [caller.id])).toBe(1);
    // verifyPhone still works afterwards for a third phone of a new user.
    expect((await verifyPhone(app)).id).not.toBe(caller.id);
  });
});
