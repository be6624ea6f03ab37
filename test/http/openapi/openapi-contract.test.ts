// The contract does not break under a released app: the served OpenAPI document against every kept
// one (openapi/released/, cut by npm run openapi:release), and the check itself on breaks planted in
// a copy of the kept document (tools/openapi-breaking.ts says which changes break and which do not).
import { describe, expect, it } from 'vitest';
import { allEndpoints } from '../../../server/features.ts';
import { openApiDocument } from '../../../server/openapi/document.ts';
import { breakingChanges } from '../../../tools/openapi-breaking.ts';
import { releasedDocuments } from '../../../tools/openapi-release.ts';

// Planted changes reach anywhere into the document's JSON.
type Document = Record<string, any>;

const kept = releasedDocuments();
const served = openApiDocument(allEndpoints) as Document;

describe('the served OpenAPI document against the kept releases', () => {
  it('keeps at least the current release', () => {
    expect(kept.map(({ file }) => file)).toContain('0.2.0.json');
  });

  it.each(kept)('breaks nothing an app built from $file uses', { timeout: 120_000 }, ({ document }) => {
    expect(breakingChanges(document, served).map((change) => change.what)).toEqual([]);
  });
});

const newest = kept.at(-1)?.document as Document;

/**
 * The kept document and a copy with `plant` applied, both narrowed to the operations the plant
 * touches (the same paths on both sides, all components), so that each comparison is quick.
 */
function planted(paths: string[], plant: (copy: Document) => void): string[] {
  const copy = structuredClone(newest);
  plant(copy);
  return compare(newest, copy, paths);
}

function compare(before: Document, after: Document, paths: string[]): string[] {
  const narrow = (document: Document): Document => ({
    ...document,
    paths: Object.fromEntries(paths.filter((p) => document.paths[p]).map((p) => [p, document.paths[p]])),
  });
  return breakingChanges(narrow(before), narrow(after)).map((change) => change.what);
}

const body = (document: Document, path: string, method: string) =>
  document.paths[path][method].requestBody.content['application/json'].schema;
const parameter = (document: Document, path: string, method: string, name: string) =>
  document.paths[path][method].parameters.find((p: Document) => p.name === name).schema ??
  document.paths[path][method].parameters.find((p: Document) => p.name === name);
const postCard = (document: Document) => document.components.schemas.PostCard;
const post = '/posts/{postId}';
const comments = '/posts/{postId}/comments';

