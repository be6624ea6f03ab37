// Notifications of posts: spec 6.1 (post_reposted rows), 6.2 (a repost published into a hub),
// 6.3 rules 1 and 4 (content mute, legacy null-hub post_reposted rows).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub, storedNotifications, storedPostNotifications, type TestHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let sourceAuthor: TestUser;
let reposter: TestUser;
let bystander: TestUser;
let hub: TestHub;
beforeAll(async () => {
  [app, sourceAuthor, reposter, bystander] = await appWithUsers(4, 4, 4);
  hub = await hubWithMembers(app, reposter, sourceAuthor, bystander);
});
afterAll(() => app.close());

const repost = (user: TestUser, postId: string, body: Record<string, unknown>) =>
  app.post(`/posts/${postId}/reposts`, { thoughtText: 'my take', ...body }, { token: user.token });

describe('post_reposted', () => {
  it('is one global row for a public repost, and none for reposting your own post', async () => {
    const source = await createPost(app, sourceAuthor);
    const before = (await storedNotifications(app, sourceAuthor.id, 'post_reposted')).length;
    expect((await repost(reposter, source.id, { visibility: 'public' })).status).toBe(201);
    const rows = await storedNotifications(app, sourceAuthor.id, 'post_reposted');
    expect(rows.length).toBe(before + 1);
    expect(rows.at(-1)).toMatchObject({ actor_id: reposter.id, hub_id: null });
    await repost(sourceAuthor, source.id, { visibility: 'public' });
    expect((await storedNotifications(app, sourceAuthor.id, 'post_reposted')).length).toBe(before + 1);
  });

  it('is one global row (not muted) for a public_hub repost; other hub members get post_shared_to_hub, the source author does not', async () => {
    const source = await createPost(app, sourceAuthor);
    await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: true }, { token: sourceAuthor.token });
    const before = (await storedNotifications(app, sourceAuthor.id, 'post_reposted')).length;
    const beforeShared = (await storedNotifications(app, bystander.id, 'post_shared_to_hub')).length;
    const reposted = await repost(reposter, source.id, { visibility: 'public_hub', hubIds: [hub.id] });
    await app.runJobs();
    const rows = await storedNotifications(app, sourceAuthor.id, 'post_reposted');
    expect(rows.length).toBe(before + 1);
    expect(rows.at(-1)?.hub_id).toBeNull();
    expect((await storedNotifications(app, sourceAuthor.id, 'post_shared_to_hub')).length).toBe(0);
    const shared = await storedPostNotifications(app, bystander.id, 'post_shared_to_hub');
    expect(shared.slice(beforeShared)).toEqual([
      { actor_id: reposter.id, post_id: reposted.body.data.id, comment_id: null, hub_id: hub.id },
    ]);
    expect((await storedNotifications(app, reposter.id, 'post_shared_to_hub')).length).toBe(0);
    await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: false }, { token: sourceAuthor.token });
  });

  it('is one hub-scoped row per target hub of a private_locked_hub repost where the source author is a member, honouring mute', async () => {
    const source = await createPost(app, sourceAuthor);
    const otherHub = await createHub(app, reposter);
    const before = await storedNotifications(app, sourceAuthor.id, 'post_reposted');
    await repost(reposter, source.id, { visibility: 'private_locked_hub', hubIds: [hub.id, otherHub.id] });
    const after = await storedNotifications(app, sourceAuthor.id, 'post_reposted');
    expect(after.length).toBe(before.length + 1);
    expect(after.at(-1)).toMatchObject({ actor_id: reposter.id, hub_id: hub.id });

    await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: true }, { token: sourceAuthor.token });
    await repost(reposter, source.id, { visibility: 'private_locked_hub', hubIds: [hub.id] });
    expect((await storedNotifications(app, sourceAuthor.id, 'post_reposted')).length).toBe(after.length);
    await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: false }, { token: sourceAuthor.token });
  });
});

describe('legacy null-hub post_reposted rows (rule 4)', () => {
  it('show a private_locked_hub repost only to an active member of a current target hub, and fail closed otherwise', async () => {
    const source = await createPost(app, sourceAuthor);
    const privateRepost = (await repost(reposter, source.id, { visibility: 'private_locked_hub', hubIds: [hub.id] })).body.data;
    const publicRepost = (await repost(reposter, source.id, { visibility: 'public' })).body.data;
    const recipient = await userAtLevel(app, 4);
    await app.owner.query(
      `insert into app.notifications (recipient_id, type, actor_id, post_id) values
         ($1, 'post_reposted', $2, $3), ($1, 'post_reposted', $2, $4), ($1, 'post_reposted', $2, null), ($1, 'post_reposted', $2, gen_random_uuid())`,
      [recipient.id, reposter.id, privateRepost.id, publicRepost.id],
    );
    const visible = () =>
      asViewer(app, 'app_user', recipient.id, (c) =>
        rowsOrError(c, `select post_id from app.notifications where type = 'post_reposted' order by post_id`),
      );
    expect(await visible()).toEqual([{ post_id: publicRepost.id }]);
    await addMember(app, hub, recipient);
    expect(((await visible()) as any[]).map((r) => r.post_id).sort()).toEqual([privateRepost.id, publicRepost.id].sort());
    await app.delete(`/posts/${privateRepost.id}`, { token: reposter.token });
    expect(await visible()).toEqual([{ post_id: publicRepost.id }]);
  });
});
