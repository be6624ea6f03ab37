// Onboarding steps and access levels (spec 4.2, part 5; contract section 4).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { asViewer } from '../../helpers/sql.ts';
import { anonymousUser, completeBasics, nextHandle, nextPhone, userAtLevel, verifyPhone } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

async function status(token: string) {
  const response = await app.get('/users/me/onboarding/status', { token });
  expect(response.status).toBe(200);
  return response.body.data;
}

describe('onboarding status', () => {
  it('walks the steps in order, computing the access level at each', async () => {
    const user = await anonymousUser(app);
    expect(await status(user.token)).toEqual({
      accessLevel: 1,
      profileBasicsCompleted: false,
      mediaCompleted: false,
      phoneConfirmed: false,
      contacts_synced: false,
      contactsSyncedAt: null,
      nextStep: 'profile_basics',
    });

    const basics = await app.put(
      '/users/me/onboarding/profile-basics',
      { fullName: 'Ada Lovelace', username: nextHandle('ada'), acceptTerms: true },
      { token: user.token },
    );
    expect(basics.status).toBe(200);
    expect(basics.body.data).toMatchObject({ accessLevel: 2, profileBasicsCompleted: true, nextStep: 'media' });

    const media = await app.put('/users/me/onboarding/media', { profileAssetId: null }, { token: user.token });
    expect(media.body.data).toMatchObject({ accessLevel: 2, mediaCompleted: true, nextStep: 'phone' });

    const phoneUser = await verifyPhone(app, nextPhone(), user.token);
    expect(await status(phoneUser.token)).toMatchObject({ accessLevel: 3, phoneConfirmed: true, nextStep: 'contacts' });

    const contacts = await app.put('/users/me/onboarding/contacts', undefined, { token: phoneUser.token });
    expect(contacts.status).toBe(200);
    expect(contacts.body.data).toMatchObject({ accessLevel: 4, contacts_synced: true, nextStep: 'done' });
    expect(contacts.body.data.contactsSyncedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // One-time: a second acknowledgement keeps the first time.
    const again = await app.put('/users/me/onboarding/contacts', undefined, { token: phoneUser.token });
    expect(again.body.data.contactsSyncedAt).toBe(contacts.body.data.contactsSyncedAt);
  });

  it('lets a phone-first user do profile basics after the phone (contacts is independent)', async () => {
    const user = await verifyPhone(app);
    expect(await status(user.token)).toMatchObject({
      accessLevel: 1,
      phoneConfirmed: true,
      contacts_synced: false,
      nextStep: 'profile_basics',
    });
    await completeBasics(app, user);
    expect(await status(user.token)).toMatchObject({ accessLevel: 2, nextStep: 'media' });
    await app.put('/users/me/onboarding/media', {}, { token: user.token });
    expect(await status(user.token)).toMatchObject({ accessLevel: 3, nextStep: 'contacts' });
  });

  it('requires a token', async () => {
    expect((await app.get('/users/me/onboarding/status')).status).toBe(401);
    expect((await app.put('/users/me/onboarding/contacts')).status).toBe(401);
  });
});

describe('profile basics', () => {
  it('canonicalises the handle: trimmed, lowercased, leading @ removed', async () => {
    const user = await anonymousUser(app);
    const handle = nextHandle('canon');
    const response = await app.put(
      '/users/me/onboarding/profile-basics',
      { fullName: 'Canon', username: `  @${handle.toUpperCase()} `, acceptTerms: true },
      { token: user.token },
    );
    expect(response.status).toBe(200);
    const profile = await app.get('/users/me/profile', { token: user.token });
    expect(profile.body.data.username).toBe(handle);
  });

  it('answers 409 USERNAME_TAKEN for a taken handle, whatever its case', async () => {
    const first = await userAtLevel(app, 2);
    const second = await anonymousUser(app);
    const response = await app.put(
      '/users/me/onboarding/profile-basics',
      { fullName: 'Copy Cat', username: (first.username as string).toUpperCase(), acceptTerms: true },
      { token: second.token },
    );
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('USERNAME_TAKEN');
    expect((await status(second.token)).profileBasicsCompleted).toBe(false);
  });

  it('refuses reserved handles with 409 USERNAME_TAKEN', async () => {
    const user = await anonymousUser(app);
    const response = await app.put(
      '/users/me/onboarding/profile-basics',
      { fullName: 'Root', username: 'admin', acceptTerms: true },
      { token: user.token },
    );
    expect(response.status).toBe(409);
    expect(response.body.error.code).toBe('USERNAME_TAKEN');
  });

  it('validates every field and changes nothing on failure', async () => {
    const user = await anonymousUser(app);
    const cases: [Record<string, unknown>, string][] = [
      [{ fullName: 'A', username: nextHandle(), acceptTerms: true }, 'fullName'],
      [{ fullName: 'x'.repeat(81), username: nextHandle(), acceptTerms: true }, 'fullName'],
      [{ fullName: 'Valid Name', username: 'ab', acceptTerms: true }, 'username'],
      [{ fullName: 'Valid Name', username: 'has-dash', acceptTerms: true }, 'username'],
      [{ fullName: 'Valid Name', username: 'x'.repeat(31), acceptTerms: true }, 'username'],
      [{ fullName: 'Valid Name', username: nextHandle(), acceptTerms: false }, 'acceptTerms'],
      [{ fullName: 'Valid Name', username: nextHandle() }, 'acceptTerms'],
    ];
    for (const [body, field] of cases) {
      const response = await app.put('/users/me/onboarding/profile-basics', body, { token: user.token });
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error.details.fields, JSON.stringify(body)).toHaveProperty(field);
    }
    expect((await status(user.token)).accessLevel).toBe(1);
  });
});

