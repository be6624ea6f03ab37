// Posts and votes made through the public API.
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import type { TestUser } from './users.ts';

export const slider = { sliderText: 'Pineapple on pizza?', slider: { leftLabel: 'Never', rightLabel: 'Always' } };

export async function createPost(app: TestApp, author: TestUser, body: Record<string, unknown> = {}): Promise<any> {
  const response = await app.post('/posts', { thoughtText: 'A thought', visibility: 'public', ...body }, { token: author.token });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.data;
}

export async function vote(app: TestApp, user: TestUser, postId: string, position = 'left') {
  return app.post(`/posts/${postId}/vote`, { position }, { token: user.token });
}
