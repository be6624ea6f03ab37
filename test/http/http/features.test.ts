// The features of the API (server/features.ts): every folder of server/ with a routes.ts is one, under
// its folder's name, and defines only endpoints of its own; and where two endpoints could answer one
// URL, the app mounts the one with a fixed segment there first, whatever the order of the features.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mountOrder } from '../../../server/app.ts';
import { allEndpoints, features } from '../../../server/features.ts';
import type { Endpoint } from '../../../server/http/endpoint.ts';
import { endpointFiles } from '../../../tools/endpoints.ts';
import { projectRoot } from '../../helpers/process.ts';

const isParameter = (segment: string) => segment.startsWith('{');

/** Whether one URL could match both paths (Express matches fixed segments without regard to case). */
function overlap(a: Endpoint, b: Endpoint): boolean {
  const x = a.path.split('/');
  const y = b.path.split('/');
  return (
    a.method === b.method &&
    x.length === y.length &&
    x.every((segment, i) => isParameter(segment) || isParameter(y[i] as string) || segment.toLowerCase() === y[i]?.toLowerCase())
  );
}

describe('server/features.ts', () => {
  it('lists every folder of server/ that has a routes.ts, by its name', () => {
    const folders = readdirSync(path.join(projectRoot, 'server'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(path.join(projectRoot, 'server', entry.name, 'routes.ts')))
      .map((entry) => entry.name)
      .sort();
    expect(Object.keys(features).sort()).toEqual(folders);
  });

  it("has each feature's endpoints defined in its own folder, each endpoint once", async () => {
    const fileOf = new Map((await endpointFiles()).map((row) => [`${row.method} ${row.path}`, row.file]));
    for (const [name, endpoints] of Object.entries(features)) {
      for (const definition of endpoints) {
        expect(fileOf.get(`${definition.method} ${definition.path}`), `${definition.method} ${definition.path}`).toMatch(
          new RegExp(`^server/${name}/`),
        );
      }
    }
    expect(new Set(allEndpoints.map((definition) => `${definition.method} ${definition.path}`)).size).toBe(allEndpoints.length);
  });

  it('mounts, of two endpoints that could answer one URL, the one with a fixed segment there first', () => {
    const mounted = mountOrder(allEndpoints);
    expect(new Set(mounted)).toEqual(new Set(allEndpoints));
    const pairs: string[] = [];
    for (const [i, first] of mounted.entries()) {
      for (const second of mounted.slice(i + 1)) {
        if (!overlap(first, second)) continue;
        const x = first.path.split('/');
        const y = second.path.split('/');
        const at = x.findIndex((segment, k) => isParameter(segment) !== isParameter(y[k] as string));
        expect(at, `${first.method} ${first.path} and ${second.path} match the same URLs`).toBeGreaterThanOrEqual(0);
        expect(isParameter(x[at] as string), `${first.method} ${first.path} is mounted before ${second.path}`).toBe(false);
        pairs.push(`${first.method} ${first.path} before ${second.path}`);
      }
    }
    // The pairs there are today (any new one is held by the loop above).
    expect(pairs).toEqual(
      expect.arrayContaining([
        'get /users/by-username/{username} before /users/{userId}/followers',
        'get /users/by-username/{username} before /users/{userId}/following',
        'get /users/by-username/{username} before /users/{userId}/feed',
      ]),
    );
  });
});
