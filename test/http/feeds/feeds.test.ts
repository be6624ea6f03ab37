// Feeds over real HTTP: Home sources by level and their feedContext, tie order, privacy at read
// time (locked posts, unauthorized hub shares, leavers, blocks, deleted posts), profile and hub
// feeds, and paging (bounds, forged cursors, no repeats or skips while posts are being added).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, type TestHub } from '../../helpers/hubs.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { anonymousUser, userAtLevel, type TestUser } from '../../helpers/users.ts';
import { usersAtLevels, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

async function feed(path: string, user?: TestUser, query = '') {
  const response = await app.get(`${path}${query}`, user ? { token: user.token } : {});
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data as { items: any[]; nextCursor: string | null };
}

/** [post id, feedContext] of every card of a feed, all pages. */
async function entries(path: string, user?: TestUser, limit = 50): Promise<[string, string | null][]> {
  const all: [string, string | null][] = [];
  let cursor: string | null = null;
  do {
    const page = await feed(path, user, `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    all.push(...page.items.map((card) => [card.id, card.feedContext] as [string, string | null]));
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

const home = (user?: TestUser) => entries('/posts', user);
const ids = (list: [string, string | null][]) => list.map(([id]) => id);

/**
 * Over 100 users (no posts) that `viewer` follows and that are members of `hub`: Home then reads
 * the followed-author, co-member and friend-interaction sources of a large set (by time, each row
 * tested by an index probe) instead of per user.
 */
async function crowd(viewer: TestUser, hub: TestHub | null) {
  const { rows } = await app.owner.query<{ id: string }>(
    `insert into app.users (username, full_name, terms_accepted_at, terms_version)
     select 'crowd_' || substr(md5(random()::text), 1, 20), 'Crowd', now(), 'test' from generate_series(1, 101)
     returning id`,
  );
  const members = rows.map((row) => row.id);
  await app.owner.query('insert into app.follows (follower_id, followee_id) select $1, unnest($2::uuid[])', [viewer.id, members]);
  if (hub) await app.owner.query('insert into app.hub_memberships (hub_id, user_id) select $1, unnest($2::uuid[])', [hub.id, members]);
}

async function makeDefaultFeedUser(user: TestUser) {
  await app.owner.query('insert into app.default_feed_users (user_id) values ($1)', [user.id]);
}

describe('GET /posts for guests and users with no personal source', () => {
  let defaultUser: TestUser;
  let defaultPublic: string;
  let defaultHubPost: string;
  let strangerPost: string;
  beforeAll(async () => {
    defaultUser = await userAtLevel(app, 4);
    const stranger = await userAtLevel(app, 3);
    await makeDefaultFeedUser(defaultUser);
    const hub = await createHub(app, defaultUser);
    defaultHubPost = (await createPost(app, defaultUser, { visibility: 'public_hub', hubIds: [hub.id] })).id;
    defaultPublic = (await createPost(app, defaultUser)).id;
    strangerPost = (await createPost(app, stranger)).id;
  });

  it('show the default feed users’ public posts, newest first, as default_feed_user', async () => {
    const guest = await home();
    expect(guest).toContainEqual([defaultPublic, 'default_feed_user']);
    expect(ids(guest)).not.toContain(defaultHubPost);
    expect(ids(guest)).not.toContain(strangerPost);
    expect(guest.every(([, context]) => context === 'default_feed_user')).toBe(true);
    // a level-1 token reads as a guest; a level-2 user who follows nobody and has no post too
    expect(await home(await anonymousUser(app))).toEqual(guest);
    expect(await home(await userAtLevel(app, 2))).toEqual(guest);
  });

  it('answer 401 for an invalid token', async () => {
    const response = await app.get('/posts', { token: 'not-a-token' });
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('UNAUTHORIZED');
  });

  it('stop once the user has a personal source, and hide a default user the viewer blocked', async () => {
    const viewer = await userAtLevel(app, 3);
    expect(ids(await home(viewer))).toContain(defaultPublic);
    const own = (await createPost(app, viewer)).id;
    expect(await home(viewer)).toEqual([[own, 'own_post']]);

    const blocker = await userAtLevel(app, 2);
    expect((await app.post(`/users/${defaultUser.id}/block`, undefined, { token: blocker.token })).status).toBe(200);
    expect(ids(await home(blocker))).not.toContain(defaultPublic);
  });
});

describe.each([
  { sets: 'small', large: false },
  { sets: 'large', large: true },
])('GET /posts sources and feedContext (follow and co-member sets $sets)', ({ large }) => {
  let viewer: TestUser;
  let followed: TestUser;
  let coMember: TestUser;
  let followedCoMember: TestUser;
  let stranger: TestUser;
  let outsider: TestUser;
  let hub: TestHub;
  let otherHub: TestHub;
  const post: Record<string, string> = {};

  beforeAll(async () => {
    [viewer, followed, coMember, followedCoMember, stranger, outsider] = await usersAtLevels(app, 4, 4, 4, 4, 3, 4);
    hub = await hubWithMembers(app, viewer, coMember, followedCoMember);
    otherHub = await hubWithMembers(app, outsider, followed);
    for (const target of [followed, followedCoMember]) {
      expect((await app.post(`/users/${target.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
    }
    if (large) await crowd(viewer, hub);

    // In time order (each request its own transaction):
    post.own = (await createPost(app, viewer)).id;
    post.ownInHub = (await createPost(app, viewer, { visibility: 'public_hub', hubIds: [hub.id] })).id;
    post.followed = (await createPost(app, followed, slider)).id;
    post.followedLocked = (await createPost(app, followed, { visibility: 'private_locked_hub', hubIds: [otherHub.id] })).id;
    post.coMember = (await createPost(app, coMember)).id;
    post.coMemberLocked = (await createPost(app, coMember, { visibility: 'private_locked_hub', hubIds: [hub.id] })).id;
    post.followedCoMember = (await createPost(app, followedCoMember)).id;
    post.followedCoMemberInHub = (await createPost(app, followedCoMember, { visibility: 'public_hub', hubIds: [hub.id] })).id;
    post.votedByFollowed = (await createPost(app, stranger, slider)).id;
    expect((await vote(app, followed, post.votedByFollowed as string)).status).toBe(201);
    post.commentedByCoMember = (await createPost(app, stranger)).id;
    expect((await app.post(`/posts/${post.commentedByCoMember}/comments`, { text: 'hi' }, { token: coMember.token })).status).toBe(201);
    post.sharedByFollowed = (await createPost(app, stranger)).id;
    expect((await app.post(`/posts/${post.sharedByFollowed}/share/feed`, undefined, { token: followed.token })).status).toBe(201);
    post.repostedByFollowed = (await createPost(app, stranger)).id;
    post.repost = (
      await app.post(`/posts/${post.repostedByFollowed}/reposts`, { thoughtText: 'mine', visibility: 'public' }, { token: followed.token })
    ).body.data.id;
    post.sharedIntoHub = (await createPost(app, stranger)).id;
    expect((await app.post(`/posts/${post.sharedIntoHub}/share/hubs`, { hubIds: [hub.id] }, { token: coMember.token })).status).toBe(201);
    // what must never arrive
    post.lockedVotedByFollowed = (
      await createPost(app, outsider, { ...slider, visibility: 'private_locked_hub', hubIds: [otherHub.id] })
    ).id;
    expect((await vote(app, followed, post.lockedVotedByFollowed as string)).status).toBe(201);
    post.sharedIntoOtherHub = (await createPost(app, stranger)).id;
    expect(
      (await app.post(`/posts/${post.sharedIntoOtherHub}/share/hubs`, { hubIds: [otherHub.id] }, { token: followed.token })).status,
    ).toBe(201);
    post.strangers = (await createPost(app, stranger)).id;
    post.deleted = (await createPost(app, followed)).id;
    expect((await app.delete(`/posts/${post.deleted}`, { token: followed.token })).status).toBe(200);
  });

  it('list every source once, newest event first, with the context of that event (ties in contract order)', async () => {
    expect(await home(viewer)).toEqual([
      [post.sharedIntoHub, 'shared_to_hub'],
      // a repost and its activity on the source share one time: equal times order by id
      ...[
        [post.repost, 'followed_author'],
        [post.repostedByFollowed, 'friend_interaction'],
      ].sort(([a], [b]) => ((a as string) < (b as string) ? 1 : -1)),
      [post.sharedByFollowed, 'friend_interaction'],
      [post.commentedByCoMember, 'friend_interaction'],
      [post.votedByFollowed, 'friend_interaction'],
      [post.followedCoMemberInHub, 'joined_hub_post'],
      [post.followedCoMember, 'followed_author'],
      [post.coMemberLocked, 'joined_hub_post'],
      [post.coMember, 'hub_co_member_author'],
      [post.followed, 'followed_author'],
      [post.ownInHub, 'own_post'],
      [post.own, 'own_post'],
    ]);
  });

  it('never deliver private_locked_hub posts through following or friend interaction, nor foreign hub shares', async () => {
    const list = ids(await home(viewer));
    for (const hidden of ['followedLocked', 'lockedVotedByFollowed', 'sharedIntoOtherHub', 'strangers', 'deleted']) {
      expect(list, hidden).not.toContain(post[hidden]);
    }
    // the outsider's hub members see the locked post as joined_hub_post, and the hub share
    expect(await home(outsider)).toEqual(
      expect.arrayContaining([
        [post.lockedVotedByFollowed, 'own_post'],
        [post.sharedIntoOtherHub, 'shared_to_hub'],
        [post.followedLocked, 'joined_hub_post'],
      ]),
    );
  });

  it('move a card to its newest event instead of copying it', async () => {
    const [bumper, fan, watcher] = await Promise.all([userAtLevel(app, 3), userAtLevel(app, 2), userAtLevel(app, 2)]);
    for (const target of [bumper, fan]) {
      expect((await app.post(`/users/${target.id}/follow`, undefined, { token: watcher.token })).status).toBe(200);
    }
    const older = (await createPost(app, bumper, slider)).id;
    const newer = (await createPost(app, bumper)).id;
    expect(await home(watcher)).toEqual([
      [newer, 'followed_author'],
      [older, 'followed_author'],
    ]);
    expect((await vote(app, fan, older)).status).toBe(201);
    expect(await home(watcher)).toEqual([
      [older, 'friend_interaction'],
      [newer, 'followed_author'],
    ]);
  });

  it('give the level-2 sources only below level 4', async () => {
    const level2 = await userAtLevel(app, 2);
    expect((await app.post(`/users/${followed.id}/follow`, undefined, { token: level2.token })).status).toBe(200);
    const list = await home(level2);
    expect(list).toContainEqual([post.followed, 'followed_author']);
    expect(list).toContainEqual([post.votedByFollowed, 'friend_interaction']);
    expect(list.every(([, context]) => context === 'followed_author' || context === 'friend_interaction')).toBe(true);
  });

  it('enrich cards with the viewer’s vote state', async () => {
    expect((await vote(app, viewer, post.followed as string)).status).toBe(201);
    const card = (await feed('/posts', viewer)).items.find((item) => item.id === post.followed);
    expect(card.viewerVote.hasVoted).toBe(true);
    expect(card.voteSummary.totalVotes).toBe(1);
  });
});

