// npm run lint's check of comments: a comment says what the code does and why, now. It refuses
//   - a migration number (four digits, the first a 0, alone or as a migration file's prefix) in a
//     comment of db/sql or of the TypeScript outside test/: the code a comment stands beside is the current
//     definition, and the migration that once wrote it is history (git log keeps it). Name the
//     table, function or rule instead;
//   - a path of this project named in a comment (db/sql, TypeScript) or in a `comment on` text of
//     db/sql that does not exist: `db/sql/votes.sql`, `server/feeds/routes.ts`, `docs/api.md`.
// `node tools/lint-comments.ts` prints one line per finding (file:line: what) and fails when there is one.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');

/** A migration number: four digits starting with 0, alone or in migrations/ (not part of a longer number, a version or another path). */
const migrationNumber = /(?<![\w.:-])(?<!(?<!migrations|frozen)\/)0\d{3}(?![\d.:])/g;
/** A file mode (`mode 0600`) is not a migration. */
const fileMode = /\bmodes?\s+$/i;
/** A path of this project: a top-level folder, then a file name with an extension. */
const projectPath =
  /(?<![\w./-])((?:db|server|worker|test|tools|docs|migrations|deploy|openapi|web|\.ci)\/[\w./-]*?\.(?:ts|sql|md|js|json|ya?ml|txt|html|png|sh))(?![\w/-])/g;

export interface Finding {
  file: string;
  line: number;
  message: string;
}

/** The files under `dir` (relative to the project root) whose name ends with one of `extensions`. */
function filesUnder(dir: string, extensions: readonly string[]): string[] {
  const full = path.join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    const name = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(name, extensions);
    return extensions.some((extension) => entry.name.endsWith(extension)) ? [name] : [];
  });
}

const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length;

/** The comments of SQL text with their offsets: `--` to the end of the line and `/* *\/`, outside string literals. */
export function sqlComments(sql: string): { offset: number; text: string }[] {
  const comments: { offset: number; text: string }[] = [];
  let i = 0;
  while (i < sql.length) {
    if (sql.startsWith('--', i)) {
      const end = sql.indexOf('\n', i);
      const stop = end < 0 ? sql.length : end;
      comments.push({ offset: i, text: sql.slice(i, stop) });
      i = stop;
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2);
      const stop = end < 0 ? sql.length : end + 2;
      comments.push({ offset: i, text: sql.slice(i, stop) });
      i = stop;
    } else if (sql[i] === "'") {
      // A string literal ('' inside it is a quote); an E'' string's \' too.
      const escapes = /[eE]/.test(sql[i - 1] ?? '') && !/\w/.test(sql[i - 2] ?? '');
      let k = i + 1;
      while (k < sql.length) {
        if (escapes && sql[k] === '\\') k += 2;
        else if (sql[k] === "'" && sql[k + 1] === "'") k += 2;
        else if (sql[k] === "'") break;
        else k += 1;
      }
      i = k + 1;
    } else i += 1;
  }
  return comments;
}

/** The comments of TypeScript source with their offsets (the leading and trailing comments of every node). */
export function typescriptComments(source: string): { offset: number; text: string }[] {
  const file = ts.createSourceFile('file.ts', source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found = new Map<number, string>();
  const add = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) found.set(range.pos, source.slice(range.pos, range.end));
  };
  const visit = (node: ts.Node) => {
    add(ts.getLeadingCommentRanges(source, node.pos));
    add(ts.getTrailingCommentRanges(source, node.end));
    node.getChildren(file).forEach(visit);
  };
  visit(file);
  return [...found].sort(([a], [b]) => a - b).map(([offset, text]) => ({ offset, text }));
}

function migrationNumbers(file: string, source: string, comments: { offset: number; text: string }[]): Finding[] {
  return comments.flatMap(({ offset, text }) =>
    [...text.matchAll(migrationNumber)]
      .filter((m) => !fileMode.test(text.slice(0, m.index)))
      .map((m) => ({
        file,
        line: lineAt(source, offset + (m.index as number)),
        message: `a comment cites migration ${m[0]}: say what the code does and why now (name the table or function, not the migration)`,
      })),
  );
}

function missingPaths(file: string, source: string, texts: { offset: number; text: string }[]): Finding[] {
  return texts.flatMap(({ offset, text }) =>
    [...text.matchAll(projectPath)]
      .filter((m) => !existsSync(path.join(root, (m[1] as string).replace(/\.$/, ''))))
      .map((m) => ({ file, line: lineAt(source, offset + (m.index as number)), message: `names ${m[1]}, which does not exist` })),
  );
}

/** The `comment on ... is '...'` texts of SQL, with their offsets. */
function sqlCommentTexts(sql: string): { offset: number; text: string }[] {
  return [...sql.matchAll(/^comment on [^;]*?\bis\s+('(?:[^']|'')*')/gim)].map((m) => ({
    offset: (m.index as number) + m[0].length - (m[1] as string).length,
    text: m[1] as string,
  }));
}

/** Every finding of the project's SQL and TypeScript, in file order. */
export function commentFindings(): Finding[] {
  const findings: Finding[] = [];
  for (const file of filesUnder('db/sql', ['.sql']).sort()) {
    const sql = readFileSync(path.join(root, file), 'utf8');
    const comments = sqlComments(sql);
    findings.push(...migrationNumbers(file, sql, comments), ...missingPaths(file, sql, [...comments, ...sqlCommentTexts(sql)]));
  }
  const typescript = [
    ...['main.ts', 'config.ts', 'logger.ts'],
    ...['db', 'server', 'worker', 'tools', 'test'].flatMap((dir) => filesUnder(dir, ['.ts'])),
  ].sort();
  for (const file of typescript) {
    const source = readFileSync(path.join(root, file), 'utf8');
    const comments = typescriptComments(source);
    // Tests name the frozen migrations they were written against (migrations/frozen/ is kept).
    if (!file.startsWith('test/')) findings.push(...migrationNumbers(file, source, comments));
    findings.push(...missingPaths(file, source, comments));
  }
  return findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

if (import.meta.main) {
  const findings = commentFindings();
  for (const finding of findings) process.stderr.write(`${finding.file}:${finding.line}: ${finding.message}\n`);
  if (findings.length > 0) {
    process.stderr.write(`${findings.length} comment(s) to rewrite (tools/lint-comments.ts)\n`);
    process.exitCode = 1;
  }
}
