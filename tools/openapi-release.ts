// npm run openapi:release: keeps the served OpenAPI document as the released contract of its version
// (openapi/released/<info.version>.json). test/http/openapi/openapi-contract.test.ts compares the served
// document with every kept one and fails on a change that would break an app built from it
// (tools/openapi-breaking.ts). Cut one when an app version built from the document ships; docs/api.md.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { allEndpoints } from '../server/features.ts';
import { openApiDocument } from '../server/openapi/document.ts';

const root = path.resolve(import.meta.dirname, '..');
export const releasedFolder = path.join(root, 'openapi/released');

/** The kept documents, by file name (`0.2.0.json`). */
export function releasedDocuments(): { file: string; document: Record<string, unknown> }[] {
  if (!existsSync(releasedFolder)) return [];
  return readdirSync(releasedFolder)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({ file, document: JSON.parse(readFileSync(path.join(releasedFolder, file), 'utf8')) as Record<string, unknown> }));
}

export function serializeDocument(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (import.meta.main) {
  const document = openApiDocument(allEndpoints) as { info: { version: string } };
  const file = path.join(releasedFolder, `${document.info.version}.json`);
  if (existsSync(file) && !process.argv.includes('--replace')) {
    process.stderr.write(
      `${path.relative(root, file)} is kept already: raise info.version (server/openapi/document.ts) for a new release, or pass --replace to re-cut one not yet shipped.\n`,
    );
    process.exit(1);
  }
  mkdirSync(releasedFolder, { recursive: true });
  writeFileSync(file, serializeDocument(document));
  process.stdout.write(`kept ${path.relative(root, file)}\n`);
}
