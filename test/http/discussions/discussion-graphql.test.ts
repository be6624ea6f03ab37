// Hub discussions in the internal GraphQL API with a user token: exactly the rows REST shows that
// user (row-level security), only the granted columns, and no phone anywhere in their types.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { createHub, type TestHub } from '../../helpers/hubs.ts';
import { createPost } from '../../helpers/posts.ts';
import type { TestUser } from '../../helpers/users.ts';
import { appWithUsers, hubWithMembers } from '../../helpers/worlds.ts';

let app: TestApp;
let hub: TestHub;
let other: TestHub;
let owner: TestUser;
let member: TestUser;
let outsider: TestUser;
beforeAll(async () => {
  [app, owner, member, outsider] = await appWithUsers(4, 4, 4);
  hub = await hubWithMembers(app, owner, member);
  other = await createHub(app, outsider);
  for (const [author, target] of [
    [owner, hub],
    [owner, hub],
    [outsider, other],
  ] as const) {
    const post = await createPost(app, author, { visibility: 'public_hub', hubIds: [target.id] });
    const discussion = (await app.get(`/hubs/${target.id}/discussions`, { token: author.token })).body.data.items.find(
      (d: any) => d.postId === post.id,
    );
    const root = await app.post(`/hubs/${target.id}/discussions/${discussion.id}/messages`, { text: 'root' }, { token: author.token });
    await app.post(
      `/hubs/${target.id}/discussions/${discussion.id}/messages`,
      { text: 'reply', parentMessageId: root.body.data.id },
      { token: author.token },
    );
    await app.post(`/hubs/${target.id}/discussions/${discussion.id}/save`, undefined, { token: author.token });
  }
  await app.post(
    `/hubs/${hub.id}/discussions/${(await app.get(`/hubs/${hub.id}/discussions`, { token: member.token })).body.data.items[0].id}/save`,
    undefined,
    {
      token: member.token,
    },
  );
});
afterAll(() => app.close());

async function graphql(query: string, token: string): Promise<any> {
  const response = await fetch(`${app.url}/internal/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
}

const graphqlRows = (user: TestUser) =>
  graphql(
    `{ allHubDiscussions { nodes { rowId hubId postId } }
       allHubDiscussionStats { nodes { discussionId messageCount } }
       allHubDiscussionMessages { nodes { rowId discussionId parentId text replyCount } }
       allSavedDiscussions { nodes { discussionId userId } } }`,
    user.token,
  );

/** What REST shows the user: every discussion of their hubs (with its count), every message in them, their saved list. */
async function restRows(user: TestUser, hubs: TestHub[]) {
  const discussions: any[] = [];
  const stats: any[] = [];
  const messages: any[] = [];
  for (const h of hubs) {
    for (const d of (await app.get(`/hubs/${h.id}/discussions`, { token: user.token })).body.data.items) {
      discussions.push({ rowId: d.id, hubId: h.id, postId: d.postId });
      stats.push({ discussionId: d.id, messageCount: d.messageCount });
      const base = `/hubs/${h.id}/discussions/${d.id}/messages`;
      for (const m of (await app.get(base, { token: user.token })).body.data.items) {
        messages.push({ rowId: m.id, discussionId: d.id, parentId: null, text: m.text, replyCount: m.replyCount });
        for (const r of (await app.get(`${base}?parentMessageId=${m.id}`, { token: user.token })).body.data.items) {
          messages.push({ rowId: r.id, discussionId: d.id, parentId: m.id, text: r.text, replyCount: r.replyCount });
        }
      }
    }
  }
  const saved = (await app.get('/users/me/saved-discussions', { token: user.token })).body.data.items.map((s: any) => ({
    discussionId: s.discussionId,
    userId: user.id,
  }));
  return { discussions, stats, messages, saved };
}

const byId = (rows: any[]) => [...rows].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe('a user token', () => {
  it('reads exactly the discussions, messages and saved discussions REST shows that user', async () => {
    for (const [user, hubs, discussions] of [
      [member, [hub], 2],
      [owner, [hub], 2],
      [outsider, [other], 1],
    ] as const) {
      const gql = await graphqlRows(user);
      const rest = await restRows(user, [...hubs]);
      expect(rest.discussions).toHaveLength(discussions);
      expect(rest.messages).toHaveLength(2 * discussions);
      expect(byId(gql.allHubDiscussions.nodes)).toEqual(byId(rest.discussions));
      expect(byId(gql.allHubDiscussionStats.nodes)).toEqual(byId(rest.stats));
      expect(byId(gql.allHubDiscussionMessages.nodes)).toEqual(byId(rest.messages));
      expect(byId(gql.allSavedDiscussions.nodes)).toEqual(byId(rest.saved));
    }
    // The outsider (above: exactly their own hub's rows) sees nothing of this hub.
    const gql = await graphqlRows(outsider);
    expect(gql.allHubDiscussions.nodes.map((d: any) => d.hubId)).toEqual([other.id]);
    expect(gql.allHubDiscussionStats.nodes).toEqual([{ discussionId: gql.allHubDiscussions.nodes[0].rowId, messageCount: 2 }]);
  });

  it('sees only the granted columns of the discussion tables, and no phone', async () => {
    const fields = async (type: string) => {
      const data = await graphql(`{ __type(name: "${type}") { fields { name type { kind ofType { kind } } } } }`, member.token);
      return data.__type.fields
        .filter((f: any) => f.type.kind === 'SCALAR' || f.type.ofType?.kind === 'SCALAR')
        .map((f: any) => f.name)
        .sort();
    };
    expect(await fields('HubDiscussion')).toEqual(['hubId', 'id', 'lastActivityAt', 'postId', 'rowId']);
    expect(await fields('HubDiscussionStat')).toEqual(['discussionId', 'hubId', 'id', 'messageCount']);
    expect(await fields('HubDiscussionMessage')).toEqual([
      'authorId',
      'createdAt',
      'discussionId',
      'hubId',
      'id',
      'parentId',
      'replyCount',
      'rowId',
      'text',
    ]);
    expect(await fields('SavedDiscussion')).toEqual(['discussionId', 'hubId', 'id', 'savedAt', 'userId']);
    const schema = JSON.stringify(await graphql('{ __schema { types { name fields { name } } } }', member.token));
    expect(schema).not.toMatch(/hubDiscussionAuthor|postHubDiscussionMessage|saveHubDiscussion|hubDiscussionThread/i);
  });
});
