// Handles, own profile, public profile and the private Hub identity (spec 2.1, 2.2, 4.4;
// contract section 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availabilityLimit } from '../../../server/users/routes.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { anonymousUser, nextHandle, userAtLevel } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('POST /users/handles/availability', () => {
  it('reports a free handle as available, canonicalised, without reserving it', async () => {
    const user = await anonymousUser(app);
    const handle = nextHandle('free');
    const response = await app.post('/users/handles/availability', { handle: ` @${handle.toUpperCase()}` }, { token: user.token });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ handle, available: true, reason: null, alternatives: [] });
    const other = await userAtLevel(app, 2, handle);
    expect(other.username).toBe(handle);
  });

  it('offers up to three free numeric-suffix alternatives for taken, reserved and invalid handles', async () => {
    const taken = await userAtLevel(app, 2);
    const user = await anonymousUser(app);
    for (const [handle, reason] of [
      [taken.username as string, 'taken'],
      ['admin', 'reserved'],
      ['a!', 'invalid'],
    ] as const) {
      const response = await app.post('/users/handles/availability', { handle }, { token: user.token });
      expect(response.body.data).toMatchObject({ available: false, reason });
      const alternatives: string[] = response.body.data.alternatives;
      expect(alternatives.length).toBeGreaterThan(0);
      expect(alternatives.length).toBeLessThanOrEqual(3);
      for (const alternative of alternatives) {
        expect(alternative).toMatch(/^[a-z0-9_]{1,28}\d{2,4}$/);
        expect(alternative.length).toBeLessThanOrEqual(30);
        const check = await app.post('/users/handles/availability', { handle: alternative }, { token: user.token });
        expect(check.body.data.available).toBe(true);
      }
    }
  });

  it('is allowed for anonymous sessions, needs a token, and rate-limits per user with 429', async () => {
    expect((await app.post('/users/handles/availability', { handle: 'someone' })).status).toBe(401);
    const user = await anonymousUser(app);
    const statuses: number[] = [];
    for (let i = 0; i <= availabilityLimit.hits; i += 1) {
      statuses.push((await app.post('/users/handles/availability', { handle: `probe_${i}` }, { token: user.token })).status);
    }
    expect(statuses.slice(0, availabilityLimit.hits).every((s) => s === 200)).toBe(true);
    const limited = await app.post('/users/handles/availability', { handle: 'probe_x' }, { token: user.token });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.body.error.details.retryAfterSeconds).toBeGreaterThan(0);
    expect(limited.headers.get('retry-after')).toBe(String(limited.body.error.details.retryAfterSeconds));
    // Another user is not affected.
    const other = await anonymousUser(app);
    expect((await app.post('/users/handles/availability', { handle: 'probe_y' }, { token: other.token })).status).toBe(200);
  });
});

