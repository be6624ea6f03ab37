// Phone verification while signed in as a phoneless user whose phone already has a user: the
// caller's public activity moves to that user (contract section 3).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { completeBasics, anonymousUser, nextPhone, userAtLevel, verifyPhone } from '../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('merge into an existing phone identity', () => {
  it('moves follows and blocks, keeps counters exact, and frees the caller handle', async () => {
    const phone = nextPhone();
    const target = await completeBasics(app, await verifyPhone(app, phone));
    const [star, bothFollowed, pest] = [await userAtLevel(app, 2), await userAtLevel(app, 2), await userAtLevel(app, 2)];
    await app.post(`/users/${bothFollowed.id}/follow`, undefined, { token: target.token });

    const caller = await completeBasics(app, await anonymousUser(app));
    for (const followee of [star, bothFollowed]) {
      expect((await app.post(`/users/${followee.id}/follow`, undefined, { token: caller.token })).status).toBe(200);
    }
    await app.post(`/users/${pest.id}/block`, undefined, { token: caller.token });

    await app.owner.query(`update app_private.otp_codes set created_at = now() - interval '61 seconds'`);
    const merged = await verifyPhone(app, phone, caller.token);
    expect(merged.id).toBe(target.id);

    const following = await app.get(`/users/${target.id}/following`, { token: merged.token });
    expect(following.body.data.items.map((i: any) => i.id).sort()).toEqual([star.id, bothFollowed.id].sort());
    const counts = await app.owner.query('select user_id, followers, following from app.follow_counts where user_id = any($1)', [[target.id, bothFollowed.id, caller.id]]);
    const byUser = Object.fromEntries(counts.rows.map((r) => [r.user_id, r]));
    expect(byUser[target.id]).toMatchObject({ following: 2 });
    expect(byUser[bothFollowed.id]).toMatchObject({ followers: 1 });
    expect(byUser[caller.id]).toMatchObject({ following: 0 });
    expect((await app.get(`/users/by-username/${pest.username}`, { token: merged.token })).status).toBe(404);
    // The caller's handle is free again, and the retired user is gone from public view.
    expect((await app.get(`/users/by-username/${caller.username}`)).status).toBe(404);
    const reuse = await app.post('/users/handles/availability', { handle: caller.username }, { token: merged.token });
    expect(reuse.body.data.available).toBe(true);
  });
});
