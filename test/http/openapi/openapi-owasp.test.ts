// The OpenAPI document under Spectral's OWASP API Security ruleset (.spectral.yaml: the ruleset, what
// the customer's contract or a mobile-only API turns off, each with its reason, and the request
// bounds as errors). Every operation is checked, whoever adds it: the document is generated from
// all endpoint definitions.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { allEndpoints } from '../../../server/features.ts';
import { openApiDocument } from '../../../server/openapi/document.ts';
import { projectRoot } from '../../helpers/process.ts';

const run = promisify(execFile);

interface Finding {
  code: string;
  message: string;
  path: string[];
  severity: number;
}

/**
 * Findings of the ruleset on a document. The file is written inside the project (and removed), in a folder whose name has no leading dot: the
 * ruleset's overrides name it by a path relative to .spectral.yaml.
 */
async function lint(document: unknown): Promise<Finding[]> {
  const folder = await mkdtemp(path.join(projectRoot, 'openapi-owasp-'));
  try {
    const file = path.join(folder, 'openapi.json');
    await writeFile(file, JSON.stringify(document, null, 1));
    const cli = path.join(projectRoot, 'node_modules/@stoplight/spectral-cli/dist/index.js');
    const result = await run(
      process.execPath,
      [cli, 'lint', file, '--ruleset', path.join(projectRoot, '.spectral.yaml'), '--format', 'json', '--quiet'],
      {
        cwd: projectRoot,
        maxBuffer: 64 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? '', stderr: error.stderr ?? '' }));
    if (!result.stdout.trim().startsWith('[')) throw new Error(`spectral: ${result.stderr || result.stdout}`);
    return JSON.parse(result.stdout) as Finding[];
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/**
 * The document with one path kept (and every component): a rule broken in that path's operation is
 * found there as in the whole document, and spectral reads a third of it (about 3 s of CPU, against
 * 7.5 s for the whole).
 */
function withOnlyPath<T extends { paths: Record<string, unknown> }>(document: T, kept: string): T {
  return { ...document, paths: { [kept]: document.paths[kept] } };
}

const describeFinding = (finding: Finding) => `${finding.code}: ${finding.message} at ${finding.path.join('/')}`;

describe('the OpenAPI document under the OWASP API Security ruleset', () => {
  it('has no errors', { timeout: 120_000 }, async () => {
    const findings = await lint(openApiDocument(allEndpoints));
    const errors = findings.filter((finding) => finding.severity === 0);
    const warnings = findings.filter((finding) => finding.severity === 1).length;
    expect(errors.slice(0, 20).map(describeFinding), `${errors.length} errors, ${warnings} warnings`).toEqual([]);
  });

  it('fails a request string, array or integer without its bound', { timeout: 120_000 }, async () => {
    const document = openApiDocument(allEndpoints) as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const comment = document.paths['/posts/{postId}/comments']?.post as {
      requestBody: { content: Record<string, { schema: { properties: Record<string, Record<string, unknown>> } }> };
    };
    const properties = (
      comment.requestBody.content['application/json'] as { schema: { properties: Record<string, Record<string, unknown>> } }
    ).schema.properties;
    properties.text = { type: 'string' };
    properties.tags = { type: 'array', items: { type: 'string', maxLength: 10 } };
    properties.count = { type: 'integer', minimum: 0 };
    const errors = (await lint(withOnlyPath(document, '/posts/{postId}/comments'))).filter((finding) => finding.severity === 0);
    const at = (name: string) =>
      errors
        .filter((finding) => finding.path.join('/').endsWith(`/properties/${name}`))
        .map((finding) => finding.code)
        .sort();
    expect(at('text')).toEqual(['owasp:api4:2023-string-limit']);
    expect(at('tags')).toEqual(['request-array-limit']);
    expect(at('count')).toEqual(['owasp:api4:2023-integer-format', 'owasp:api4:2023-integer-limit']);
  });

  it('fails an answer of a counted operation without the RateLimit headers', { timeout: 120_000 }, async () => {
    const document = openApiDocument(allEndpoints) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { headers?: Record<string, unknown> }>; 'x-rate-limits'?: unknown }>
      >;
    };
    const comment = document.paths['/posts/{postId}/comments']?.post;
    expect(comment?.['x-rate-limits'], 'commenting is counted by a write limit').toBeDefined();
    delete comment?.responses['201']?.headers?.RateLimit;
    const errors = (await lint(withOnlyPath(document, '/posts/{postId}/comments')))
      .filter((finding) => finding.severity === 0)
      .map(describeFinding);
    expect(errors).toEqual([
      expect.stringMatching(
        /^counted-operation-rate-limit-headers: .*paths\/\/posts\/\{postId\}\/comments\/post\/responses\/201\/headers$/,
      ),
    ]);
  });
});