describe('GET /posts privacy at read time', () => {
  it('drops a leaver’s hub posts and hub shares at once, and shows a joiner historical shares', async () => {
    const [owner, member, sharer, stranger] = await Promise.all([
      userAtLevel(app, 4),
      userAtLevel(app, 4),
      userAtLevel(app, 4),
      userAtLevel(app, 3),
    ]);
    const hub = await hubWithMembers(app, owner, sharer);
    const shared = (await createPost(app, stranger)).id;
    expect((await app.post(`/posts/${shared}/share/hubs`, { hubIds: [hub.id] }, { token: sharer.token })).status).toBe(201);
    const targeted = (await createPost(app, owner, { visibility: 'private_locked_hub', hubIds: [hub.id] })).id;

    await addMember(app, hub, member);
    expect(await home(member)).toEqual(
      expect.arrayContaining([
        [targeted, 'joined_hub_post'],
        [shared, 'shared_to_hub'],
      ]),
    );
    expect((await app.delete(`/hubs/${hub.id}/membership`, { token: member.token })).status).toBe(200);
    const after = ids(await home(member));
    expect(after).not.toContain(targeted);
    expect(after).not.toContain(shared);
  });

  it('does not let an unauthorized hub share bump or page a post', async () => {
    const [viewer, author, sharer, hubOwner] = await Promise.all([
      userAtLevel(app, 4),
      userAtLevel(app, 4),
      userAtLevel(app, 4),
      userAtLevel(app, 4),
    ]);
    const foreignHub = await hubWithMembers(app, hubOwner, sharer);
    for (const target of [author, sharer]) {
      expect((await app.post(`/users/${target.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
    }
    const first = (await createPost(app, author)).id;
    const second = (await createPost(app, author)).id;
    expect((await app.post(`/posts/${first}/share/hubs`, { hubIds: [foreignHub.id] }, { token: sharer.token })).status).toBe(201);
    expect(await home(viewer)).toEqual([
      [second, 'followed_author'],
      [first, 'followed_author'],
    ]);
    // paged one by one, the same order and nothing twice
    expect(await entries('/posts', viewer, 1)).toEqual(await home(viewer));
  });

  it.each([
    { sets: 'small', large: false },
    { sets: 'large', large: true },
  ])('hides blocked users’ posts and interactions both ways (follow and co-member sets $sets)', async ({ large }) => {
    const [viewer, other, stranger] = await Promise.all([userAtLevel(app, 3), userAtLevel(app, 3), userAtLevel(app, 3)]);
    const hubOwner = await userAtLevel(app, 4);
    const member = await userAtLevel(app, 4);
    const hub = await hubWithMembers(app, hubOwner, member);
    if (large) {
      await crowd(viewer, null);
      await crowd(hubOwner, hub);
    }
    expect((await app.post(`/users/${other.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
    expect((await app.post(`/users/${viewer.id}/follow`, undefined, { token: other.token })).status).toBe(200);
    const otherPost = (await createPost(app, other)).id;
    const viewerPost = (await createPost(app, viewer)).id;
    expect(ids(await home(viewer))).toContain(otherPost);
    expect(ids(await home(other))).toContain(viewerPost);

    // a co-member's interaction stops counting once one of them blocks the other
    const strangerPost = (await createPost(app, stranger)).id;
    const memberPost = (await createPost(app, member)).id;
    expect((await app.post(`/posts/${strangerPost}/comments`, { text: 'seen' }, { token: member.token })).status).toBe(201);
    expect(await home(hubOwner)).toEqual(
      expect.arrayContaining([
        [strangerPost, 'friend_interaction'],
        [memberPost, 'hub_co_member_author'],
      ]),
    );
    expect((await app.post(`/users/${member.id}/block`, undefined, { token: hubOwner.token })).status).toBe(200);
    const ownerHome = ids(await home(hubOwner));
    expect(ownerHome).not.toContain(strangerPost);
    expect(ownerHome).not.toContain(memberPost);

    expect((await app.post(`/users/${other.id}/block`, undefined, { token: viewer.token })).status).toBe(200);
    expect(ids(await home(viewer))).not.toContain(otherPost);
    expect(ids(await home(other))).not.toContain(viewerPost);
  });
});

describe('GET /posts paging', () => {
  let viewer: TestUser;
  let author: TestUser;
  let voter: TestUser;
  let posts: string[];
  beforeAll(async () => {
    [viewer, author, voter] = await usersAtLevels(app, 2, 3, 2);
    expect((await app.post(`/users/${author.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
    expect((await app.post(`/users/${voter.id}/follow`, undefined, { token: viewer.token })).status).toBe(200);
    posts = [];
    for (let i = 0; i < 7; i += 1) posts.unshift((await createPost(app, author, slider)).id);
  });

  it('pages with a limit, then says there is no more', async () => {
    const first = await feed('/posts', viewer, '?limit=3');
    expect(first.items.map((card) => card.id)).toEqual(posts.slice(0, 3));
    const second = await feed('/posts', viewer, `?limit=3&cursor=${first.nextCursor}`);
    expect(second.items.map((card) => card.id)).toEqual(posts.slice(3, 6));
    const third = await feed('/posts', viewer, `?limit=3&cursor=${second.nextCursor}`);
    expect(third.items.map((card) => card.id)).toEqual(posts.slice(6));
    expect(third.nextCursor).toBeNull();
    expect((await feed('/posts', viewer)).items).toHaveLength(7);
  });

  it('neither repeats nor skips while posts are added and bumped', async () => {
    const first = await feed('/posts', viewer, '?limit=3');
    const added = (await createPost(app, author)).id;
    expect((await vote(app, voter, posts[5] as string)).status).toBe(201); // bumps an unseen card
    expect((await vote(app, voter, posts[0] as string)).status).toBe(201); // bumps a seen card
    const rest: string[] = [];
    let cursor = first.nextCursor;
    while (cursor) {
      const page = await feed('/posts', viewer, `?limit=3&cursor=${cursor}`);
      rest.push(...page.items.map((card) => card.id));
      cursor = page.nextCursor;
    }
    expect([...first.items.map((card) => card.id), ...rest]).toEqual(posts);
    // a fresh read shows the new post and both bumps on top
    expect(ids(await home(viewer)).slice(0, 3)).toEqual([posts[0], posts[5], added]);
  });

  it('refuses limits out of range and cursors it did not issue with 422', async () => {
    for (const query of [
      '?limit=0',
      '?limit=51',
      '?limit=abc',
      '?cursor=!!!',
      `?cursor=${cursorOf(['x', 'y'])}`,
      `?cursor=${cursorOf([1, 2, 'not-a-uuid'])}`,
      `?cursor=${cursorOf([1, 2])}`,
      `?cursor=${cursorOf([1, 5, '00000000-0000-0000-0000-000000000000'])}`,
      `?cursor=${cursorOf([1.5, 1, '00000000-0000-0000-0000-000000000000'])}`,
      `?cursor=${cursorOf([-1, -2, '00000000-0000-0000-0000-000000000000'])}`,
      `?cursor=${cursorOf([1e300, 1, '00000000-0000-0000-0000-000000000000'])}`,
    ]) {
      for (const path of ['/posts', `/users/${author.id}/feed`]) {
        const response = await app.get(`${path}${query}`, { token: viewer.token });
        expect(response.status, `${path}${query}`).toBe(422);
        expect(response.body.error.code).toBe('VALIDATION_FAILED');
      }
    }
    expect((await feed('/posts', viewer, '?limit=50')).items).toHaveLength(7 + 1);
  });
});

describe('GET /users/{userId}/feed', () => {
  let author: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  let hub: TestHub;
  const post: Record<string, string> = {};
  beforeAll(async () => {
    [author, member, outsider] = await usersAtLevels(app, 4, 4, 4);
    const other = await userAtLevel(app, 3);
    hub = await hubWithMembers(app, author, member);
    post.original = (await createPost(app, author, slider)).id;
    post.locked = (await createPost(app, author, { visibility: 'private_locked_hub', hubIds: [hub.id] })).id;
    post.others = (await createPost(app, other)).id;
    post.repost = (
      await app.post(`/posts/${post.others}/reposts`, { thoughtText: 'my take', visibility: 'public' }, { token: author.token })
    ).body.data.id;
    post.sharedTwice = (await createPost(app, other)).id;
    post.hubShared = (await createPost(app, other)).id;
    expect((await app.post(`/posts/${post.sharedTwice}/share/feed`, undefined, { token: author.token })).status).toBe(201);
    expect((await app.post(`/posts/${post.hubShared}/share/hubs`, { hubIds: [hub.id] }, { token: author.token })).status).toBe(201);
    expect((await app.post(`/posts/${post.sharedTwice}/share/feed`, undefined, { token: author.token })).status).toBe(201);
    expect((await vote(app, member, post.original as string)).status).toBe(201);
  });

  it('lists originals, reposts (not collapsed), feed shares once at the newest, no locked posts, no context', async () => {
    const path = `/users/${author.id}/feed`;
    const expected = [post.sharedTwice, post.repost, post.original];
    expect(await entries(path)).toEqual(expected.map((id) => [id, null]));
    expect(await entries(path, outsider, 1)).toEqual(expected.map((id) => [id, null]));
    // a hub share counts only for active members of that hub
    expect(ids(await entries(path, member))).toEqual([post.sharedTwice, post.hubShared, post.repost, post.original]);
  });

  it('enriches viewerVote with a token', async () => {
    const path = `/users/${author.id}/feed`;
    const asMember = (await feed(path, member)).items.find((card) => card.id === post.original);
    expect(asMember.viewerVote.hasVoted).toBe(true);
    expect(asMember.voteSummary.totalVotes).toBe(1);
    const asGuest = (await feed(path)).items.find((card) => card.id === post.original);
    expect(asGuest.viewerVote.hasVoted).toBe(false);
    expect(asGuest.voteSummary).toBeNull();
  });

  it('answers 404 for unknown or blocked users and 401 for an invalid token', async () => {
    expect((await app.get('/users/00000000-0000-0000-0000-000000000000/feed')).body.error.code).toBe('USER_NOT_FOUND');
    expect((await app.get('/users/not-a-uuid/feed')).status).toBe(404);
    expect((await app.get(`/users/${author.id}/feed`, { token: 'bad' })).status).toBe(401);
    const blocker = await userAtLevel(app, 2);
    expect((await app.post(`/users/${author.id}/block`, undefined, { token: blocker.token })).status).toBe(200);
    const blocked = await app.get(`/users/${author.id}/feed`, { token: blocker.token });
    expect(blocked.status).toBe(404);
    expect(blocked.body.error.code).toBe('USER_NOT_FOUND');
  });
});

describe('GET /hubs/{hubId}/feed', () => {
  let owner: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  let hub: TestHub;
  const post: Record<string, string> = {};
  beforeAll(async () => {
    [owner, member, outsider] = await usersAtLevels(app, 4, 4, 4);
    const stranger = await userAtLevel(app, 3);
    hub = await hubWithMembers(app, owner, member);
    post.targeted = (await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [hub.id] })).id;
    post.locked = (await createPost(app, member, { visibility: 'private_locked_hub', hubIds: [hub.id] })).id;
    post.shared = (await createPost(app, stranger)).id;
    expect((await app.post(`/posts/${post.shared}/share/hubs`, { hubIds: [hub.id] }, { token: member.token })).status).toBe(201);
    post.elsewhere = (await createPost(app, stranger)).id;
    post.deleted = (await createPost(app, owner, { visibility: 'public_hub', hubIds: [hub.id] })).id;
    expect((await app.delete(`/posts/${post.deleted}`, { token: owner.token })).status).toBe(200);
    // an outsider's vote counts globally only; the member's in the hub scope too
    expect((await vote(app, outsider, post.targeted as string)).status).toBe(201);
    expect((await vote(app, member, post.targeted as string)).status).toBe(201);
  });

  it('lists targeted and shared posts once, newest placement first, with hub-scoped vote summaries', async () => {
    const path = `/hubs/${hub.id}/feed`;
    expect(await entries(path, member)).toEqual([
      [post.shared, 'shared_to_hub'],
      [post.locked, 'joined_hub_post'],
      [post.targeted, 'joined_hub_post'],
    ]);
    const card = (await feed(path, owner)).items.find((item) => item.id === post.targeted);
    expect(card.voteSummary.totalVotes).toBe(1);
    expect((await app.get(`/posts/${post.targeted}`, { token: owner.token })).body.data.voteSummary.totalVotes).toBe(2);

    // sharing again moves the card up instead of copying it
    expect((await app.post(`/posts/${post.targeted}/share/hubs`, { hubIds: [hub.id] }, { token: member.token })).status).toBe(201);
    expect(await entries(path, member, 1)).toEqual([
      [post.targeted, 'shared_to_hub'],
      [post.shared, 'shared_to_hub'],
      [post.locked, 'joined_hub_post'],
    ]);
  });

  it('is for active members only', async () => {
    const path = `/hubs/${hub.id}/feed`;
    const notMember = await app.get(path, { token: outsider.token });
    expect(notMember.status).toBe(403);
    expect(notMember.body.error.code).toBe('HUB_MEMBERSHIP_REQUIRED');
    const level3 = await userAtLevel(app, 3);
    expect((await app.get(path, { token: level3.token })).body.error.code).toBe('HUB_READINESS_REQUIRED');
    expect((await app.get(path)).status).toBe(401);
    expect((await app.get('/hubs/00000000-0000-0000-0000-000000000000/feed', { token: member.token })).body.error.code).toBe(
      'HUB_NOT_FOUND',
    );
    expect((await app.get(`${path}?limit=51`, { token: member.token })).status).toBe(422);
    expect((await app.get(`${path}?cursor=${cursorOf(['x', 'y'])}`, { token: member.token })).status).toBe(422);
  });
});
