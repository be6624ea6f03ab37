// The README's configuration table is the settings of config.ts, as `npm run docs:config` writes it,
// and config.ts reads no environment variable that is not one of them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { requiredInProduction, settingRows, settingsSchema } from '../../../config.ts';
import { readmePath, readmeWithSettings } from '../../../tools/config-docs.ts';
import { projectRoot } from '../../helpers/process.ts';

describe('the configuration table of README.md', () => {
  it('is current (npm run docs:config rewrites it)', () => {
    const readme = readFileSync(readmePath, 'utf8');
    expect(readme, 'the README configuration table is stale: run npm run docs:config').toBe(readmeWithSettings(readme));
  });

  it('documents every setting with its type, default and meaning', () => {
    for (const row of settingRows()) {
      expect(row.type, row.name).not.toBe('');
      expect(row.default, row.name).not.toBe('');
      expect(row.description, row.name).not.toBe('');
    }
  });

  it('covers every environment variable config.ts reads', () => {
    const source = readFileSync(path.join(projectRoot, 'config.ts'), 'utf8');
    const read = new Set([...source.matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1] as string));
    const settings = new Set(Object.keys(settingsSchema.shape));
    expect([...read].filter((name) => !settings.has(name))).toEqual([]);
    for (const required of requiredInProduction) {
      for (const name of required.setting.match(/[A-Z][A-Z0-9_]+/g) ?? []) expect(settings.has(name), name).toBe(true);
    }
  });
});
