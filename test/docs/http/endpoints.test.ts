// docs/endpoints.md: every endpoint with the file that defines it, as `npm run endpoints` writes it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allEndpoints } from '../../../server/features.ts';
import { endpointFiles, endpointsPage, renderEndpointsPage } from '../../../tools/endpoints.ts';
import { projectRoot } from '../../helpers/process.ts';

describe('docs/endpoints.md', () => {
  it('is current (npm run endpoints rewrites it)', async () => {
    expect(readFileSync(path.join(projectRoot, endpointsPage), 'utf8'), 'docs/endpoints.md is stale: run npm run endpoints').toBe(
      await renderEndpointsPage(),
    );
  });

  it("names, for every endpoint once, a file whose source declares that endpoint's method and path", async () => {
    const rows = await endpointFiles();
    expect(rows.map((row) => `${row.method} ${row.path}`).sort()).toEqual(
      allEndpoints.map((definition) => `${definition.method} ${definition.path}`).sort(),
    );
    for (const row of rows) {
      const source = readFileSync(path.join(projectRoot, row.file), 'utf8');
      expect(source, `${row.method} ${row.path} in ${row.file}`).toMatch(
        new RegExp(`method: '${row.method}',\\s*path: '${row.path.replace(/[{}]/g, '\\$&')}'`),
      );
    }
  });
});