describe('media and contacts', () => {
  it('completes media with no photo when omitted or null, and refuses an unusable asset with 422', async () => {
    const user = await completeBasics(app, await anonymousUser(app));
    const unknown = await app.put(
      '/users/me/onboarding/media',
      { profileAssetId: '00000000-0000-4000-8000-000000000000' },
      { token: user.token },
    );
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details.fields).toHaveProperty('profileAssetId');
    expect((await status(user.token)).mediaCompleted).toBe(false);
    const extra = await app.put('/users/me/onboarding/media', { photo: 'x' }, { token: user.token });
    expect(extra.status).toBe(422);
    expect((await app.put('/users/me/onboarding/media', {}, { token: user.token })).body.data.mediaCompleted).toBe(true);
  });

  it('gates contacts on level 3 with the code of the missing level', async () => {
    const anonymous = await anonymousUser(app);
    const basicsOnly = await userAtLevel(app, 2);
    const noMedia = await completeBasics(app, await verifyPhone(app));
    expect((await app.put('/users/me/onboarding/contacts', undefined, { token: anonymous.token })).body.error.code).toBe(
      'PROFILE_BASICS_REQUIRED',
    );
    expect((await app.put('/users/me/onboarding/contacts', undefined, { token: basicsOnly.token })).body.error.code).toBe(
      'PHONE_VERIFICATION_REQUIRED',
    );
    const response = await app.put('/users/me/onboarding/contacts', undefined, { token: noMedia.token });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('PHONE_VERIFICATION_REQUIRED');
    expect((await status(noMedia.token)).contacts_synced).toBe(false);
  });

  it('enforces the level in SQL too (the stored function refuses a viewer below level 3)', async () => {
    const user = await userAtLevel(app, 2);
    await expect(asViewer(app, 'app_user', user.id, (c) => c.query('select app.acknowledge_contacts()'))).rejects.toThrow(
      'PHONE_VERIFICATION_REQUIRED',
    );
    const { rows } = await app.owner.query('select contacts_synced_at from app.users where id = $1', [user.id]);
    expect(rows[0].contacts_synced_at).toBeNull();
  });
});
