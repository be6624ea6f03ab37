// Comments and bookmarks (spec 2.3, 2.5; contract sections 5 and 7).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { storedPostNotifications } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let author: TestUser;
let commenter: TestUser;
beforeAll(async () => {
  [app, author, commenter] = await appWithUsers(3, 2);
});
afterAll(() => app.close());

const comment = (user: TestUser, postId: string, body: Record<string, unknown>) =>
  app.post(`/posts/${postId}/comments`, body, { token: user.token });

describe('comments', () => {
  it('creates comments with UserLite authors, notifies the post author, and counts them', async () => {
    const post = await createPost(app, author);
    const response = await comment(commenter, post.id, { text: 'Nice one' });
    expect(response.status).toBe(201);
    expect(response.body.data).toEqual({
      id: expect.any(String),
      postId: post.id,
      author: { id: commenter.id, username: commenter.username, fullName: 'Test Person', profilePhotoUrl: null },
      text: 'Nice one',
      parentCommentId: null,
      replyCount: 0,
      createdAt: expect.any(String),
    });
    const commented = [{ actor_id: commenter.id, post_id: post.id, comment_id: response.body.data.id, hub_id: null }];
    expect(await storedPostNotifications(app, author.id, 'post_commented')).toEqual(commented);
    const own = await comment(author, post.id, { text: 'Thanks' });
    expect(own.status).toBe(201);
    expect(await storedPostNotifications(app, author.id, 'post_commented')).toEqual(commented);
    expect((await app.get(`/posts/${post.id}`, { token: author.token })).body.data.commentCount).toBe(2);
    const phone = author.phone?.e164.slice(2) as string;
    expect((await app.get(`/posts/${post.id}/comments`, { token: commenter.token })).text).not.toContain(phone);
  });

  it('keeps threads one level deep: a reply to a reply attaches to the root', async () => {
    const post = await createPost(app, author);
    const root = (await comment(commenter, post.id, { text: 'root' })).body.data;
    const reply = (await comment(author, post.id, { text: 'reply', parentCommentId: root.id })).body.data;
    const nested = (await comment(commenter, post.id, { text: 'reply to reply', parentCommentId: reply.id })).body.data;
    expect(reply.parentCommentId).toBe(root.id);
    expect(nested.parentCommentId).toBe(root.id);
    const top = await app.get(`/posts/${post.id}/comments`, { token: author.token });
    expect(top.body.data.items.map((c: any) => [c.id, c.replyCount])).toEqual([[root.id, 2]]);
    const replies = await app.get(`/posts/${post.id}/comments?parentCommentId=${root.id}&limit=1`, { token: author.token });
    expect(replies.body.data.items.map((c: any) => c.id)).toEqual([reply.id]);
    const more = await app.get(`/posts/${post.id}/comments?parentCommentId=${root.id}&limit=1&cursor=${replies.body.data.nextCursor}`, {
      token: author.token,
    });
    expect(more.body.data.items.map((c: any) => c.id)).toEqual([nested.id]);
    expect(more.body.data.nextCursor).toBeNull();
    const other = await createPost(app, author);
    expect((await comment(commenter, other.id, { text: 'x', parentCommentId: root.id })).body.error.code).toBe('COMMENT_NOT_FOUND');
  });

  it('validates, gates on level 2, and refuses comments across a block like a missing post', async () => {
    const post = await createPost(app, author);
    expect((await comment(commenter, post.id, { text: '' })).status).toBe(422);
    expect((await comment(commenter, post.id, { text: 'x'.repeat(1001) })).status).toBe(422);
    expect((await comment(await anonymousUser(app), post.id, { text: 'hi' })).body.error.code).toBe('PROFILE_BASICS_REQUIRED');
    const blocked = await userAtLevel(app, 2);
    await app.post(`/users/${blocked.id}/block`, undefined, { token: author.token });
    const refused = await comment(blocked, post.id, { text: 'hi' });
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('POST_NOT_FOUND');
  });

  it("lets the comment's author or the post's author delete; others get 403", async () => {
    const post = await createPost(app, author);
    const first = (await comment(commenter, post.id, { text: 'one' })).body.data;
    const second = (await comment(commenter, post.id, { text: 'two' })).body.data;
    const stranger = await userAtLevel(app, 2);
    const denied = await app.delete(`/comments/${first.id}`, { token: stranger.token });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    expect((await app.delete(`/comments/${first.id}`, { token: commenter.token })).body.data).toEqual({ deleted: true });
    expect((await app.delete(`/comments/${second.id}`, { token: author.token })).body.data).toEqual({ deleted: true });
    expect((await app.delete(`/comments/${second.id}`, { token: author.token })).body.error.code).toBe('COMMENT_NOT_FOUND');
    expect((await app.get(`/posts/${post.id}/comments`, { token: author.token })).body.data.items).toEqual([]);
    expect((await app.get(`/posts/${post.id}`, { token: author.token })).body.data.commentCount).toBe(0);
  });
});

describe('saved posts', () => {
  it('saves idempotently, lists newest first, unsaves, and needs level 2 only', async () => {
    const [first, second] = [await createPost(app, author), await createPost(app, author)];
    const saver = await userAtLevel(app, 2);
    expect((await app.post(`/posts/${first.id}/save`, undefined, { token: saver.token })).body.data).toEqual({ saved: true });
    expect((await app.post(`/posts/${first.id}/save`, undefined, { token: saver.token })).body.data).toEqual({ saved: true });
    await app.post(`/posts/${second.id}/save`, undefined, { token: saver.token });
    const list = await app.get('/users/me/saved-posts', { token: saver.token });
    expect(list.body.data.items.map((c: any) => [c.id, c.viewerSaved])).toEqual([
      [second.id, true],
      [first.id, true],
    ]);
    expect((await app.delete(`/posts/${second.id}/save`, { token: saver.token })).body.data).toEqual({ saved: false });
    expect((await app.delete(`/posts/${second.id}/save`, { token: saver.token })).body.data).toEqual({ saved: false });
    expect((await app.get('/users/me/saved-posts', { token: saver.token })).body.data.items.map((c: any) => c.id)).toEqual([first.id]);
    await app.delete(`/posts/${first.id}`, { token: author.token });
    expect((await app.get('/users/me/saved-posts', { token: saver.token })).body.data.items).toEqual([]);
    expect((await app.post(`/posts/${first.id}/save`, undefined, { token: saver.token })).body.error.code).toBe('POST_NOT_FOUND');
    expect((await app.post(`/posts/${second.id}/save`, undefined, { token: (await anonymousUser(app)).token })).body.error.code).toBe(
      'PROFILE_BASICS_REQUIRED',
    );
  });

  it('reports posts (201) without notifying anyone', async () => {
    const post = await createPost(app, author);
    const before = await app.owner.query('select count(*)::int as n from app.notifications');
    const report = await app.post(`/reports/posts/${post.id}`, { reason: 'misinformation' }, { token: commenter.token });
    expect(report.status).toBe(201);
    expect((await app.owner.query('select count(*)::int as n from app.notifications')).rows[0].n).toBe(before.rows[0].n);
    expect(
      (await app.post('/reports/posts/00000000-0000-4000-8000-000000000000', { reason: 'spam' }, { token: commenter.token })).body.error
        .code,
    ).toBe('POST_NOT_FOUND');
  });
});