describe('the breaking-change check, on breaks planted in a copy of the kept document', () => {
  it('an operation removed', () => {
    expect(planted([post], (d) => delete d.paths[post].delete)).toEqual([
      expect.stringMatching(/^DELETE \/posts\/\{postId\}: \[Removed\] operation/),
    ]);
  });

  it('a success status removed (the operation answers another)', () => {
    const changes = planted([comments], (d) => {
      d.paths[comments].post.responses['200'] = d.paths[comments].post.responses['201'];
      delete d.paths[comments].post.responses['201'];
    });
    expect(changes).toContainEqual(expect.stringMatching(/^POST \/posts\/\{postId\}\/comments: .*201/));
  });

  it('a response field removed', () => {
    const changes = planted([post], (d) => {
      delete postCard(d).properties.commentCount;
      postCard(d).required = postCard(d).required.filter((name: string) => name !== 'commentCount');
    });
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts\/\{postId\}: \[Removed\] .*commentCount/));
  });

  it('a response field renamed', () => {
    const changes = planted([post], (d) => {
      postCard(d).properties.comments = postCard(d).properties.commentCount;
      delete postCard(d).properties.commentCount;
      postCard(d).required = postCard(d).required.map((name: string) => (name === 'commentCount' ? 'comments' : name));
    });
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts\/\{postId\}: \[Removed\] .*commentCount/));
  });

  it('a response field made optional', () => {
    const changes = planted([post], (d) => {
      postCard(d).required = postCard(d).required.filter((name: string) => name !== 'commentCount');
    });
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts\/\{postId\}: \[Removed\] required status .*commentCount/));
  });

  it('a response enum value added', () => {
    const changes = planted([post], (d) => postCard(d).properties.visibility.enum.push('friends_only'));
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts\/\{postId\}: .*values of `data.visibility`/));
  });

  it('a response enum value renamed', () => {
    const changes = planted([post], (d) => {
      postCard(d).properties.visibility.enum = postCard(d).properties.visibility.enum.map((value: string) =>
        value === 'public' ? 'everyone' : value,
      );
    });
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts\/\{postId\}: .*values of `data.visibility`/));
  });

  it('a response type widened: null where there was none', () => {
    const changes = planted([post], (d) => (postCard(d).properties.commentCount.type = ['integer', 'null']));
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts\/\{postId\}: .*type definition of `data.commentCount`/));
  });

  it('a response type changed', () => {
    const changes = planted([post], (d) => {
      const { format: _format, minimum: _minimum, maximum: _maximum, ...rest } = postCard(d).properties.commentCount;
      postCard(d).properties.commentCount = { ...rest, type: 'string', maxLength: 20 };
    });
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts\/\{postId\}: .*type definition of `data.commentCount`/));
  });

  it('a request field removed (bodies are strict: a kept client sending it is refused)', () => {
    const changes = planted([comments], (d) => delete body(d, comments, 'post').properties.parentCommentId);
    expect(changes).toEqual([expect.stringMatching(/^POST \/posts\/\{postId\}\/comments: \[Removed\] property `parentCommentId`/)]);
  });

  it('a request field made required', () => {
    const changes = planted([comments], (d) => body(d, comments, 'post').required.push('parentCommentId'));
    expect(changes).toEqual([expect.stringMatching(/^POST \/posts\/\{postId\}\/comments: \[Added\] required status to `parentCommentId`/)]);
  });

  it('a required request field added', () => {
    const changes = planted([comments], (d) => {
      body(d, comments, 'post').properties.mood = { type: 'string', maxLength: 20 };
      body(d, comments, 'post').required.push('mood');
    });
    expect(changes).toContainEqual(expect.stringMatching(/^POST \/posts\/\{postId\}\/comments: .*required.*mood/));
  });

  it('a query parameter made required', () => {
    const changes = planted(
      ['/posts'],
      (d) => (d.paths['/posts'].get.parameters.find((p: Document) => p.name === 'cursor').required = true),
    );
    expect(changes).toEqual([expect.stringMatching(/^GET \/posts: \[Added\] required status to required query parameter `cursor`/)]);
  });

  it('a header made required', () => {
    const changes = planted(['/posts'], (d) => (d.components.parameters['X-Request-Id'].required = true));
    expect(changes).toContainEqual(expect.stringMatching(/^GET \/posts: .*required header parameter `X-Request-Id`/));
  });

  it('a request string narrowed: a lower maxLength', () => {
    const changes = planted([comments], (d) => (body(d, comments, 'post').properties.text.maxLength = 500));
    expect(changes).toEqual([expect.stringMatching(/^POST \/posts\/\{postId\}\/comments: \[Replaced\] maxLength validator of `text`/)]);
  });

  it('a request string narrowed: a maxLength where there was none', () => {
    // Planted the other way round: the kept copy has no bound on the text, the served one has.
    const unbounded = structuredClone(newest);
    delete body(unbounded, comments, 'post').properties.text.maxLength;
    expect(compare(unbounded, newest, [comments])).toEqual([
      expect.stringMatching(/^POST \/posts\/\{postId\}\/comments: \[Added\] maxLength validator to `text`/),
    ]);
  });

  it('a request integer narrowed: a lower maximum', () => {
    const changes = planted(['/posts'], (d) => (parameter(d, '/posts', 'get', 'limit').maximum = 10));
    expect(changes).toEqual([expect.stringMatching(/^GET \/posts: \[Replaced\] maximum validator in query parameter `limit`/)]);
  });

  it('a request enum value removed', () => {
    const changes = planted(['/posts'], (d) => {
      const kind = body(d, '/posts', 'post').properties.article.properties.kind;
      kind.enum = kind.enum.filter((value: string) => value !== 'text');
    });
    expect(changes).toContainEqual(expect.stringMatching(/^POST \/posts: .*`article.kind`/));
  });

  it('a request type changed', () => {
    const changes = planted(
      [comments],
      (d) => (body(d, comments, 'post').properties.parentCommentId = { type: 'integer', format: 'int64', minimum: 1, maximum: 2 ** 53 }),
    );
    expect(changes).toContainEqual(expect.stringMatching(/^POST \/posts\/\{postId\}\/comments: .*type definition of `parentCommentId`/));
  });
});

describe('the breaking-change check lets through what a kept client survives', () => {
  it('optional request headers on every operation, new response headers and statuses, new error codes', () => {
    const paths = ['/posts', post, comments];
    const changes = planted(paths, (d) => {
      for (const path of paths) {
        for (const operation of Object.values(d.paths[path]) as Document[]) {
          operation.parameters.push(
            { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } },
            { name: 'X-Client-Version', in: 'header', required: false, schema: { type: 'string', maxLength: 64 } },
          );
          for (const [status, response] of Object.entries(operation.responses) as [string, Document][]) {
            if (status.startsWith('2')) response.headers = { ...response.headers, ETag: { schema: { type: 'string', maxLength: 100 } } };
          }
          operation.responses['426'] = {
            description: 'CLIENT_UPDATE_REQUIRED',
            content: { 'application/json': { schema: { type: 'object' } } },
          };
          // A new code in an error response the operation had already (inline, not the shared one).
          const [status, shared] = Object.entries(operation.responses).find(([code]) => code === '422' || code === '404') as [
            string,
            Document,
          ];
          const response = structuredClone(shared.$ref ? d.components.responses[shared.$ref.split('/').pop()] : shared);
          const error = response.content['application/json'].schema.properties.error.properties;
          error.code = { enum: [...(error.code.enum ?? [error.code.const]), 'IDEMPOTENCY_KEY_REUSED'] };
          response['x-error-codes'] = [...response['x-error-codes'], 'IDEMPOTENCY_KEY_REUSED'];
          operation.responses[status] = response;
        }
      }
    });
    expect(changes).toEqual([]);
  });

  it('new operations, optional request fields, response fields and bounds, descriptions', () => {
    const changes = planted(['/posts', post, comments, '/posts/{postId}/edits'], (d) => {
      d.paths['/posts/{postId}/edits'] = { get: structuredClone(d.paths[post].get) };
      body(d, comments, 'post').properties.mood = { type: 'string', maxLength: 20 };
      postCard(d).properties.editedAt = { type: ['string', 'null'], format: 'date-time', maxLength: 35 };
      postCard(d).properties.thoughtText = { ...postCard(d).properties.thoughtText, maxLength: 5000 };
      delete postCard(d).properties.sliderText.maxLength;
      d.paths[post].get.description = 'Another description.';
      d.info.version = '0.3.0';
    });
    expect(changes).toEqual([]);
  });
});
