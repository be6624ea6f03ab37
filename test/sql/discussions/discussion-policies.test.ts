// Hub discussions, messages and saved discussions tested directly in SQL as app_user: active
// members of the hub only; writes only through the stored functions and the save policies; the
// HubDiscussionAuthor phone comes through the phone policy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, invite, type TestHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let hub: TestHub;
let owner: TestUser;
let member: TestUser;
let invited: TestUser;
let pending: TestUser;
let outsider: TestUser;
let discussionId: string;
let messageId: string;
beforeAll(async () => {
  [app, owner, member, invited, pending, outsider] = await appWithUsers(4, 4, 4, 4, 4);
  hub = await hubWithMembers(app, owner, member);
  await invite(app, hub, owner, invited);
  const link = await app.post(
    `/hub-invite-links/${(await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: owner.token })).body.data.token}/join-requests`,
    undefined,
    {
      token: pending.token,
    },
  );
  expect(link.status).toBe(201);
  const post = await createPost(app, owner, { visibility: 'public_hub', hubIds: [hub.id] });
  discussionId = (await app.owner.query('select id from app.hub_discussions where post_id = $1', [post.id])).rows[0].id;
  const message = await app.post(`/hubs/${hub.id}/discussions/${discussionId}/messages`, { text: 'hello' }, { token: owner.token });
  messageId = message.body.data.id;
  for (const user of [owner, member]) {
    expect((await app.post(`/hubs/${hub.id}/discussions/${discussionId}/save`, undefined, { token: user.token })).status).toBe(200);
  }
});
afterAll(() => app.close());

const read = (user: TestUser, sql: string, params: unknown[] = []) =>
  asViewer(app, 'app_user', user.id, (c) => rowsOrError(c, sql, params));
const visibleRows = (user: TestUser) =>
  Promise.all([
    read(user, 'select id from app.hub_discussions where hub_id = $1', [hub.id]),
    read(user, 'select id from app.hub_discussion_messages where hub_id = $1', [hub.id]),
    read(user, 'select user_id from app.saved_discussions where hub_id = $1 order by user_id', [hub.id]),
    read(user, 'select message_count from app.hub_discussion_stats where hub_id = $1', [hub.id]),
  ]);

describe('row-level security', () => {
  it('shows an active member the discussion, its messages and only their own saved row', async () => {
    expect(await visibleRows(member)).toEqual([
      [{ id: discussionId }],
      [{ id: messageId }],
      [{ user_id: member.id }],
      [{ message_count: 1 }],
    ]);
  });

  it('shows outsiders, invited and pending users nothing', async () => {
    for (const user of [outsider, invited, pending]) expect(await visibleRows(user)).toEqual([[], [], [], []]);
  });

  it('shows a member below level 4 nothing', async () => {
    await app.owner.query('update app.users set contacts_synced_at = null where id = $1', [member.id]);
    try {
      expect(await visibleRows(member)).toEqual([[], [], [], []]);
    } finally {
      await app.owner.query('update app.users set contacts_synced_at = now() where id = $1', [member.id]);
    }
  });

  it("hides a leaver's saved row without deleting it; rejoining shows it again", async () => {
    const leaver = await userAtLevel(app, 4);
    await addMember(app, hub, leaver);
    await app.post(`/hubs/${hub.id}/discussions/${discussionId}/save`, undefined, { token: leaver.token });
    await app.delete(`/hubs/${hub.id}/membership`, { token: leaver.token });
    expect(await visibleRows(leaver)).toEqual([[], [], [], []]);
    expect(await read(leaver, 'select discussion_id from app.saved_discussions')).toEqual([]);
    expect((await app.owner.query('select count(*)::int as n from app.saved_discussions where user_id = $1', [leaver.id])).rows[0].n).toBe(
      1,
    );
    await addMember(app, hub, leaver);
    expect((await visibleRows(leaver))[2]).toEqual([{ user_id: leaver.id }]);
  });
});

