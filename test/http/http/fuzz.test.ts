// An OpenAPI-driven property test: for every operation of the served document, requests with
// generated bodies (mostly fitting the schema, with hostile values mixed in), queries, path ids
// (real ones, unknown ones, bad percent-encoding), headers, content types and oversized URLs, over
// real HTTP. Every answer is below 500, carries X-Request-Id, is a status the document lists for
// that operation, and every 4xx is the error envelope with a catalogued code of that status.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalog } from '../../../server/http/catalog.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createHub, invite } from '../../helpers/hubs.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { encodedJson, headerText, text, valueFor } from '../../helpers/schema-arbitrary.ts';
import { uploadAsset } from '../../helpers/uploads.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

const runsPerOperation = Number(process.env.FUZZ_RUNS ?? 25);

interface Operation {
  method: string;
  path: string;
  operation: any;
}

let app: TestApp;
let operations: Operation[];
let main: TestUser;
let other: TestUser;
let logoutUser: TestUser;
const knownIds: Record<string, string[]> = {};

beforeAll(async () => {
  app = await startTestApp();
  const document = (await app.get('/openapi.json')).body;
  operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method, path, operation })),
  );
  main = await userAtLevel(app, 4);
  other = await userAtLevel(app, 4);
  // Logging out of every device ends the caller's sessions: that operation gets a user of its own.
  logoutUser = await userAtLevel(app, 1);
  const hub = await createHub(app, main);
  const post = await createPost(app, main, slider);
  const theirs = await createPost(app, other, slider);
  const comment = await app.post(`/posts/${post.id}/comments`, { text: 'A comment' }, { token: main.token });
  const link = await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: main.token });
  const invitationId = await invite(app, hub, main, other);
  const notifications = await app.get('/notifications', { token: other.token });
  Object.assign(knownIds, {
    userId: [main.id, other.id],
    postId: [post.id, theirs.id],
    hubId: [hub.id],
    commentId: [comment.body.data.id],
    assetId: [await uploadAsset(app, main)],
    invitationId: [invitationId],
    token: [link.body.data.token],
    notificationId: notifications.body.data.items.map((n: { id: string }) => n.id),
    username: [other.username as string],
  });
});
afterAll(() => app.close());

/** A path segment: a known id, an unknown one, or something that was never an id (some of it raw). */
function pathValue(name: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...(knownIds[name] ?? ['x'])) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: text(1, 20).map((s) => encodeURIComponent(s.toWellFormed())) },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%', '%E0%A4%A', '%00', '%C0%AF', '..', '%2e%2e', 'a%2Fb') },
  );
}

function queryArbitrary(parameters: any[]): fc.Arbitrary<[string, string][]> {
  const query = parameters.filter((p) => p.in === 'query');
  const entries = query.map((p) =>
    fc.option(
      fc.oneof(valueFor(p.schema ?? {}), encodedJson).map((v) => [p.name, String(v)] as [string, string]),
      { freq: 2 },
    ),
  );
  // Now and then a URL far beyond any header limit.
  const padding = sometimes(
    fc.constantFrom(8_000, 17_000, 40_000).map((n) => ['pad', `${n}`] as [string, string]),
    12,
  );
  return fc.tuple(...entries, padding).map((all) => all.filter((e): e is [string, string] => e !== null));
}

/** `value` about once in `oneIn` draws, else null. */
function sometimes<T>(value: fc.Arbitrary<T>, oneIn: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: oneIn - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: value });
}

const contentType = sometimes(
  fc.oneof(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
    ),
    headerText(30),
  ),
  2,
);

function bodyArbitrary(operation: any): fc.Arbitrary<string | undefined> {
  const schema = operation.requestBody?.content?.['application/json']?.schema;
  const json = valueFor(schema ?? { type: 'object' }).map((v) => JSON.stringify(v) ?? '');
  return fc.oneof(
    { weight: 10, arbitrary: json },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: text(0, 30) },
    { weight: 1, arbitrary: json.map((s) => s.slice(0, Math.max(0, s.length - 1))) },
    { weight: 1, arbitrary: fc.constant(`{"x":"${'y'.repeat(70_000)}"}`) },
  );
}

