// A private_locked_hub post seen from outside: every post endpoint answers like a missing post,
// and nothing of it leaks (spec 2.3 rules 7 and 14; 6.3).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { addMember, createHub } from '../../helpers/hubs.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let author: TestUser;
let member: TestUser;
let outsider: TestUser;
let post: any;
let hubId: string;
beforeAll(async () => {
  [app, author, member, outsider] = await appWithUsers(4, 4, 4);
  const hub = await createHub(app, author);
  hubId = hub.id;
  await addMember(app, hub, member);
  post = await createPost(app, author, {
    thoughtText: 'Members only secret',
    ...slider,
    visibility: 'private_locked_hub',
    hubIds: [hub.id],
  });
  await app.post(`/posts/${post.id}/vote`, { position: 'left' }, { token: member.token });
  await app.post(`/posts/${post.id}/comments`, { text: 'inside joke' }, { token: member.token });
});
afterAll(() => app.close());

describe('an outsider and a private_locked_hub post', () => {
  it('gets POST_NOT_FOUND from every post endpoint', async () => {
    const id = post.id;
    const attempts = [
      app.get(`/posts/${id}`, { token: outsider.token }),
      app.delete(`/posts/${id}`, { token: outsider.token }),
      app.get(`/posts/${id}/frames`, { token: outsider.token }),
      app.post(`/posts/${id}/reposts`, { thoughtText: 'x', visibility: 'public' }, { token: outsider.token }),
      app.post(`/posts/${id}/reposts`, {}, { token: outsider.token }),
      app.post(`/posts/${id}/share/feed`, undefined, { token: outsider.token }),
      app.post(`/posts/${id}/share/hubs`, { hubIds: [hubId] }, { token: outsider.token }),
      app.get(`/posts/${id}/share-link`, { token: outsider.token }),
      app.post(`/posts/${id}/vote`, { position: 'left' }, { token: outsider.token }),
      app.get(`/posts/${id}/vote/distribution`, { token: outsider.token }),
      app.get(`/posts/${id}/vote/me`, { token: outsider.token }),
      app.get(`/posts/${id}/vote/summary`, { token: outsider.token }),
      app.get(`/posts/${id}/vote/hubs`, { token: outsider.token }),
      app.get(`/posts/${id}/comments`, { token: outsider.token }),
      app.post(`/posts/${id}/comments`, { text: 'x' }, { token: outsider.token }),
      app.post(`/posts/${id}/save`, undefined, { token: outsider.token }),
      app.post(`/reports/posts/${id}`, { reason: 'spam' }, { token: outsider.token }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status, response.text).toBe(404);
      expect(response.body.error.code).toBe('POST_NOT_FOUND');
      expect(response.text).not.toContain('Members only secret');
      expect(response.text).not.toContain('inside joke');
    }
  });

  it('is visible to the author and active members of a selected hub, and hidden again after leaving', async () => {
    expect((await app.get(`/posts/${post.id}`, { token: author.token })).status).toBe(200);
    const seen = await app.get(`/posts/${post.id}`, { token: member.token });
    expect(seen.body.data.thoughtText).toBe('Members only secret');
    const leaver = await userAtLevel(app, 4);
    const hub = { id: hubId, owner: author };
    await addMember(app, hub, leaver);
    expect((await app.get(`/posts/${post.id}`, { token: leaver.token })).status).toBe(200);
    await app.delete(`/hubs/${hubId}/membership`, { token: leaver.token });
    expect((await app.get(`/posts/${post.id}`, { token: leaver.token })).status).toBe(404);
  });
});
