// The OpenAPI document: valid OpenAPI 3.1 (checked by a real validator), and it documents every
// route the Express app actually serves.
import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalog } from '../../server/http/catalog.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

let app: TestApp;
let document: any;
beforeAll(async () => {
  app = await startTestApp();
  document = (await app.get('/openapi.json')).body;
});
afterAll(() => app.close());

/** The routes mounted under /api/v1, read from the running Express router. */
async function mountedRoutes(): Promise<string[]> {
  const { createApp } = await import('../../server/app.ts');
  const { createServices } = await import('../../server/services.ts');
  const { createLogger } = await import('../../logger.ts');
  const express = createApp(await createServices(app.config, createLogger('silent'), app.pools, app.storage));
  const routes: string[] = [];
  const walk = (stack: any[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) routes.push(`${method} ${layer.route.path}`);
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack);
      }
    }
  };
  walk((express as any).router.stack);
  return routes;
}

describe('GET /api/v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(document));
    expect('errors' in result ? result.errors : [], JSON.stringify(result)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every route the app serves, with its method', async () => {
    const routes = await mountedRoutes();
    expect(routes.length).toBeGreaterThan(15);
    for (const route of routes) {
      const [method, path] = route.split(' ') as [string, string];
      if (path === '/openapi.json' || path === '/docs') continue;
      const documented = path.replace(/:(\w+)/g, '{$1}');
      expect(document.paths[documented]?.[method], route).toBeDefined();
    }
  });

  it('lists only catalogued error codes, with their statuses', () => {
    for (const operations of Object.values<any>(document.paths)) {
      for (const operation of Object.values<any>(operations)) {
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          if (Number(status) < 400) continue;
          const codes = [...response.description.matchAll(/([A-Z_]{4,}):/g)].map((m) => m[1]);
          expect(codes.length).toBeGreaterThan(0);
          for (const code of codes) expect(errorCatalog[code as keyof typeof errorCatalog][0]).toBe(Number(status));
        }
      }
    }
  });

  it('lists the statuses every operation can answer: body, path and header refusals, 500 and 503', () => {
    for (const [path, operations] of Object.entries<any>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        const statuses = Object.keys(operation.responses);
        expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['400', '413', '431', '500', '503']));
        if (path.includes('{')) expect(statuses, `${method} ${path}`).toContain('422');
        if (operation.security?.length > 0) expect(statuses, `${method} ${path}`).toContain('401');
      }
    }
  });

  it('lists 401 on refresh and IdP exchange, 429 where limited, and the upload content check', () => {
    const statuses = (method: string, path: string) => Object.keys(document.paths[path][method].responses);
    expect(statuses('post', '/auth/session/refresh')).toContain('401');
    expect(statuses('post', '/auth/idp/token')).toContain('401');
    for (const path of ['/auth/otp/request', '/auth/otp/verify', '/auth/anonymous/session', '/users/handles/availability']) {
      expect(statuses('post', path), path).toContain('429');
    }
    expect(document.paths['/uploads/complete'].post.responses['409'].description).toContain('UPLOAD_CONTENT_MISMATCH');
  });

  it('serves a readable docs page', async () => {
    const page = await app.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.text).toContain('openapi.json');
  });
});
