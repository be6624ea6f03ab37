// Feeds: GET /posts (Home), GET /users/{userId}/feed (profile), GET /hubs/{hubId}/feed (spec 2.8,
// 4.4; contract section 7 "Feeds"). Which frames a viewer gets is decided in SQL (db/sql/feeds.sql).
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { pageSchema } from '../http/paging.ts';
import { postCard } from '../posts/card.ts';
import { feedQuery, readFeedPage } from './page.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Feeds';
const paging =
  'Newest first, default 20, max 50. The opaque cursor remembers when the first page was read: later pages ignore ' +
  'events after that moment, so cards neither repeat nor skip while posts are being added; pull to refresh (no cursor) ' +
  'to see newer ones. A cursor this server did not issue is 422.';

export const endpoints = [
  endpoint({
    method: 'get',
    path: '/posts',
    tag,
    summary: 'Home feed',
    description:
      'Optional token: without one, or with a level-1 (anonymous) token, the public posts of the default feed users ' +
      "(visibility public). From level 2: own posts, followed users' posts (not private_locked_hub), and public/public_hub " +
      'posts followed users voted on, commented on, reposted or shared to their feed. At level 4 also: posts targeted to ' +
      "hubs where the viewer is an active member (private_locked_hub included), shares into those hubs, co-members' " +
      'public/public_hub posts and what co-members interacted with. A user with no personal source (follows nobody, no ' +
      'post, no active hub) gets the default feed users. One card per post frame, placed at its newest event the viewer ' +
      "may see now; feedContext names that event's source (ties: own_post, joined_hub_post, shared_to_hub, " +
      'followed_author, hub_co_member_author, friend_interaction, default_feed_user). Membership, follows and blocks are ' +
      `read on every request. ${paging}`,
    auth: 'optional',
    query: feedQuery,
    response: pageSchema(postCard),
    handler: ({ query, tx, services: { storage, ballots } }) => readFeedPage(tx, { storage, ballots }, 'home_feed', null, query),
  }),

  endpoint({
    method: 'get',
    path: '/users/{userId}/feed',
    tag,
    summary: "A user's profile feed",
    description:
      "The user's original posts and reposts (each its own frame), plus their repeatable feed shares and hub shares: a " +
      'later share moves the card up, never copies it. private_locked_hub posts are never listed; a hub share counts only ' +
      'for viewers who are active members of that hub. Cards carry no share-by attribution, so feedContext is null here. ' +
      `A token adds viewerVote, voteSummary and viewerSaved. A blocked user answers USER_NOT_FOUND. ${paging}`,
    auth: 'optional',
    ids: { userId: 'USER_NOT_FOUND' },
    query: feedQuery,
    response: pageSchema(postCard),
    async handler({ params, query, tx, services: { storage, ballots } }) {
      const user = await tx.query('select 1 from app.users where id = $1', [params.userId]);
      if (user.rowCount === 0) throw new ApiError('USER_NOT_FOUND');
      return readFeedPage(tx, { storage, ballots }, 'profile_feed', params.userId as string, query);
    },
  }),

  endpoint({
    method: 'get',
    path: '/hubs/{hubId}/feed',
    tag,
    summary: "A hub's feed",
    description:
      'Active members only (invited, pending and outsiders: HUB_MEMBERSHIP_REQUIRED). Posts targeted to or shared into ' +
      'the hub, newest placement first (a repeated share moves the card up), once each; feedContext joined_hub_post or ' +
      `shared_to_hub; voteSummary and voteDistribution in this hub's vote scope. ${paging}`,
    auth: 'bearer',
    level: levels.hubReady,
    ids: { hubId: 'HUB_NOT_FOUND' },
    query: feedQuery,
    response: pageSchema(postCard),
    errors: ['HUB_MEMBERSHIP_REQUIRED'],
    handler: ({ params, query, tx, services: { storage, ballots } }) =>
      readFeedPage(tx, { storage, ballots }, 'hub_feed', params.hubId as string, query, params.hubId as string),
  }),
];
