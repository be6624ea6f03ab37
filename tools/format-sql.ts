// Formats db/sql with Debian's pgFormatter (`pg_format`, package pgformatter) under the options of
// .pg_format at the project root. `node tools/format-sql.ts` writes the files (npm run format);
// `--check` changes nothing and fails listing the files that are not formatted (npm run lint).
//
// Only db/sql/**/*.sql, and not a generated file (*.generated.sql: its generator lays it out, and a
// test holds it equal to the generator's output): migrations/ are hash-locked
// (db/migrations.sha256) and db/schema.sql is pg_dump's output. db/schema.sql holds the functions' text as db/sql gives it, so a change that
// formats db/sql anew is followed by `npm run schema` (test/sql/database/schema-file.test.ts and
// layout.test.ts compare it), and by a raised sqlLevel in db/migrate.ts when
// test/sql/database/expand-only.test.ts asks for one.
//
// What pgFormatter is not given, and why:
// - PL/pgSQL bodies (a dollar-quoted body that opens with `declare`, `begin`, `<<label>>` or a `#`
//   option) stay as written. pg_format 5.5 loses a block's indentation after a data-modifying CTE or
//   a `select ... into` (the statements after it drift to column 0) and turns `#variable_conflict`
//   into a comment, which changes what the function does. SQL bodies (`language sql`) are formatted,
//   except one with a backslash: pg_format reads `'\'` as an escaped quote (standard_conforming_strings
//   says a backslash is a plain character) and changes the strings after it; and except one with a
//   quoted name (`::"char"`): after it, pg_format stops ending statements, and joins every later
//   statement of the file onto the line of the one before.
// - Nothing else: before writing, the formatted text is lexed and compared with the original, token
//   by token (whitespace aside; unquoted words compared in lower case, as PostgreSQL folds them;
//   strings, quoted names, operators and comment words exactly). A formatter version that changed a
//   token fails here, naming the file and the first token that differs, and writes nothing.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensureDebianPackages } from './debian-packages.ts';

const root = path.resolve(import.meta.dirname, '..');
const sqlRoot = path.join(root, 'db', 'sql');
const pgFormat = '/usr/bin/pg_format';
/** The pgFormatter the files are formatted with (Debian 12's pgformatter 5.5-1): another version may lay them out otherwise. */
const formatterVersion = '5.5';
const config = path.join(root, '.pg_format');
/** .pg_format's wrap-limit. */
const lineWidth = 140;

/** db/sql's .sql files, folders included, relative to the project root, sorted. */
export function sqlFilesToFormat(dir = sqlRoot): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return sqlFilesToFormat(full);
      return entry.isFile() && entry.name.endsWith('.sql') && !entry.name.endsWith('.generated.sql') ? [path.relative(root, full)] : [];
    })
    .sort();
}

/** A dollar-quote opening at `i` (`$$` or `$tag$`), or undefined. */
function dollarTagAt(sql: string, i: number): string | undefined {
  if (sql[i] !== '$' || /[\w$]/.test(sql[i - 1] ?? ' ')) return undefined;
  return /^\$[A-Za-z_]*\$/.exec(sql.slice(i, i + 64))?.[0];
}

type Token = { kind: 'word' | 'string' | 'quoted' | 'dollar' | 'number' | 'operator' | 'punct' | 'param' | 'comment'; text: string };

/**
 * The tokens of SQL text, whitespace dropped: what formatting must not change. A dollar-quoted body
 * is lexed as SQL in turn (so a formatted SQL body compares token by token) between its tags.
 */
