// README and docs/: what a newcomer and an operator read. Links between them resolve to files that
// exist, and they name no work items and tell no history (git keeps that).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../helpers/process.ts';

const pages = [
  'README.md',
  ...readdirSync(path.join(projectRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const read = (page: string) => readFileSync(path.join(projectRoot, page), 'utf8');

describe('README and docs', () => {
  it('link only to files that exist', () => {
    for (const page of pages) {
      for (const [, target] of read(page).matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target as string)) continue;
        expect(existsSync(path.resolve(path.dirname(path.join(projectRoot, page)), target as string)), `${page} -> ${target}`).toBe(true);
      }
    }
  });

  it('name no work items and tell no history', () => {
    const history = /\bissues? \d+|\b(first|second|third|fourth|fifth) pass\b|before and after|before \(main\)/i;
    for (const page of pages) expect(read(page).match(history)?.[0], page).toBeUndefined();
  });

  it('README keeps to what a newcomer and an operator need, and lists every docs page', () => {
    const readme = read('README.md');
    // The configuration table (npm run docs:config) has one row per environment variable; a short
    // section says where the code is.
    expect(readme.split('\n').length).toBeLessThan(290);
    for (const page of pages.filter((name) => name.startsWith('docs/'))) expect(readme, page).toContain(`](${page})`);
  });
});
