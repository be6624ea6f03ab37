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
        for (const path of [layer.route.path].flat()) {
          for (const method of Object.keys(layer.route.methods)) routes.push(`${method} ${path}`);
        }
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
      if (['/openapi.json', '/docs', '/docs/', '/docs/assets/:file', '/healthz', '/readyz'].includes(path)) continue;
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

  it('serves the docs page with and without the trailing slash, and its assets from this server', async () => {
    for (const path of ['/docs', '/docs/']) {
      const page = await app.get(path);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.text).toContain('src="/api/v1/docs/assets/swagger-ui-bundle.js"');
    }
    const script = await app.get('/docs/assets/swagger-ui-bundle.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect((await app.get('/docs/assets/index.html')).status).toBe(404);
  });
});

describe('named schemas and examples', () => {
  it('names the resource shapes in components.schemas and refers to them', () => {
    const names = Object.keys(document.components.schemas);
    for (const name of ['PostCard', 'UserLite', 'Hub', 'Notification', 'Session', 'ErrorEnvelope', 'Comment', 'VoteSummary']) expect(names).toContain(name);
    const card = document.paths['/posts/{postId}'].get.responses['200'].content['application/json'].schema.properties.data;
    expect(card).toEqual({ $ref: '#/components/schemas/PostCard' });
    expect(document.components.schemas.PostCard.properties.author).toEqual({ $ref: '#/components/schemas/UserLite' });
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]);
    for (const ref of refs) expect(names, ref).toContain(ref);
  });

  it('gives every operation an example for its body and each of its responses', () => {
    for (const [path, operations] of Object.entries<any>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        if (operation.requestBody) expect(operation.requestBody.content['application/json'].example, `${method} ${path}`).toBeDefined();
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          const json = response.content?.['application/json'];
          if (!json) continue;
          expect(json.example, `${method} ${path} ${status}`).toBeDefined();
          expect(json.example.success).toBe(Number(status) < 400);
          if (Number(status) >= 400) expect(errorCatalog[json.example.error.code as keyof typeof errorCatalog][0]).toBe(Number(status));
        }
      }
    }
  });

  it("gives request examples that the endpoint's own schema accepts", async () => {
    const { allEndpoints } = await import('../../server/app.ts');
    for (const definition of allEndpoints) {
      if (!definition.body) continue;
      const example = document.paths[definition.path][definition.method].requestBody.content['application/json'].example;
      const parsed = definition.body.safeParse(example);
      expect(parsed.success, `${definition.method} ${definition.path}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
  });
});
