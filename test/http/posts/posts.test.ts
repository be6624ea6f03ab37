// Posts, reposts and shares: every numbered rule of spec 2.3 and contract section 7.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub, storedNotifications, storedPostNotifications } from '../../helpers/hubs.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { uploadAsset } from '../../helpers/uploads.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let author: TestUser;
let reader: TestUser;
beforeAll(async () => {
  [app, author, reader] = await appWithUsers(4, 4);
});
afterAll(() => app.close());

describe('POST /posts', () => {
  it('creates a frame with a reusable article record, shown on the card (rules 1, 3)', async () => {
    const assetId = await uploadAsset(app, author, 'post_image');
    const card = await createPost(app, author, {
      article: { kind: 'media', title: 'Photo essay', assetIds: [assetId] },
      thoughtText: 'My take',
      ...slider,
    });
    expect(card).toMatchObject({
      author: { id: author.id, username: author.username },
      article: { kind: 'media', title: 'Photo essay', url: null, text: null, media: [{ assetId, url: expect.any(String) }] },
      thoughtText: 'My take',
      sliderText: slider.sliderText,
      slider: slider.slider,
      visibility: 'public',
      sourcePostId: null,
      sourcePost: null,
      repostCount: 0,
      commentCount: 0,
      viewerVote: { hasVoted: false, votedAt: null },
      voteSummary: { totalVotes: 0, resultsVisible: false, leftCount: null, neutralCount: null, rightCount: null },
      voteDistribution: [],
      viewerSaved: false,
      feedContext: null,
    });
    expect(card.createdAt).toMatch(/\.\d{3}Z$/);
    const { rows } = await app.owner.query('select a.kind from app.posts p join app.articles a on a.id = p.article_id where p.id = $1', [
      card.id,
    ]);
    expect(rows).toEqual([{ kind: 'media' }]);
    expect(await fetch(card.article.media[0].url).then((r) => r.status)).toBe(200);
    // The reader sees the same card without vote results (not voted, not the author).
    const seen = await app.get(`/posts/${card.id}`, { token: reader.token });
    expect(seen.body.data).toMatchObject({ id: card.id, voteSummary: null, voteDistribution: null });
  });

  it('needs content, a complete slider, and sane fields (422, nothing created)', async () => {
    const before = await app.owner.query('select count(*)::int as n from app.posts');
    const cases: [Record<string, unknown>, string][] = [
      [{ visibility: 'public' }, 'thoughtText'],
      [{ visibility: 'public', sliderText: 'Only a prompt' }, 'slider'],
      [{ visibility: 'public', slider: { leftLabel: 'a', rightLabel: 'b' } }, 'sliderText'],
      [{ visibility: 'public', ...slider, sliderText: 'x'.repeat(261) }, 'sliderText'],
      [{ visibility: 'public', thoughtText: 'x'.repeat(2001) }, 'thoughtText'],
      [{ visibility: 'public', ...slider, slider: { leftLabel: '', rightLabel: 'b' } }, 'slider.leftLabel'],
      [{ visibility: 'public', ...slider, slider: { leftLabel: 'a', rightLabel: 'x'.repeat(41) } }, 'slider.rightLabel'],
      [{ visibility: 'secret', thoughtText: 'x' }, 'visibility'],
      [{ visibility: 'public', thoughtText: 'x', sliderTitle: 'no such field' }, 'sliderTitle'],
      [{ visibility: 'public', article: { kind: 'link' } }, 'article.url'],
      [{ visibility: 'public', article: { kind: 'link', url: 'javascript:alert(1)' } }, 'article.url'],
      [{ visibility: 'public', thoughtText: 'x', hubIds: ['00000000-0000-4000-8000-000000000000'] }, 'hubIds'],
      [{ visibility: 'public_hub', thoughtText: 'x' }, 'hubIds'],
      [{ visibility: 'public', article: { kind: 'media', assetIds: ['00000000-0000-4000-8000-000000000000'] } }, 'article.assetIds'],
    ];
    for (const [body, field] of cases) {
      const response = await app.post('/posts', body, { token: author.token });
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error.details.fields, JSON.stringify(body)).toHaveProperty([field]);
    }
    const after = await app.owner.query('select count(*)::int as n from app.posts');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('gates public posts on level 3 and hub posts on level 4 with active membership of every hub', async () => {
    const basics = await userAtLevel(app, 2);
    expect((await app.post('/posts', { thoughtText: 'x', visibility: 'public' }, { token: basics.token })).body.error.code).toBe(
      'PHONE_VERIFICATION_REQUIRED',
    );
    const phone = await userAtLevel(app, 3);
    expect((await app.post('/posts', { thoughtText: 'x', visibility: 'public' }, { token: phone.token })).status).toBe(201);
    const hub = await createHub(app, author);
    const hubPost = await app.post('/posts', { thoughtText: 'x', visibility: 'public_hub', hubIds: [hub.id] }, { token: phone.token });
    expect(hubPost.status).toBe(403);
    expect(hubPost.body.error.code).toBe('HUB_READINESS_REQUIRED');
    const notMember = await app.post('/posts', { thoughtText: 'x', visibility: 'public_hub', hubIds: [hub.id] }, { token: reader.token });
    expect(notMember.status).toBe(403);
    expect(notMember.body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    const unknownHub = await app.post(
      '/posts',
      { thoughtText: 'x', visibility: 'public_hub', hubIds: ['00000000-0000-4000-8000-000000000000'] },
      { token: author.token },
    );
    expect(unknownHub.body.error.code).toBe('HUB_NOT_FOUND');
  });

  it('notifies members of target hubs with hub_post_created, except the author and muted members', async () => {
    const hub = await createHub(app, author);
    const [member, muted] = [await userAtLevel(app, 4), await userAtLevel(app, 4)];
    await addMember(app, hub, member);
    await addMember(app, hub, muted);
    await app.patch(`/hubs/${hub.id}/notification-settings`, { contentMuted: true }, { token: muted.token });
    const card = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
    await app.runJobs();
    expect(await storedNotifications(app, member.id, 'hub_post_created')).toEqual([
      { type: 'hub_post_created', actor_id: author.id, hub_id: hub.id, invitation_id: null, join_request_id: null },
    ]);
    expect(await storedNotifications(app, muted.id, 'hub_post_created')).toEqual([]);
    expect(await storedNotifications(app, author.id, 'hub_post_created')).toEqual([]);
    const discussions = await app.owner.query('select hub_id from app.hub_discussions where post_id = $1', [card.id]);
    expect(discussions.rows).toEqual([{ hub_id: hub.id }]);
  });
});

describe('reposts (rules 4-9)', () => {
  it('creates an independent frame with its own slider and pools, counted on the source', async () => {
    const original = await createPost(app, author, {
      article: { kind: 'link', url: 'https://example.com/story', title: 'Story' },
      ...slider,
    });
    const repost = await app.post(
      `/posts/${original.id}/reposts`,
      { thoughtText: 'Look at this', visibility: 'public' },
      { token: reader.token },
    );
    expect(repost.status).toBe(201);
    expect(repost.body.data).toMatchObject({
      article: null,
      sourcePostId: original.id,
      sourcePost: {
        id: original.id,
        article: { kind: 'link', url: 'https://example.com/story' },
        sliderText: slider.sliderText,
        slider: slider.slider,
      },
      slider: null,
    });
    // Rule 5: not votable without its own slider, even though the source has one.
    const noSlider = await vote(app, author, repost.body.data.id);
    expect(noSlider.status).toBe(409);
    expect(noSlider.body.error.code).toBe('POST_NOT_VOTABLE');
    // Its own slider has its own pool.
    const withSlider = await app.post(`/posts/${original.id}/reposts`, { ...slider, visibility: 'public' }, { token: reader.token });
    await vote(app, author, withSlider.body.data.id, 'right');
    expect((await app.get(`/posts/${original.id}/vote/summary`, { token: author.token })).body.data.totalVotes).toBe(0);
    expect((await app.get(`/posts/${withSlider.body.data.id}/vote/summary`, { token: author.token })).body.data.totalVotes).toBe(1);
    // Rule 8: the source counts active reposts only.
    expect((await app.get(`/posts/${original.id}`, { token: reader.token })).body.data.repostCount).toBe(2);
    await app.delete(`/posts/${withSlider.body.data.id}`, { token: reader.token });
    expect((await app.get(`/posts/${original.id}`, { token: reader.token })).body.data.repostCount).toBe(1);
  });

  it('refuses reposts of reposts, articles on reposts, and reposts of private_locked_hub posts', async () => {
    const original = await createPost(app, author);
    const repost = await app.post(`/posts/${original.id}/reposts`, { thoughtText: 'r', visibility: 'public' }, { token: reader.token });
    const again = await app.post(
      `/posts/${repost.body.data.id}/reposts`,
      { thoughtText: 'rr', visibility: 'public' },
      { token: author.token },
    );
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('REPOST_NOT_ALLOWED');
    const article = await app.post(
      `/posts/${original.id}/reposts`,
      { thoughtText: 'r', visibility: 'public', article: { kind: 'text', text: 't' } },
      { token: reader.token },
    );
    expect(article.status).toBe(422);
    expect(article.body.error.details.fields).toHaveProperty('article');
    const hub = await hubWithMembers(app, author, reader);
    const locked = await createPost(app, author, { visibility: 'private_locked_hub', hubIds: [hub.id] });
    const lockedRepost = await app.post(
      `/posts/${locked.id}/reposts`,
      { thoughtText: 'r', visibility: 'private_locked_hub', hubIds: [hub.id] },
      { token: reader.token },
    );
    expect(lockedRepost.status).toBe(409);
    expect(lockedRepost.body.error.code).toBe('REPOST_NOT_ALLOWED');
  });

  it('treats an empty repost body as a feed share (no frame, no repost count)', async () => {
    const original = await createPost(app, author);
    const share = await app.post(`/posts/${original.id}/reposts`, {}, { token: reader.token });
    expect(share.status).toBe(201);
    expect(share.body.data).toEqual({ shareId: expect.any(String), postId: original.id, sharedAt: expect.any(String) });
    expect((await app.get(`/posts/${original.id}`, { token: reader.token })).body.data.repostCount).toBe(0);
    const frames = await app.owner.query('select count(*)::int as n from app.posts where source_post_id = $1', [original.id]);
    expect(frames.rows[0].n).toBe(0);
  });

  it('shows sourcePost: null once the source is deleted, keeping the repost', async () => {
    const original = await createPost(app, author);
    const repost = await app.post(`/posts/${original.id}/reposts`, { thoughtText: 'r', visibility: 'public' }, { token: reader.token });
    await app.delete(`/posts/${original.id}`, { token: author.token });
    const card = await app.get(`/posts/${repost.body.data.id}`, { token: reader.token });
    expect(card.body.data).toMatchObject({ sourcePostId: original.id, sourcePost: null });
  });
});

describe('shares (rules 10-12)', () => {
  it('feed share is repeatable, points at the exact frame, and notifies that frame owner', async () => {
    const [author, reader] = [await userAtLevel(app, 3), await userAtLevel(app, 3)];
    const original = await createPost(app, author);
    const repost = await app.post(`/posts/${original.id}/reposts`, { thoughtText: 'r', visibility: 'public' }, { token: reader.token });
    const sharer = await userAtLevel(app, 2);
    const first = await app.post(`/posts/${repost.body.data.id}/share/feed`, undefined, { token: sharer.token });
    const second = await app.post(`/posts/${repost.body.data.id}/share/feed`, undefined, { token: sharer.token });
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.body.data.shareId).not.toBe(second.body.data.shareId);
    expect(first.body.data.postId).toBe(repost.body.data.id);
    // One row per share, to the owner of the shared frame (the reposter), naming the sharer and that frame.
    const shared = { actor_id: sharer.id, post_id: repost.body.data.id, comment_id: null, hub_id: null };
    expect(await storedPostNotifications(app, reader.id, 'post_shared_to_feed')).toEqual([shared, shared]);
    expect(await storedPostNotifications(app, author.id, 'post_shared_to_feed')).toEqual([]);
    await app.post(`/posts/${original.id}/share/feed`, undefined, { token: author.token });
    expect(await storedPostNotifications(app, author.id, 'post_shared_to_feed')).toEqual([]);
  });

  it('hub share places the post (no new frame), opens the discussion, and notifies members except the sharer', async () => {
    const hub = await createHub(app, reader);
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const post = await createPost(app, author);
    const share = await app.post(`/posts/${post.id}/share/hubs`, { hubIds: [hub.id] }, { token: reader.token });
    expect(share.status).toBe(201);
    expect(share.body.data).toEqual({ postId: post.id, hubIds: [hub.id] });
    await app.runJobs();
    expect(await storedPostNotifications(app, member.id, 'post_shared_to_hub')).toEqual([
      { actor_id: reader.id, post_id: post.id, comment_id: null, hub_id: hub.id },
    ]);
    expect(await storedPostNotifications(app, reader.id, 'post_shared_to_hub')).toEqual([]);
    expect(await storedPostNotifications(app, author.id, 'post_shared_to_hub')).toEqual([]);
    expect(
      (await app.owner.query('select 1 from app.hub_discussions where hub_id = $1 and post_id = $2', [hub.id, post.id])).rowCount,
    ).toBe(1);
    const notMember = await app.post(`/posts/${post.id}/share/hubs`, { hubIds: [hub.id] }, { token: author.token });
    expect(notMember.body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
  });

  it('gives public posts a share link and refuses it, hub shares and feed shares for private_locked_hub posts', async () => {
    const post = await createPost(app, author, { thoughtText: 'Share me' });
    const link = await app.get(`/posts/${post.id}/share-link`, { token: reader.token });
    expect(link.body.data).toEqual({
      url: `https://opinion.example/p/${post.id}`,
      shareText: `Share me https://opinion.example/p/${post.id}`,
    });
    const hub = await createHub(app, author);
    const locked = await createPost(app, author, { visibility: 'private_locked_hub', hubIds: [hub.id] });
    for (const response of [
      await app.get(`/posts/${locked.id}/share-link`, { token: author.token }),
      await app.post(`/posts/${locked.id}/share/hubs`, { hubIds: [hub.id] }, { token: author.token }),
      await app.post(`/posts/${locked.id}/share/feed`, undefined, { token: author.token }),
    ]) {
      expect(response.status).toBe(409);
      expect(response.body.error.code).toBe('SHARE_NOT_ALLOWED');
    }
  });
});

describe('frames and deletion (rule 13)', () => {
  it('lists the original frame then its direct reposts', async () => {
    const original = await createPost(app, author);
    const r1 = await app.post(`/posts/${original.id}/reposts`, { thoughtText: 'one', visibility: 'public' }, { token: reader.token });
    const r2 = await app.post(`/posts/${original.id}/reposts`, { thoughtText: 'two', visibility: 'public' }, { token: author.token });
    const frames = await app.get(`/posts/${r1.body.data.id}/frames`, { token: reader.token });
    expect(frames.body.data.items.map((c: any) => c.id)).toEqual([original.id, r2.body.data.id, r1.body.data.id]);
    const paged = await app.get(`/posts/${original.id}/frames?limit=2`, { token: reader.token });
    const rest = await app.get(`/posts/${original.id}/frames?limit=2&cursor=${paged.body.data.nextCursor}`, { token: reader.token });
    expect([...paged.body.data.items, ...rest.body.data.items].map((c: any) => c.id)).toEqual([
      original.id,
      r2.body.data.id,
      r1.body.data.id,
    ]);
  });

  it('pages frames by keyset: a repost added between two pages repeats and skips nothing', async () => {
    const original = await createPost(app, author);
    const repost = async (text: string) =>
      (await app.post(`/posts/${original.id}/reposts`, { thoughtText: text, visibility: 'public' }, { token: reader.token })).body.data
        .id as string;
    const r1 = await repost('one');
    const r2 = await repost('two');
    const r3 = await repost('three');
    const first = await app.get(`/posts/${original.id}/frames?limit=2`, { token: reader.token });
    expect(first.body.data.items.map((c: any) => c.id)).toEqual([original.id, r3]);
    await repost('four, added between the pages');
    const second = await app.get(`/posts/${original.id}/frames?limit=2&cursor=${first.body.data.nextCursor}`, { token: reader.token });
    expect(second.body.data.items.map((c: any) => c.id)).toEqual([r2, r1]);
    expect(second.body.data.nextCursor).toBeNull();

    // A page that ends on the original continues with every repost, the newest first.
    const head = await app.get(`/posts/${original.id}/frames?limit=1`, { token: reader.token });
    expect(head.body.data.items.map((c: any) => c.id)).toEqual([original.id]);
    const r5 = await repost('five, added after the original was paged');
    const tail = await app.get(`/posts/${original.id}/frames?limit=50&cursor=${head.body.data.nextCursor}`, { token: reader.token });
    expect(tail.body.data.items.map((c: any) => c.id).slice(0, 1)).toEqual([r5]);
    expect(tail.body.data.items.map((c: any) => c.id)).toHaveLength(5);
    expect(tail.body.data.items.map((c: any) => c.id)).not.toContain(original.id);
  });

  it('answers 422 to a frames cursor it did not issue, however it decodes', async () => {
    const original = await createPost(app, author);
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const forged of [
      cursor([1]), // the former offset cursor
      cursor([0, 1_700_000_000_000_000]),
      cursor([2, 1_700_000_000_000_000, original.id]),
      cursor([0, 1.5, original.id]),
      cursor([0, '1700000000000000', original.id]),
      cursor([0, 1_700_000_000_000_000, 'not-a-uuid']),
      cursor([0, 1_700_000_000_000_000, original.id, 'extra']),
      'not base64 json',
    ]) {
      const response = await app.get(`/posts/${original.id}/frames?cursor=${encodeURIComponent(forged)}`, { token: reader.token });
      expect(response.status, forged).toBe(422);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
      expect(response.body.error.details.fields).toHaveProperty('cursor');
    }
  });

  it('lets only the author delete, and a deleted post answers 404 everywhere', async () => {
    const post = await createPost(app, author, slider);
    const denied = await app.delete(`/posts/${post.id}`, { token: reader.token });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    expect((await app.delete(`/posts/${post.id}`, { token: author.token })).body.data).toEqual({ deleted: true });
    for (const response of [
      await app.get(`/posts/${post.id}`, { token: author.token }),
      await vote(app, reader, post.id),
      await app.delete(`/posts/${post.id}`, { token: author.token }),
    ]) {
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('POST_NOT_FOUND');
    }
  });
});
