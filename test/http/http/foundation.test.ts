// Wire conventions every endpoint shares (spec 2.1, contract section 1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { createPools } from '../../../db/pools.ts';
import { createLogger } from '../../../logger.ts';
import { createApp } from '../../../server/app.ts';
import { createServices } from '../../../server/services.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createClient } from '../../helpers/client.ts';
import { anonymousUser } from '../../helpers/users.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

describe('envelopes and catalogued errors', () => {
  it('wraps success in { success, message, data }', async () => {
    const response = await app.get('/auth/login-config');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true, message: expect.any(String), data: expect.any(Object) });
  });

  it('answers unknown routes with 404 ROUTE_NOT_FOUND in the error envelope', async () => {
    const response = await app.get('/no/such/route');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({
      success: false,
      error: { code: 'ROUTE_NOT_FOUND', message: 'Route does not exist.', details: {} },
    });
    expect((await app.request('DELETE', '/auth/login-config')).body.error.code).toBe('ROUTE_NOT_FOUND');
  });

  it('answers a body that is not JSON with 400 MALFORMED_REQUEST', async () => {
    const response = await app.request('POST', '/auth/anonymous/session', {
      rawBody: '{"deviceId": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('MALFORMED_REQUEST');
  });

  it('answers a body over 64 KiB with 413 PAYLOAD_TOO_LARGE', async () => {
    const response = await app.post('/auth/anonymous/session', { deviceId: 'x'.repeat(70 * 1024) });
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('rejects unknown fields and wrong types with 422 and details.fields', async () => {
    const response = await app.post('/auth/anonymous/session', { deviceId: 'device-abcdef', extra: 1 });
    expect(response.status).toBe(422);
    expect(response.body.error).toMatchObject({ code: 'VALIDATION_FAILED', message: 'Please fix highlighted fields.' });
    expect(response.body.error.details.fields).toEqual({ extra: 'Unknown field' });

    const missing = await app.post('/auth/anonymous/session', {});
    expect(missing.body.error.details.fields).toEqual({ deviceId: 'Required' });
  });

  it('echoes a usable X-Request-Id and makes one otherwise', async () => {
    const echoed = await app.get('/auth/login-config', { headers: { 'x-request-id': 'client-req-42' } });
    expect(echoed.headers.get('x-request-id')).toBe('client-req-42');
    const made = await app.get('/no/such/route');
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const unusable = await app.get('/auth/login-config', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(unusable.headers.get('x-request-id')).not.toBe('bad id with spaces');
  });

  it('checks the token before the body: 401 wins over 422', async () => {
    const response = await app.post('/auth/logout', { unexpected: true });
    expect(response.status).toBe(401);
    expect(response.body.error).toEqual({ code: 'UNAUTHORIZED', message: 'Authentication required.', details: {} });
  });

  it('checks the access level before the body: 403 wins over 422', async () => {
    const user = await anonymousUser(app);
    const response = await app.patch('/users/me/profile', { bogus: 1 }, { token: user.token });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('PROFILE_BASICS_REQUIRED');
  });

  it('answers an unexpected database failure with a bare 500 INTERNAL_ERROR', async () => {
    const user = await anonymousUser(app);
    await app.owner.query('alter function app.onboarding_status_gated(int) rename to onboarding_status_gone');
    try {
      const response = await app.get('/users/me/onboarding/status', { token: user.token });
      expect(response.status).toBe(500);
      expect(response.body).toEqual({
        success: false,
        error: { code: 'INTERNAL_ERROR', message: 'Something went wrong.', details: {} },
      });
      expect(response.text).not.toMatch(/onboarding_status|select|stack/i);
    } finally {
      await app.owner.query('alter function app.onboarding_status_gone(int) rename to onboarding_status_gated');
    }
  });
});

describe('database unreachable', () => {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After', async () => {
    const user = await anonymousUser(app);
    // The same application over pools whose server does not exist (nothing listens on port 1).
    const pools = createPools('postgres://owner:secret@127.0.0.1:1/none');
    const server = createApp(await createServices(app.config, createLogger('silent'), pools, app.storage)).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const client = createClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const response = await client.get('/users/me/onboarding/status', { token: user.token });
      expect(response.status).toBe(503);
      expect(response.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: 'Service is temporarily unavailable.', details: {} });
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      server.close();
      await pools.end();
    }
  });
});