describe('writes', () => {
  it('refuses direct message writes and foreign or non-member saves', async () => {
    expect(
      await read(member, `insert into app.hub_discussion_messages (discussion_id, hub_id, author_id, text) values ($1, $2, $3, 'x')`, [
        discussionId,
        hub.id,
        member.id,
      ]),
    ).toBe('42501');
    expect(await read(member, `update app.hub_discussion_messages set text = 'edited' where id = $1`, [messageId])).toBe('42501');
    expect(await read(member, `update app.hub_discussions set last_activity_at = now()`)).toBe('42501');
    expect(await read(member, `update app.hub_discussion_stats set message_count = 0`)).toBe('42501');
    expect(await read(member, 'delete from app.saved_discussions where user_id = $1 returning user_id', [owner.id])).toEqual([]);
    expect(
      await read(member, 'insert into app.saved_discussions (user_id, discussion_id, hub_id) values ($1, $2, $3)', [
        outsider.id,
        discussionId,
        hub.id,
      ]),
    ).toBe('42501');
    expect(
      await read(outsider, 'insert into app.saved_discussions (user_id, discussion_id, hub_id) values ($1, $2, $3)', [
        outsider.id,
        discussionId,
        hub.id,
      ]),
    ).toBe('42501');
    const kept = await app.owner.query('select user_id from app.saved_discussions where user_id = any($1) order by user_id', [
      [owner.id, member.id, outsider.id],
    ]);
    expect(kept.rows.map((row) => row.user_id)).toEqual([owner.id, member.id].sort());
  });

  it('lets app_user post through app.post_hub_discussion_message, with its checks', async () => {
    // The reply, read back in the same (rolled back) transaction: in the thread, by the member.
    const stored = await asViewer(app, 'app_user', member.id, async (c) => {
      const { rows } = await c.query<{ id: string }>('select app.post_hub_discussion_message($1, $2, $3, $4) as id', [
        hub.id,
        discussionId,
        'via SQL',
        messageId,
      ]);
      return (
        await c.query('select discussion_id, hub_id, author_id, parent_id, text from app.hub_discussion_messages where id = $1', [
          rows[0]?.id,
        ])
      ).rows;
    });
    expect(stored).toEqual([{ discussion_id: discussionId, hub_id: hub.id, author_id: member.id, parent_id: messageId, text: 'via SQL' }]);
    expect(await read(outsider, 'select app.post_hub_discussion_message($1, $2, $3)', [hub.id, discussionId, 'x'])).toBe('P0001');
    expect(await read(member, 'select app.post_hub_discussion_message($1, $2, $3)', [hub.id, discussionId, ''])).toBe('23514');
  });
});

describe('app.hub_discussion_author', () => {
  const author = (viewer: TestUser, authorId: string) =>
    read(viewer, 'select author as a from app.hub_discussion_author($1, $2)', [hub.id, authorId]);

  it('shows an active member with Hub identity and phone, others by their public face, and nothing outside the hub', async () => {
    await app.owner.query(
      `insert into app.hub_profiles (user_id, display_name) values ($1, 'Hub Self') on conflict (user_id) do update set display_name = 'Hub Self'`,
      [owner.id],
    );
    expect(await author(member, owner.id)).toEqual([
      {
        a: {
          id: owner.id,
          displayName: 'Hub Self',
          photoKey: null,
          phoneNumber: owner.phone?.e164,
          publicUsername: null,
          isFormerMember: false,
        },
      },
    ]);
    // Someone who never was a member is shown like a former one: public face, no phone.
    expect(await author(member, outsider.id)).toEqual([
      {
        a: {
          id: outsider.id,
          displayName: 'Test Person',
          photoKey: null,
          phoneNumber: null,
          publicUsername: outsider.username,
          isFormerMember: true,
        },
      },
    ]);
    // Outside the hub it answers nothing, not even whether the author is a member.
    for (const viewer of [outsider, invited, pending]) expect(await author(viewer, owner.id)).toEqual([]);
  });
});
