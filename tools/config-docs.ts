// npm run docs:config: writes the README's configuration table from the settings of config.ts (one
// row per environment variable: name, type, default, meaning), between its two markers.
// test/docs/config/config.test.ts fails when the table is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { settingRows } from '../config.ts';

const root = path.resolve(import.meta.dirname, '..');
export const readmePath = path.join(root, 'README.md');
const start = '<!-- configuration table: npm run docs:config writes it from config.ts -->';
const end = '<!-- end of the configuration table -->';

/** A table cell: a `|` would end the cell, even inside a code span. */
const cell = (text: string) => text.replaceAll('|', '\\|');

export function renderSettingsTable(): string {
  const rows = settingRows().map((row) => `| \`${row.name}\` | ${cell(row.type)} | ${cell(row.default)} | ${cell(row.description)} |`);
  return ['| variable | type | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The README with its configuration table as the settings give it. */
export function readmeWithSettings(readme: string): string {
  const from = readme.indexOf(start);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) throw new Error(`README.md lacks the configuration table's markers (${start} ... ${end})`);
  return `${readme.slice(0, from + start.length)}\n\n${renderSettingsTable()}\n\n${readme.slice(to)}`;
}

if (import.meta.main) {
  const readme = readFileSync(readmePath, 'utf8');
  const updated = readmeWithSettings(readme);
  if (updated !== readme) writeFileSync(readmePath, updated);
}