describe('own profile', () => {
  it('returns the public part plus editable fields, and never a phone number', async () => {
    const user = await userAtLevel(app, 3);
    const response = await app.get('/users/me/profile', { token: user.token });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({
      id: user.id,
      username: user.username,
      fullName: 'Test Person',
      bio: null,
      profilePhotoUrl: null,
      profilePhoto: null,
      counts: { followers: 0, following: 0, posts: 0 },
      stats: { votesCast: 0, votesReceived: 0 },
      adminHubs: [],
      viewer: null,
      editable: { fullName: 'Test Person', username: user.username, bio: null, profileAssetId: null },
    });
    expect(response.text).not.toContain(user.phone?.e164.slice(2));
  });

  it('edits fields (level 2), canonicalising the handle and freeing the old one at once', async () => {
    const user = await userAtLevel(app, 2);
    const oldHandle = user.username as string;
    const newHandle = nextHandle('renamed');
    const response = await app.patch(
      '/users/me/profile',
      { fullName: 'New Name', username: `@${newHandle}`, bio: 'Hello there' },
      { token: user.token },
    );
    expect(response.status).toBe(200);
    expect(response.body.data.editable).toEqual({ fullName: 'New Name', username: newHandle, bio: 'Hello there', profileAssetId: null });
    const reuse = await userAtLevel(app, 2, oldHandle);
    expect(reuse.username).toBe(oldHandle);
    const cleared = await app.patch('/users/me/profile', { bio: null }, { token: user.token });
    expect(cleared.body.data.bio).toBeNull();
  });

  it('refuses a taken handle with 409 and invalid edits with 422, changing nothing', async () => {
    const user = await userAtLevel(app, 2);
    const other = await userAtLevel(app, 2);
    const taken = await app.patch('/users/me/profile', { username: other.username, bio: 'should not stick' }, { token: user.token });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('USERNAME_TAKEN');
    for (const [body, field] of [
      [{}, '(body)'],
      [{ bio: 'x'.repeat(161) }, 'bio'],
      [{ fullName: 'x' }, 'fullName'],
      [{ username: 'no spaces allowed' }, 'username'],
      [{ phoneNumber: '+15550000000' }, 'phoneNumber'],
      [{ profileAssetId: '00000000-0000-4000-8000-000000000000' }, 'profileAssetId'],
    ] as const) {
      const response = await app.patch('/users/me/profile', body, { token: user.token });
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error.details.fields, JSON.stringify(body)).toHaveProperty(field);
    }
    const profile = await app.get('/users/me/profile', { token: user.token });
    expect(profile.body.data.bio).toBeNull();
  });

  it('needs profile basics to edit', async () => {
    const user = await anonymousUser(app);
    const response = await app.patch('/users/me/profile', { bio: 'hi' }, { token: user.token });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('PROFILE_BASICS_REQUIRED');
  });
});

describe('GET /users/by-username/{username}', () => {
  it('serves the public profile without a token, and with one adds the viewer relationship', async () => {
    const target = await userAtLevel(app, 3);
    const anonymous = await app.get(`/users/by-username/${target.username}`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.body.data).toMatchObject({ id: target.id, username: target.username, viewer: null });
    expect(anonymous.body.data).not.toHaveProperty('editable');
    const viewer = await anonymousUser(app);
    const withToken = await app.get(`/users/by-username/${(target.username as string).toUpperCase()}`, { token: viewer.token });
    expect(withToken.body.data.viewer).toEqual({ follows: false, followedBy: false, blocked: false });
    for (const response of [anonymous, withToken]) {
      expect(response.text).not.toMatch(/phone/i);
      expect(response.text).not.toContain(target.phone?.e164.slice(2));
    }
  });

  it('answers 404 USER_NOT_FOUND for unknown handles and 401 for an invalid token', async () => {
    const missing = await app.get('/users/by-username/nobody_here_at_all');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toEqual({ code: 'USER_NOT_FOUND', message: 'User does not exist.', details: {} });
    const target = await userAtLevel(app, 2);
    expect((await app.get(`/users/by-username/${target.username}`, { token: 'invalid' })).status).toBe(401);
  });
});

describe('Hub identity', () => {
  it('is level 4 only', async () => {
    const user = await userAtLevel(app, 3);
    const response = await app.get('/users/me/hub-profile', { token: user.token });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('HUB_READINESS_REQUIRED');
    expect((await app.patch('/users/me/hub-profile', { displayName: 'Zed' }, { token: user.token })).body.error.code).toBe(
      'HUB_READINESS_REQUIRED',
    );
  });

  it('returns the own phone and a display name defaulting to the full name; edits leave the public profile alone', async () => {
    const user = await userAtLevel(app, 4);
    const initial = await app.get('/users/me/hub-profile', { token: user.token });
    expect(initial.body.data).toEqual({
      displayName: 'Test Person',
      profilePhotoUrl: null,
      profileAssetId: null,
      phoneNumber: user.phone?.e164,
    });
    const edited = await app.patch('/users/me/hub-profile', { displayName: 'Hub Me' }, { token: user.token });
    expect(edited.status).toBe(200);
    expect(edited.body.data.displayName).toBe('Hub Me');
    expect((await app.get('/users/me/profile', { token: user.token })).body.data.fullName).toBe('Test Person');
    expect((await app.patch('/users/me/hub-profile', { displayName: 'x' }, { token: user.token })).status).toBe(422);
    expect((await app.patch('/users/me/hub-profile', {}, { token: user.token })).status).toBe(422);
  });
});
