// The OpenAPI document: valid OpenAPI 3.1 (checked by a real validator), it documents every route
// the Express app actually serves, every example is valid against its schema and reads as real
// data, responses are open and requests strict, ids and times carry their formats, each error
// response names its codes as data with typed details and headers, and a client generated from it
// type-checks a journey (tsc) that then runs against the server. The checks walk every operation,
// so endpoints added later are held to them too. (Redocly's lint: openapi-lint.test.ts.)
import path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalog } from '../../../server/http/catalog.ts';
import tsconfig from '../../../tsconfig.json' with { type: 'json' };
import { startTestApp, testPhone, type TestApp } from '../../helpers/app.ts';
import { projectRoot } from '../../helpers/process.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

let app: TestApp;
let document: any;
beforeAll(async () => {
  app = await startTestApp();
  document = (await app.get('/openapi.json')).body;
});
afterAll(() => app.close());

/** An operation's response, its `$ref` to components.responses followed. */
const resolved = (response: any) => (response.$ref ? document.components.responses[response.$ref.split('/').at(-1)] : response);

/** The routes mounted under /api/v1, read from the running Express router. */
async function mountedRoutes(): Promise<string[]> {
  const { createApp } = await import('../../../server/app.ts');
  const { createServices } = await import('../../../server/services.ts');
  const { createLogger } = await import('../../../logger.ts');
  const express = createApp(await createServices(app.config, createLogger('silent'), app.pools, app.storage));
  const routes: string[] = [];
  const walk = (stack: any[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const path of [layer.route.path].flat()) {
          for (const method of Object.keys(layer.route.methods)) routes.push(`${method} ${prefix}${path}`);
        }
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack, layer.slash ? prefix : `${prefix}${layer.rawPath}`);
      }
    }
  };
  walk((express as any).router.stack, '');
  // The API's routes (the web pages and probes outside /api/v1 are not part of the API document).
  return routes.filter((route) => route.split(' ')[1]?.startsWith('/api/v1/')).map((route) => route.replace(' /api/v1/', ' /'));
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
      if (['/openapi.json', '/docs', '/docs/', '/docs/assets/:file'].includes(path)) continue;
      const documented = path.replace(/:(\w+)/g, '{$1}');
      expect(document.paths[documented]?.[method], route).toBeDefined();
    }
  });

  it('lists only catalogued error codes, with their statuses', () => {
    for (const operations of Object.values<any>(document.paths)) {
      for (const operation of Object.values<any>(operations)) {
        for (const [status, raw] of Object.entries<any>(operation.responses)) {
          if (Number(status) < 400) continue;
          const response = resolved(raw);
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
    expect(resolved(document.paths['/uploads/complete'].post.responses['409'])['x-error-codes']).toContain('UPLOAD_CONTENT_MISMATCH');
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
    for (const name of ['PostCard', 'UserLite', 'Hub', 'Notification', 'Session', 'ErrorDetails', 'Comment', 'VoteSummary'])
      expect(names).toContain(name);
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
        for (const [status, raw] of Object.entries<any>(operation.responses)) {
          const json = resolved(raw).content?.['application/json'];
          if (!json) continue;
          expect(json.example, `${method} ${path} ${status}`).toBeDefined();
          expect(json.example.success).toBe(Number(status) < 400);
          if (Number(status) >= 400) expect(errorCatalog[json.example.error.code as keyof typeof errorCatalog][0]).toBe(Number(status));
        }
      }
    }
  });

  it("gives request examples that the endpoint's own schema accepts", async () => {
    const { allEndpoints } = await import('../../../server/features.ts');
    for (const definition of allEndpoints) {
      if (!definition.body) continue;
      const example = document.paths[definition.path][definition.method].requestBody.content['application/json'].example;
      const parsed = definition.body.safeParse(example);
      expect(parsed.success, `${definition.method} ${definition.path}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
  });
});

/** Every example of the document with the JSON pointer of the schema it must satisfy. */
function examples(document: any): { where: string; schema: string; value: unknown }[] {
  const found: { where: string; schema: string; value: unknown }[] = [];
  const escape = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');
  const resolve = (response: any, pointer: string): [any, string] =>
    response.$ref
      ? [document.components.responses[response.$ref.split('/').at(-1)], `/components/responses/${escape(response.$ref.split('/').at(-1))}`]
      : [response, pointer];
  for (const [path, operations] of Object.entries<any>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      const base = `/paths/${escape(path)}/${method}`;
      const body = operation.requestBody?.content?.['application/json'];
      if (body)
        found.push({
          where: `${method} ${path} body`,
          schema: `${base}/requestBody/content/application~1json/schema`,
          value: body.example,
        });
      operation.parameters.forEach((parameter: any, index: number) => {
        if (parameter.example !== undefined)
          found.push({
            where: `${method} ${path} ${parameter.name}`,
            schema: `${base}/parameters/${index}/schema`,
            value: parameter.example,
          });
      });
      for (const [status, raw] of Object.entries<any>(operation.responses)) {
        const [response, pointer] = resolve(raw, `${base}/responses/${status}`);
        const json = response.content?.['application/json'];
        if (json)
          found.push({ where: `${method} ${path} ${status}`, schema: `${pointer}/content/application~1json/schema`, value: json.example });
      }
    }
  }
  for (const [name, schema] of Object.entries<any>(document.components.schemas)) {
    for (const value of schema.examples ?? [])
      found.push({ where: `schema ${name}`, schema: `/components/schemas/${escape(name)}`, value });
  }
  return found;
}

describe('examples', () => {
  it('every example is valid against its own schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const id = 'https://opinion.example/openapi.json';
    ajv.addSchema({ ...structuredClone(document), $id: id });
    const all = examples(document);
    expect(all.length).toBeGreaterThan(300);
    const invalid = all.flatMap(({ where, schema, value }) => {
      const validate = ajv.getSchema(`${id}#${schema}`);
      if (!validate) return [`${where}: no schema at ${schema}`];
      return validate(value) ? [] : [`${where}: ${ajv.errorsText(validate.errors)}`];
    });
    expect(invalid).toEqual([]);
  });

  it('read as real data: no placeholders, vote counts that add up, ids and times in their formats', () => {
    const strings: string[] = [];
    const summaries: any[] = [];
    const walk = (value: unknown) => {
      if (typeof value === 'string') strings.push(value);
      else if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === 'object') {
        if ('totalVotes' in value && 'leftCount' in value) summaries.push(value);
        Object.values(value).forEach(walk);
      }
    };
    for (const { value } of examples(document)) walk(value);
    expect(strings.filter((text) => /\bexample [a-z]|lorem|^string$|^example$/i.test(text))).toEqual([]);
    expect(summaries.length).toBeGreaterThan(0);
    for (const summary of summaries) {
      if (summary.resultsVisible) expect(summary.leftCount + summary.neutralCount + summary.rightCount).toBe(summary.totalVotes);
    }
  });
});

