// The update gate (server/http/client-version.ts): X-Client-Version below MIN_CLIENT_VERSIONS
// answers 426 CLIENT_UPDATE_REQUIRED on every operation but GET /auth/login-config, which always
// answers and lists the minimums; no header, or a malformed one, is served.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, StartupError } from '../../../config.ts';
import { compareVersions, parseClientVersion } from '../../../server/http/client-version.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

const iosStore = 'https://apps.apple.com/app/id1234567890';
const playStore = 'https://play.google.com/store/apps/details?id=com.example.opinion';

let app: TestApp;
let user: TestUser;
beforeAll(async () => {
  app = await startTestApp({ MIN_CLIENT_VERSIONS: 'ios:2.1.0,android:2.0.3', CLIENT_UPDATE_URLS: `ios:${iosStore},android:${playStore}` });
  user = await userAtLevel(app, 2);
});
afterAll(() => app.close());

const profile = (version?: string) =>
  app.get('/users/me/profile', { token: user.token, headers: version === undefined ? {} : { 'x-client-version': version } });

describe('the update gate', () => {
  it('answers 426 below the minimum, with the minimum and where to update', async () => {
    for (const [version, minimumVersion, updateUrl] of [
      ['ios/2.0.9', '2.1.0', iosStore],
      ['ios/1.99.99', '2.1.0', iosStore],
      ['ios/2.0.10', '2.1.0', iosStore],
      ['android/2.0.2', '2.0.3', playStore],
      ['android/1.9.9', '2.0.3', playStore],
    ] as const) {
      const response = await profile(version);
      expect(response.status, version).toBe(426);
      expect(response.body).toEqual({
        success: false,
        error: { code: 'CLIENT_UPDATE_REQUIRED', message: 'Please update the app to continue.', details: { minimumVersion, updateUrl } },
      });
      expect(response.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('serves the minimum itself and anything newer (numeric, not text, order)', async () => {
    for (const version of ['ios/2.1.0', 'ios/2.1.1', 'ios/2.10.0', 'ios/10.0.0', 'android/2.0.3', 'android/2.0.10', 'android/3.0.0']) {
      expect((await profile(version)).status, version).toBe(200);
    }
  });

  it('serves a request without the header or with a malformed one', async () => {
    for (const version of [
      undefined,
      '',
      'ios',
      'ios/',
      'ios/1',
      'ios/1.0',
      'ios/1.0.0.0',
      'ios/01.0.0',
      'ios/1.0.0-beta',
      'iOS/1.0.0',
      'windows/1.0.0',
      'ios 1.0.0',
      '/1.0.0',
      'ios/a.b.c',
    ]) {
      expect((await profile(version)).status, String(version)).toBe(200);
    }
  });

  it('stops an old app before anything else: before the token check and on writes', async () => {
    expect((await app.get('/users/me/profile', { headers: { 'x-client-version': 'ios/1.0.0' } })).status).toBe(426);
    expect(
      (await app.post('/auth/anonymous/session', { deviceId: 'old-app-device-1' }, { headers: { 'x-client-version': 'android/1.0.0' } }))
        .status,
    ).toBe(426);
    expect(
      (await app.patch('/users/me/profile', { bio: 'x' }, { token: user.token, headers: { 'x-client-version': 'ios/1.0.0' } })).status,
    ).toBe(426);
    expect((await app.get('/users/me/profile', { token: user.token })).body.data.bio).not.toBe('x');
  });

  it('always answers GET /auth/login-config, which lists the minimums', async () => {
    for (const version of [undefined, 'ios/0.0.1', 'android/1.0.0', 'ios/3.0.0', 'junk']) {
      const response = await app.get('/auth/login-config', { headers: version === undefined ? {} : { 'x-client-version': version } });
      expect(response.status, String(version)).toBe(200);
      expect(response.body.data.minimumClientVersions).toEqual({ ios: '2.1.0', android: '2.0.3' });
    }
  });

  it('is documented: the header on every operation, 426 on all but login-config', async () => {
    const document = (await app.get('/openapi.json')).body;
    const loginConfig = document.paths['/auth/login-config'].get;
    expect(loginConfig.responses['426']).toBeUndefined();
    expect(loginConfig.responses['200'].content['application/json'].schema.properties.data.properties.minimumClientVersions).toBeTruthy();
    const operation = document.paths['/users/me/profile'].get;
    expect(operation.parameters).toContainEqual({ $ref: '#/components/parameters/X-Client-Version' });
    const refused = operation.responses['426'];
    const response = refused.$ref ? document.components.responses[refused.$ref.split('/').at(-1)] : refused;
    expect(response['x-error-codes']).toEqual(['CLIENT_UPDATE_REQUIRED']);
    expect(document.components.parameters['X-Client-Version'].in).toBe('header');
  });
});

describe('without minimums', () => {
  it('serves every version and lists null', async () => {
    const plain = await startTestApp();
    try {
      expect((await plain.get('/auth/login-config')).body.data.minimumClientVersions).toEqual({ ios: null, android: null });
      const someone = await userAtLevel(plain, 1);
      expect(
        (await plain.get('/users/me/profile', { token: someone.token, headers: { 'x-client-version': 'ios/0.0.1' } })).status,
      ).not.toBe(426);
    } finally {
      await plain.close();
    }
  });
});

describe('the settings', () => {
  it('parse, and refuse bad values at startup with one line', () => {
    const config = loadConfig({ NODE_ENV: 'test', MIN_CLIENT_VERSIONS: 'android:2.0.3', CLIENT_UPDATE_URLS: `android:${playStore}` });
    expect(config.clientVersions).toEqual({ minimum: { ios: null, android: '2.0.3' }, updateUrls: { ios: null, android: playStore } });
    for (const env of [
      { MIN_CLIENT_VERSIONS: 'ios:2.1', CLIENT_UPDATE_URLS: `ios:${iosStore}` },
      { MIN_CLIENT_VERSIONS: 'windows:2.1.0' },
      { MIN_CLIENT_VERSIONS: 'ios:2.1.0,ios:2.2.0', CLIENT_UPDATE_URLS: `ios:${iosStore}` },
      { MIN_CLIENT_VERSIONS: 'ios=2.1.0' },
      { MIN_CLIENT_VERSIONS: 'ios:2.1.0' },
      { CLIENT_UPDATE_URLS: 'ios:not a url' },
    ]) {
      let error: unknown;
      try {
        loadConfig({ NODE_ENV: 'test', ...env });
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(env)).toBeInstanceOf(StartupError);
      expect((error as Error).message).not.toContain('\n');
    }
  });

  it('compare versions by number', () => {
    expect(parseClientVersion('ios/2.10.0')).toEqual({ platform: 'ios', version: [2, 10, 0] });
    expect(parseClientVersion('ios/2.1')).toBeUndefined();
    expect(compareVersions([2, 10, 0], [2, 9, 9])).toBeGreaterThan(0);
    expect(compareVersions([2, 1, 0], [2, 1, 0])).toBe(0);
    expect(compareVersions([1, 99, 99], [2, 0, 0])).toBeLessThan(0);
  });
});
