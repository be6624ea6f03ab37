// The OpenAPI document, linted with a maintained linter: Redocly CLI with its recommended rules and
// the example checks as errors (redocly.yaml names the one rule turned off and why). Every
// operation is linted, whoever adds it: the document is generated from all endpoint definitions.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { allEndpoints } from '../../../server/features.ts';
import { openApiDocument } from '../../../server/openapi/document.ts';
import { projectRoot } from '../../helpers/process.ts';

const run = promisify(execFile);

describe('the OpenAPI document under Redocly CLI', () => {
  it('lints with 0 errors and 0 warnings', { timeout: 60_000 }, async () => {
    const folder = await mkdtemp(path.join(os.tmpdir(), 'opinion-openapi-'));
    try {
      const file = path.join(folder, 'openapi.json');
      await writeFile(file, JSON.stringify(openApiDocument(allEndpoints)));
      const cli = path.join(projectRoot, 'node_modules/@redocly/cli/bin/cli.js');
      const result = await run(
        process.execPath,
        [cli, 'lint', file, '--config', path.join(projectRoot, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'],
        {
          cwd: projectRoot,
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          maxBuffer: 64 * 1024 * 1024,
        },
      ).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? '', stderr: error.stderr ?? '' }));
      const report = JSON.parse(result.stdout) as {
        totals: { errors: number; warnings: number };
        problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
      };
      const problems = report.problems.map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`);
      expect(problems.slice(0, 20), `${report.totals.errors} errors, ${report.totals.warnings} warnings`).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