export function tokens(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i] as string;
    const rest = sql.slice(i);
    let m: RegExpExecArray | null;
    if (/\s/.test(c)) {
      i += 1;
    } else if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i);
      const text = sql.slice(i + 2, end < 0 ? n : end);
      for (const word of text.split(/\s+/).filter(Boolean)) out.push({ kind: 'comment', text: word });
      i = end < 0 ? n : end;
    } else if (rest.startsWith('/*')) {
      const end = sql.indexOf('*/', i + 2);
      const stop = end < 0 ? n : end + 2;
      for (const word of sql
        .slice(i + 2, stop - 2)
        .split(/\s+/)
        .filter(Boolean))
        out.push({ kind: 'comment', text: word });
      i = stop;
    } else if ((m = /^[eE]'(?:[^'\\]|''|\\[\s\S])*'/.exec(rest) ?? /^(?:[bBxXnN]|[uU]&)?'(?:[^']|'')*'/.exec(rest))) {
      out.push({ kind: 'string', text: m[0] });
      i += m[0].length;
    } else if ((m = /^"(?:[^"]|"")*"/.exec(rest))) {
      out.push({ kind: 'quoted', text: m[0] });
      i += m[0].length;
    } else if (dollarTagAt(sql, i)) {
      const tag = dollarTagAt(sql, i) as string;
      const end = sql.indexOf(tag, i + tag.length);
      const stop = end < 0 ? n : end;
      out.push({ kind: 'dollar', text: tag }, ...tokens(sql.slice(i + tag.length, stop)), { kind: 'dollar', text: tag });
      i = stop + tag.length;
    } else if ((m = /^\$\d+/.exec(rest))) {
      out.push({ kind: 'param', text: m[0] });
      i += m[0].length;
    } else if ((m = /^[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*/.exec(rest))) {
      out.push({ kind: 'word', text: m[0].toLowerCase() });
      i += m[0].length;
    } else if ((m = /^(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/.exec(rest))) {
      out.push({ kind: 'number', text: m[0].replaceAll('_', '') });
      i += m[0].length;
    } else if ((m = /^(?:::|:=|=>|[+\-*/<>=~!@#%^&|`?]+)/.exec(rest))) {
      out.push({ kind: 'operator', text: m[0] });
      i += m[0].length;
    } else {
      out.push({ kind: 'punct', text: c });
      i += 1;
    }
  }
  return out;
}

/** The first place two token lists differ, as a message, or undefined when they are equal. */
function firstDifference(before: Token[], after: Token[]): string | undefined {
  const length = Math.max(before.length, after.length);
  for (let k = 0; k < length; k += 1) {
    const a = before[k];
    const b = after[k];
    if (a?.kind !== b?.kind || a?.text !== b?.text) {
      const around = (list: Token[]) =>
        list
          .slice(Math.max(0, k - 6), k + 3)
          .map((t) => t.text)
          .join(' ');
      return `token ${k}: ${a ? a.text : '(end)'} became ${b ? b.text : '(end)'} (before: ${around(before)}; after: ${around(after)})`;
    }
  }
  return undefined;
}

/** A PL/pgSQL body: its first word, comments aside, is declare or begin, or it opens with <<label>> or a # option. */
function isPlpgsqlBody(body: string): boolean {
  const start = body.replace(/^(?:\s+|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*/, '');
  return /^(?:declare|begin)\b/i.test(start) || start.startsWith('<<') || start.startsWith('#');
}

/**
 * The text with each body pgFormatter is not given (PL/pgSQL, a backslash or a quoted name in it) replaced by a
 * string literal naming it, and the bodies to put back.
 */
function protectBodies(sql: string): { text: string; bodies: string[] } {
  if (sql.includes("'pgformat_body_")) throw new Error("the text 'pgformat_body_ is reserved by tools/format-sql.ts");
  const bodies: string[] = [];
  let text = '';
  let i = 0;
  const n = sql.length;
  let from = 0;
  while (i < n) {
    const rest = sql.slice(i, i + 2);
    if (rest === '--') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end;
    } else if (rest === '/*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (sql[i] === "'" || sql[i] === '"') {
      const quote = sql[i] as string;
      let k = i + 1;
      for (;;) {
        const end = sql.indexOf(quote, k);
        if (end < 0) throw new Error('unterminated quote');
        if (sql[end + 1] === quote) k = end + 2;
        else {
          i = end + 1;
          break;
        }
      }
    } else if (dollarTagAt(sql, i)) {
      const tag = dollarTagAt(sql, i) as string;
      const end = sql.indexOf(tag, i + tag.length);
      if (end < 0) throw new Error(`unterminated ${tag} quote`);
      const stop = end + tag.length;
      const body = sql.slice(i + tag.length, end);
      if (isPlpgsqlBody(body) || body.includes('\\') || body.includes('"')) {
        text += `${sql.slice(from, i)}'pgformat_body_${bodies.length}'`;
        bodies.push(sql.slice(i, stop));
        from = stop;
      }
      i = stop;
    } else {
      i += 1;
    }
  }
  return { text: text + sql.slice(from), bodies };
}

function runPgFormat(sql: string): string {
  return execFileSync(pgFormat, ['--no-rcfile', '--config', config, '-'], { input: sql, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

/** The formatted text of one file's SQL; throws when formatting would change a token. */
export function formatSql(sql: string, file = 'input'): string {
  const { text, bodies } = protectBodies(sql);
  const laidOut = runPgFormat(text);
  // Every statement starts a line of its own: pgFormatter that lost track of where statements end
  // joins them (as it does after a quoted name in a body, above).
  const joined = /^.*;[ \t]*(?:create|comment|grant|revoke|alter|drop)\b.*$/im.exec(laidOut);
  if (joined) throw new Error(`${file}: pg_format joined two statements on one line: ${joined[0].slice(0, 120)}`);
  // pgFormatter lays out a string after `as` as a body too: the name comes back indented, with a `;`.
  const formatted = laidOut
    // Deep indentation comes back as tabs: spaces, as everywhere else (a tab is 8 columns).
    .replace(/^\t+/gm, (tabs) => ' '.repeat(8 * tabs.length))
    .replace(/'\s*pgformat_body_(\d+);?\s*'/g, (_, k: string) => bodies[Number(k)] as string)
    // A comment's text that does not fit on the line starts the next one, as written by hand.
    .replace(/^(comment on [^\n]*? is) ('[^\n]*)$/gm, (line, head: string, literal: string) =>
      line.length > lineWidth ? `${head}\n  ${literal}` : line,
    );
  const difference = firstDifference(tokens(sql), tokens(formatted));
  if (difference) throw new Error(`${file}: pg_format would change the SQL, not only its layout: ${difference}`);
  return formatted;
}

function main(): void {
  const check = process.argv.includes('--check');
  ensureDebianPackages([[pgFormat, 'pgformatter']], check ? 'npm run lint' : 'npm run format');
  const unformatted: string[] = [];
  for (const file of sqlFilesToFormat()) {
    const full = path.join(root, file);
    const sql = readFileSync(full, 'utf8');
    const formatted = formatSql(sql, file);
    if (formatted === sql) continue;
    if (check) unformatted.push(file);
    else writeFileSync(full, formatted);
  }
  if (unformatted.length > 0) {
    const version = /\d+(\.\d+)+/.exec(execFileSync(pgFormat, ['--version'], { encoding: 'utf8' }))?.[0];
    const other = version === formatterVersion ? '' : ` (this is pg_format ${version}; the files are formatted with ${formatterVersion})`;
    process.stderr.write(
      `SQL not formatted${other} (run npm run format, which runs tools/format-sql.ts):\n${unformatted.map((f) => `  ${f}\n`).join('')}`,
    );
    process.exitCode = 1;
  }
}

if (import.meta.main) main();
