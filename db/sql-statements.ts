// The statements of a db/sql file, each with what it defines, so that the runner (db/sql-apply.ts)
// can compare that object's definition in the database with the file's and touch only what differs.
// A statement of a kind not listed here is refused: the runner must know what it changes and which
// locks it takes (docs/database.md, "How the runner applies them").

export interface Statement {
  /** db/sql/<file> and the line the statement starts on, for messages. */
  where: string;
  text: string;
  target: Target;
}

/**
 * What a statement changes. `lockFree` targets change catalog rows that no request locks
 * (functions, grants, comments on functions, rows of the runner's own lists); `table` targets take
 * a lock on a table that requests use (policies, triggers, views, the row-level security switch).
 */
export type Target =
  | { kind: 'function'; schema: string; name: string }
  | { kind: 'relation-acl'; relation: string }
  | { kind: 'schema-acl'; schema: string }
  | { kind: 'rows'; table: string }
  | { kind: 'policy'; name: string; table: string }
  | { kind: 'policy-comment'; name: string; table: string }
  | { kind: 'trigger'; name: string; table: string }
  | { kind: 'trigger-comment'; name: string; table: string }
  | { kind: 'view'; view: string }
  | { kind: 'view-comment'; view: string }
  | { kind: 'row-security'; table: string; force: boolean };

export const lockFreeKinds = new Set<Target['kind']>(['function', 'relation-acl', 'schema-acl', 'rows']);

/**
 * Splits SQL text into its top-level statements (at `;` outside quotes, dollar quotes, comments and
 * parentheses), each with the line it starts on. Comments before a statement are dropped.
 */
export function splitStatements(sql: string): { line: number; text: string }[] {
  const statements: { line: number; text: string }[] = [];
  let start = -1;
  let line = 1;
  let startLine = 1;
  let i = 0;
  const n = sql.length;
  const advance = (to: number) => {
    for (let k = i; k < to; k += 1) if (sql[k] === '\n') line += 1;
    i = to;
  };
  const begin = () => {
    if (start < 0) {
      start = i;
      startLine = line;
    }
  };
  while (i < n) {
    const c = sql[i] as string;
    if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      advance(end < 0 ? n : end);
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) throw new Error(`unterminated comment at line ${line}`);
      advance(end + 2);
    } else if (c === "'" || c === '"') {
      begin();
      let k = i + 1;
      for (;;) {
        const end = sql.indexOf(c, k);
        if (end < 0) throw new Error(`unterminated quote at line ${line}`);
        if (sql[end + 1] === c) k = end + 2;
        else {
          advance(end + 1);
          break;
        }
      }
    } else if (c === '$' && /^\$[A-Za-z_]*\$/.test(sql.slice(i, i + 64)) && !/[\w$]/.test(sql[i - 1] ?? ' ')) {
      begin();
      const tag = (/^\$[A-Za-z_]*\$/.exec(sql.slice(i, i + 64)) as RegExpExecArray)[0];
      const end = sql.indexOf(tag, i + tag.length);
      if (end < 0) throw new Error(`unterminated ${tag} quote at line ${line}`);
      advance(end + tag.length);
    } else if (c === ';') {
      if (start >= 0) statements.push({ line: startLine, text: sql.slice(start, i).trim() });
      start = -1;
      advance(i + 1);
    } else {
      if (!/\s/.test(c)) begin();
      advance(i + 1);
    }
  }
  if (start >= 0 && sql.slice(start).trim()) statements.push({ line: startLine, text: sql.slice(start).trim() });
  return statements;
}

const name = String.raw`[a-z_][a-z0-9_]*`;
const qualified = String.raw`${name}\.${name}`;

/** The target of one statement, or an Error naming why it cannot be applied by comparison. */
export function targetOf(text: string): Target {
  const head = text.replace(/\s+/g, ' ').toLowerCase();
  let m: RegExpExecArray | null;
  if ((m = new RegExp(`^create (?:or replace )?function (${name})\\.(${name}) ?\\(`).exec(head)))
    return { kind: 'function', schema: m[1] as string, name: m[2] as string };
  if ((m = new RegExp(`^(?:comment on|alter) function (${name})\\.(${name}) ?\\(`).exec(head)))
    return { kind: 'function', schema: m[1] as string, name: m[2] as string };
  if ((m = new RegExp(`^drop function (?:if exists )?(${name})\\.(${name}) ?\\(`).exec(head)))
    return { kind: 'function', schema: m[1] as string, name: m[2] as string };
  if ((m = new RegExp(`^(?:grant|revoke) [^;]*? on function (${name})\\.(${name}) ?\\(`).exec(head)))
    return { kind: 'function', schema: m[1] as string, name: m[2] as string };
  if ((m = new RegExp(`^(?:grant|revoke) [^;]*? on (?:all (?:tables|sequences|functions) in )?schema (${name}) (?:to|from) `).exec(head)))
    return { kind: 'schema-acl', schema: m[1] as string };
  if ((m = new RegExp(`^(?:grant|revoke) [^;]*? on (?:table |sequence )?(${qualified}) (?:to|from) `).exec(head)))
    return { kind: 'relation-acl', relation: m[1] as string };
  if ((m = new RegExp(`^(?:delete from|insert into|update) (${qualified})\\b`).exec(head))) return { kind: 'rows', table: m[1] as string };
  if ((m = new RegExp(`^create policy (${name}) on (${qualified}) `).exec(head)))
    return { kind: 'policy', name: m[1] as string, table: m[2] as string };
  if ((m = new RegExp(`^comment on policy (${name}) on (${qualified}) is `).exec(head)))
    return { kind: 'policy-comment', name: m[1] as string, table: m[2] as string };
  if ((m = new RegExp(`^create trigger (${name}) (?:before|after|instead of) .*? on (${qualified}) `).exec(head)))
    return { kind: 'trigger', name: m[1] as string, table: m[2] as string };
  if ((m = new RegExp(`^comment on trigger (${name}) on (${qualified}) is `).exec(head)))
    return { kind: 'trigger-comment', name: m[1] as string, table: m[2] as string };
  if ((m = new RegExp(`^create or replace view (${qualified})[ (]`).exec(head))) return { kind: 'view', view: m[1] as string };
  if ((m = new RegExp(`^comment on view (${qualified}) is `).exec(head))) return { kind: 'view-comment', view: m[1] as string };
  if ((m = new RegExp(`^alter table (${qualified}) (enable|force) row level security$`).exec(head)))
    return { kind: 'row-security', table: m[1] as string, force: m[2] === 'force' };
  throw new Error(
    `not a statement the runner applies by comparison (functions, grants, policies, triggers, views, their comments, row-security switches, rows of a list): ${head.slice(0, 80)}`,
  );
}