function requestArbitrary({ method, path, operation }: Operation) {
  const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
  const token = path === '/auth/logout' ? logoutUser.token : main.token;
  return fc.record({
    path: fc
      .tuple(...names.map(pathValue))
      .map((values) => names.reduce((p, name, i) => p.replace(`{${name}}`, values[i] as string), path)),
    query: queryArbitrary(operation.parameters ?? []),
    body: method === 'get' ? fc.constant(undefined) : bodyArbitrary(operation),
    authorization: fc.oneof(
      { weight: 8, arbitrary: fc.constant(`Bearer ${token}`) },
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constantFrom('Bearer', 'Bearer x.y.z', `Basic ${token}`, `Bearer ${token}x`) },
      { weight: 1, arbitrary: headerText(60) },
    ),
    contentType,
    accept: sometimes(fc.oneof(fc.constantFrom('*/*', 'application/json', 'text/event-stream', 'text/html'), headerText(20)), 2),
    requestId: sometimes(headerText(140), 3),
    contentEncoding: sometimes(fc.oneof(fc.constantFrom('gzip', 'deflate', 'br', 'identity'), headerText(10)), 10),
    forwardedFor: sometimes(fc.oneof(fc.ipV4(), fc.ipV6(), headerText(30)), 3),
  });
}

type Generated = ReturnType<typeof requestArbitrary> extends fc.Arbitrary<infer T> ? T : never;

async function send(method: string, request: Generated): Promise<{ status: number; headers: Headers; text: string }> {
  const headers: Record<string, string> = {};
  if (request.authorization !== undefined) headers.authorization = request.authorization;
  if (request.contentType !== null) headers['content-type'] = request.contentType;
  if (request.accept !== null) headers.accept = request.accept;
  if (request.requestId !== null) headers['x-request-id'] = request.requestId;
  if (request.contentEncoding !== null) headers['content-encoding'] = request.contentEncoding;
  if (request.forwardedFor !== null) headers['x-forwarded-for'] = request.forwardedFor;
  const query = request.query
    .map(([k, v]) => `${k}=${k === 'pad' ? 'x'.repeat(Number(v)) : encodeURIComponent(v.toWellFormed())}`)
    .join('&');
  const response = await fetch(`${app.url}/api/v1${request.path}${query ? `?${query}` : ''}`, {
    method: method.toUpperCase(),
    headers,
    body: request.body,
  });
  // A notification stream stays open: its status and headers are the answer.
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
    await response.body?.cancel();
    return { status: response.status, headers: response.headers, text: '' };
  }
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function check(op: Operation, request: Generated, response: { status: number; headers: Headers; text: string }): void {
  const where = `${op.method.toUpperCase()} ${op.path} -> ${request.path} answered ${response.status} ${response.text.slice(0, 300)}`;
  expect(response.status, where).toBeLessThan(500);
  // The sent id when it is usable, else a new one: never a hostile header echoed.
  const usableId = /^[A-Za-z0-9._:-]{1,128}$/;
  expect(response.headers.get('x-request-id'), where).toMatch(usableId);
  expect(Object.keys(op.operation.responses), `${where}: status not in the document`).toContain(String(response.status));
  if (response.status >= 400) {
    const body = JSON.parse(response.text);
    expect(body.success, where).toBe(false);
    const code = body.error.code as keyof typeof errorCatalog;
    expect(errorCatalog[code]?.[0], where).toBe(response.status);
    expect(body.error.message, where).toBe(errorCatalog[code][1]);
    expect(typeof body.error.details, where).toBe('object');
  }
}

describe('every operation of the OpenAPI document under generated input', () => {
  it('never answers 5xx, always carries X-Request-Id, answers documented statuses and the error envelope', async () => {
    let requests = 0;
    const fuzz = (op: Operation) =>
      fc.assert(
        fc.asyncProperty(requestArbitrary(op), async (request) => {
          requests += 1;
          check(op, request, await send(op.method, request));
        }),
        { numRuns: runsPerOperation, seed: Number(process.env.FUZZ_SEED ?? 20261122), endOnFailure: process.env.FUZZ_SHRINK !== 'true' },
      );
    // Four operations at a time; logout last, alone: it ends a session.
    const queue = operations.filter((op) => op.path !== '/auth/logout');
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let op = queue.shift(); op; op = queue.shift()) await fuzz(op);
      }),
    );
    for (const op of operations.filter((o) => o.path === '/auth/logout')) await fuzz(op);
    expect(requests).toBeGreaterThanOrEqual(operations.length * runsPerOperation);
  }, 240_000);
});