describe('what a generated client needs', () => {
  /** Every schema a response uses (through $refs), and every request body schema. */
  function reachable(roots: unknown[]): any[] {
    const seen = new Set<string>();
    const schemas: any[] = [];
    const visit = (value: any) => {
      if (Array.isArray(value)) return value.forEach(visit);
      if (!value || typeof value !== 'object') return;
      if (typeof value.$ref === 'string' && value.$ref.startsWith('#/components/schemas/')) {
        const name = value.$ref.split('/').at(-1);
        if (!seen.has(name)) {
          seen.add(name);
          visit(document.components.schemas[name]);
        }
      }
      schemas.push(value);
      Object.values(value).forEach(visit);
    };
    roots.forEach(visit);
    return schemas;
  }
  const operations = () => Object.values<any>(document.paths).flatMap((methods) => Object.values<any>(methods));
  const successSchemas = () =>
    operations().flatMap((operation) =>
      Object.entries<any>(operation.responses)
        .filter(([status]) => Number(status) < 300)
        .map(([, response]) => response.content?.['application/json']?.schema)
        .filter(Boolean),
    );

  it('responses are open to new fields; request bodies are strict', () => {
    expect(reachable(successSchemas()).filter((schema) => schema.additionalProperties === false)).toEqual([]);
    for (const operation of operations()) {
      const body = operation.requestBody?.content['application/json'].schema;
      if (body) expect(body.additionalProperties, operation.operationId).toBe(false);
    }
    expect(document.info.description).toContain('clients must ignore fields they do not know');
  });

  it('ids are uuids and times date-times, in responses and path parameters', () => {
    let ids = 0;
    let times = 0;
    for (const schema of reachable(successSchemas())) {
      for (const [name, property] of Object.entries<any>(schema.properties ?? {})) {
        const types = [property.type, ...(property.anyOf ?? []).map((option: any) => option.type)].flat();
        // (a string, or a string or null)
        if (!types.includes('string') || property.enum) continue;
        const format = property.format ?? property.anyOf?.find((option: any) => option.type === 'string')?.format;
        if (/^(id|.*Id|.*_id)$/.test(name)) expect(format, name).toBe('uuid');
        if (/At$/.test(name)) expect(format, name).toBe('date-time');
        if (format === 'uuid') ids += 1;
        if (format === 'date-time') times += 1;
      }
    }
    expect(ids).toBeGreaterThan(30);
    expect(times).toBeGreaterThan(10);
    for (const operation of operations()) {
      for (const parameter of operation.parameters.filter((p: any) => p.in === 'path' && /Id$/.test(p.name)))
        expect(parameter.schema.format).toBe('uuid');
    }
  });

  it('errors: typed details, the codes of each operation as data, Retry-After and X-Request-Id declared', () => {
    const details = document.components.schemas.ErrorDetails.properties;
    expect(details.fields).toMatchObject({ type: 'object', additionalProperties: { type: 'string' } });
    expect(document.components.schemas.RetryAfterSeconds).toMatchObject({ type: 'integer', minimum: 1 });
    expect(details.retryAfterSeconds).toEqual({ $ref: '#/components/schemas/RetryAfterSeconds' });
    for (const operation of operations()) {
      for (const [status, raw] of Object.entries<any>(operation.responses)) {
        const response = raw.$ref ? document.components.responses[raw.$ref.split('/').at(-1)] : raw;
        expect(response.headers['X-Request-Id'], `${operation.operationId} ${status}`).toBeDefined();
        if (Number(status) < 400) continue;
        const codes: string[] = response['x-error-codes'];
        expect(codes.length, `${operation.operationId} ${status}`).toBeGreaterThan(0);
        for (const code of codes) expect(errorCatalog[code as keyof typeof errorCatalog][0], code).toBe(Number(status));
        const narrowed = response.content['application/json'].schema.properties.error.properties.code;
        expect(narrowed.enum ?? [narrowed.const]).toEqual(codes);
        if (status === '429' || status === '503')
          expect(response.headers['Retry-After'], `${operation.operationId} ${status}`).toBeDefined();
      }
      expect(operation.parameters).toContainEqual({ $ref: '#/components/parameters/X-Request-Id' });
    }
  });

  it(
    'a client generated from the document (openapi-typescript, openapi-fetch) type-checks a journey and runs it against the server',
    { timeout: 60_000 },
    async () => {
      const types = astToString(await openapiTS(structuredClone(document)));
      const journeyFile = path.join(projectRoot, 'test/openapi-client/journey.ts');
      const apiFile = path.join(projectRoot, 'test/openapi-client/api.ts');
      const { options } = ts.convertCompilerOptionsFromJson({ ...tsconfig.compilerOptions, noEmit: true }, projectRoot);
      const host = ts.createCompilerHost(options);
      const readFile = host.readFile.bind(host);
      const fileExists = host.fileExists.bind(host);
      host.readFile = (file) => (path.resolve(file) === apiFile ? types : readFile(file));
      host.fileExists = (file) => path.resolve(file) === apiFile || fileExists(file);
      const program = ts.createProgram([journeyFile], options, host);
      const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(diagnostics).toEqual([]);

      const { journey } = (await import(journeyFile)) as { journey(baseUrl: string, deviceId: string, phone: object): Promise<any> };
      const phone = testPhone(480);
      const result = await journey(app.url, 'journey-device-0001', {
        phoneCountryCode: phone.phoneCountryCode,
        phoneNumber: phone.phoneNumber,
      });
      expect(result.logoUrl).toBe(`${app.config.publicWebBaseUrl}/logo.png`);
      expect(result.requestId).toBe('journey-1');
      expect(result.session.user.accessLevel).toBe(1);
      expect(Object.keys(result.refusedFields)).toEqual(expect.arrayContaining(['username']));
      expect(result.retryAfterSeconds).toBeGreaterThan(0);
      expect(Array.isArray(result.cards)).toBe(true);
    },
  );
});