/** Every statement of the given files, with its target; the first statement of an unknown kind throws, naming its file and line. */
export function statementsOf(files: readonly { file: string; sql: string }[]): Statement[] {
  return files.flatMap(({ file, sql }) =>
    splitStatements(sql).map(({ line, text }) => {
      const where = `db/sql/${file}:${line}`;
      try {
        return { where, text, target: targetOf(text) };
      } catch (error) {
        throw new Error(`${where}: ${(error as Error).message}`, { cause: error });
      }
    }),
  );
}

/** The key that groups statements about one object (consecutive statements with one key form one unit). */
export function targetKey(target: Target): string {
  switch (target.kind) {
    case 'function':
      return `function ${target.schema}.${target.name}`;
    case 'relation-acl':
      return `grants on ${target.relation}`;
    case 'schema-acl':
      return `grants in schema ${target.schema}`;
    case 'rows':
      return `rows of ${target.table}`;
    case 'policy':
    case 'policy-comment':
      return `policy ${target.name} on ${target.table}`;
    case 'trigger':
    case 'trigger-comment':
      return `trigger ${target.name} on ${target.table}`;
    case 'view':
    case 'view-comment':
      return `view ${target.view}`;
    case 'row-security':
      return `row security of ${target.table}`;
  }
}

/** The table (or view) a lock-taking target locks. */
export function lockedRelation(target: Target): string | undefined {
  switch (target.kind) {
    case 'policy':
    case 'policy-comment':
    case 'trigger':
    case 'trigger-comment':
    case 'row-security':
      return target.table;
    case 'view':
    case 'view-comment':
      return target.view;
    default:
      return undefined;
  }
}

/**
 * The parts of a `create policy` statement (PostgreSQL's grammar: name, table, `as`, `for`, `to`,
 * `using (...)`, `with check (...)`), for comparison with pg_policy.
 */
export interface PolicyParts {
  permissive: boolean;
  command: 'all' | 'select' | 'insert' | 'update' | 'delete';
  roles: string[];
  using: string | null;
  check: string | null;
}

export function policyParts(text: string): PolicyParts {
  const head = new RegExp(`^\\s*create\\s+policy\\s+${name}\\s+on\\s+${qualified}\\s+`, 'i').exec(text);
  if (!head) throw new Error('not a create policy statement');
  let rest = text.slice(head[0].length);
  const parts: PolicyParts = { permissive: true, command: 'all', roles: ['public'], using: null, check: null };
  for (;;) {
    rest = rest.trimStart();
    if (!rest) return parts;
    let m: RegExpExecArray | null;
    if ((m = /^as\s+(permissive|restrictive)\b/i.exec(rest))) {
      parts.permissive = (m[1] as string).toLowerCase() === 'permissive';
    } else if ((m = /^for\s+(all|select|insert|update|delete)\b/i.exec(rest))) {
      parts.command = (m[1] as string).toLowerCase() as PolicyParts['command'];
    } else if ((m = new RegExp(`^to\\s+(${name}(?:\\s*,\\s*${name})*)`, 'i').exec(rest))) {
      parts.roles = (m[1] as string)
        .split(',')
        .map((role) => role.trim().toLowerCase())
        .sort();
    } else if ((m = /^(using|with\s+check)\s*\(/i.exec(rest))) {
      const open = m[0].length - 1;
      const close = closingParen(rest, open);
      const expression = rest.slice(open + 1, close).trim();
      if ((m[1] as string).toLowerCase() === 'using') parts.using = expression;
      else parts.check = expression;
      rest = rest.slice(close + 1);
      continue;
    } else {
      throw new Error(`cannot read the policy clause at: ${rest.slice(0, 40)}`);
    }
    rest = rest.slice(m[0].length);
  }
}

/** The index of the parenthesis that closes the one at `open` (quotes and dollar quotes skipped). */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i += 1) {
    const c = text[i];
    if (c === "'" || c === '"') {
      let k = i + 1;
      for (;;) {
        const end = text.indexOf(c, k);
        if (end < 0) throw new Error('unterminated quote in a policy expression');
        if (text[end + 1] === c) k = end + 2;
        else {
          i = end;
          break;
        }
      }
    } else if (c === '(') depth += 1;
    else if (c === ')') {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  throw new Error('unbalanced parentheses in a policy expression');
}

/** The string literal a `comment on ... is '<text>'` statement ends with (as SQL), or 'null'. */
export function commentLiteral(text: string): string {
  const m = /\bis\s+((?:e)?'(?:[^']|'')*'|null)\s*$/is.exec(text);
  if (!m) throw new Error('a comment statement must end with is <string literal>');
  return m[1] as string;
}
