// The requests of the scale benchmark (test/bench/scale.ts), one per hot dimension and request:
// its goal name and how to make it in a world (the subjects of test/bench/scale-data.ts).
import { benchId, hotNameWord, inviteToken, type ScaleSize, space, subject as s } from './scale-data.ts';

export interface Request {
  label: string;
  path: string;
  token?: string;
}

/** What a request needs of a world: its size and tokens of its subject users. */
export interface WorldRef {
  size: ScaleSize;
  token: (userNumber: number) => string;
}

/** One request kind: its goal name and how to make it in a world. */
export interface Kind {
  goal: string;
  request: (world: WorldRef) => Request;
}

const post = (n: number) => benchId(space.post, n);
const hub1 = benchId(space.hub, s.hub);
const viewer = (w: WorldRef) => w.token(s.viewer);
/** The discussion with many messages: that of the newest hub post. */
const bigDiscussion = (w: WorldRef) => benchId(space.discussion, s.hubPosts + w.size.n);
const get = (label: string, pathname: string, token?: string): Request => ({ label, path: pathname, ...(token ? { token } : {}) });

// q words: a first name matches about 1 person in 40 (scale-data.ts); nobody is called zzzz.
export const allKinds: Kind[] = [
  { goal: 'comments_page1', request: (w) => get('comments page 1', `/posts/${post(s.commentedPost)}/comments?limit=20`, viewer(w)) },
  { goal: 'comments_post_card', request: (w) => get('post card (commentCount)', `/posts/${post(s.commentedPost)}`, viewer(w)) },
  {
    goal: 'replies_page1',
    request: (w) =>
      get(
        'replies page 1',
        `/posts/${post(s.repliedPost)}/comments?parentCommentId=${benchId(space.comment, s.rootComment)}&limit=20`,
        viewer(w),
      ),
  },
  {
    goal: 'votes_received_public_profile',
    request: () => get('votes received: by-username (no token)', `/users/by-username/user${s.votesAuthor}`),
  },
  { goal: 'votes_received_my_profile', request: (w) => get('votes received: me/profile', '/users/me/profile', w.token(s.votesAuthor)) },
  {
    goal: 'posts_written_public_profile',
    request: () => get('posts written: by-username (no token)', `/users/by-username/user${s.prolificAuthor}`),
  },
  {
    goal: 'posts_written_profile_feed',
    request: () => get('posts written: profile feed', `/users/${benchId(space.user, s.prolificAuthor)}/feed`),
  },
  { goal: 'followers_public_profile', request: () => get('followers: by-username (no token)', `/users/by-username/user${s.star}`) },
  { goal: 'followers_list', request: (w) => get('followers list', `/users/${benchId(space.user, s.star)}/followers?limit=20`, viewer(w)) },
  {
    goal: 'followers_q_match',
    request: (w) => get('followers q=anna', `/users/${benchId(space.user, s.star)}/followers?limit=20&q=anna`, viewer(w)),
  },
  {
    goal: 'followers_q_none',
    request: (w) => get('followers q=zzzz', `/users/${benchId(space.user, s.star)}/followers?limit=20&q=zzzz`, viewer(w)),
  },
  { goal: 'following_public_profile', request: () => get('following: by-username (no token)', `/users/by-username/user${s.fan}`) },
  { goal: 'following_list', request: (w) => get('following list', `/users/${benchId(space.user, s.fan)}/following?limit=20`, viewer(w)) },
  {
    goal: 'following_q_match',
    request: (w) => get('following q=anna', `/users/${benchId(space.user, s.fan)}/following?limit=20&q=anna`, viewer(w)),
  },
  {
    goal: 'following_q_none',
    request: (w) => get('following q=zzzz', `/users/${benchId(space.user, s.fan)}/following?limit=20&q=zzzz`, viewer(w)),
  },
  { goal: 'hub_members_list', request: (w) => get('members list', `/hubs/${hub1}/members?limit=20`, viewer(w)) },
  { goal: 'hub_members_q_match', request: (w) => get('members q=anna', `/hubs/${hub1}/members?limit=20&q=anna`, viewer(w)) },
  { goal: 'hub_members_q_none', request: (w) => get('members q=zzzz', `/hubs/${hub1}/members?limit=20&q=zzzz`, viewer(w)) },
  { goal: 'hub_members_role_admin', request: (w) => get('members role=admin', `/hubs/${hub1}/members?limit=20&role=admin`, viewer(w)) },
  { goal: 'hub_members_hub_card', request: (w) => get('GET /hubs/{hubId} (memberCount, activeUsers24h)', `/hubs/${hub1}`, viewer(w)) },
  {
    goal: 'hub_members_invite_link',
    request: (w) => get('invite link preview (memberCount)', `/hub-invite-links/${inviteToken}`, viewer(w)),
  },
  { goal: 'hub_invitations_list', request: (w) => get('invitations list', `/hubs/${hub1}/invitations?limit=20`, viewer(w)) },
  {
    goal: 'hub_join_requests_list',
    request: (w) => get('join requests list', `/hubs/${hub1}/join-requests?limit=20`, w.token(s.hubOwner)),
  },
  { goal: 'hub_feed_page1', request: (w) => get('hub feed page 1', `/hubs/${hub1}/feed`, viewer(w)) },
  { goal: 'hub_discussions_page1', request: (w) => get('discussions page 1', `/hubs/${hub1}/discussions?limit=20`, viewer(w)) },
  {
    goal: 'discussion_messages_page1',
    request: (w) => get('messages page 1', `/hubs/${hub1}/discussions/${bigDiscussion(w)}/messages?limit=20`, viewer(w)),
  },
  {
    goal: 'thread_replies_page1',
    request: (w) =>
      get(
        'thread replies page 1',
        `/hubs/${hub1}/discussions/${bigDiscussion(w)}/messages?limit=20&parentMessageId=${benchId(space.message, 1)}`,
        viewer(w),
      ),
  },
  { goal: 'saved_posts_page1', request: (w) => get('saved posts page 1', '/users/me/saved-posts?limit=20', w.token(s.saver)) },
  {
    goal: 'saved_discussions_page1',
    request: (w) => get('saved discussions page 1', '/users/me/saved-discussions?limit=20', w.token(s.saver)),
  },
  { goal: 'reposts_frames_page1', request: (w) => get('frames page 1', `/posts/${post(s.repostedPost)}/frames?limit=20`, viewer(w)) },
  { goal: 'reposts_post_card', request: (w) => get('post card (repostCount)', `/posts/${post(s.repostedPost)}`, viewer(w)) },
  { goal: 'my_hubs_page1', request: (w) => get('my hubs page 1', '/users/me/hubs?limit=20', w.token(s.joiner)) },
  {
    goal: 'hubs_of_post_vote_hubs',
    request: (w) => get('GET /posts/{postId}/vote/hubs', `/posts/${post(s.sharedPost)}/vote/hubs`, viewer(w)),
  },
  // The votes author has a post_voted notification per vote received (1,000 or 1,000,000), unread.
  {
    goal: 'notifications_page1',
    request: (w) => get('notifications page 1 (unreadCount)', '/notifications?limit=20', w.token(s.votesAuthor)),
  },
  {
    goal: 'notifications_unread_page1',
    request: (w) => get('notifications unreadOnly page 1', '/notifications?limit=20&unreadOnly=true', w.token(s.votesAuthor)),
  },
  { goal: 'users_search_name', request: () => get('people search q=anna', '/search/users?q=anna') },
  { goal: 'users_search_handle', request: () => get('people search q=user12', '/search/users?q=user12') },
  { goal: 'users_search_none', request: () => get('people search q=zzzz', '/search/users?q=zzzz') },
  { goal: 'hubs_search_word', request: (w) => get('hub search q=garden', '/search/hubs?q=garden', viewer(w)) },
  { goal: 'hubs_search_none', request: (w) => get('hub search q=zzzz', '/search/hubs?q=zzzz', viewer(w)) },
  { goal: 'hubs_search_recommended', request: (w) => get('hub search (recommended)', '/search/hubs', viewer(w)) },
];

/**
 * The requests of the hot shape (scale-data.ts): every kind but the following list's (in the hot
 * shape the star has every follow, the fan one page), plus the people search for the word every
 * name has.
 */
export const hotKinds: Kind[] = [
  ...allKinds.filter((kind) => !kind.goal.startsWith('following_')),
  { goal: 'users_search_common_word', request: () => get(`people search q=${hotNameWord} (every name)`, `/search/users?q=${hotNameWord}`) },
];
