// npm run admin -- ...: internal tooling over the same database settings as `npm start`
// (DATABASE_URL, or the embedded PostgreSQL under the data folder: the running service's when
// `npm start` is up, else started for the command and stopped after). Each command runs as
// app_admin through the same SQL functions internal GraphQL exposes, so the CLI and GraphQL apply
// one rule.
//
//   default-feed-users add <username> | remove <username> | list      (contract 10; usage errors exit 2)
//   reports list [--json]                                               (contract 14, moderation: every
//   reports resolve|dismiss|reopen <reportId>                            failure, bad arguments included,
//   posts remove <postId> --reason <text> | posts restore <postId>       exits 1 with one line naming it)
//   users suspend <userId> [--days N] --reason <text> | users unsuspend <userId>
//   hubs remove <hubId> --reason <text>
//   moderation-log [--json]
//
// Moderation actions are logged with the operator's login as who acted (app.moderator).
import os from 'node:os';
import pg from 'pg';
import { loadConfig } from '../../config.ts';
import { openDatabase, type Database } from '../database.ts';
import { runningEmbeddedUrl } from '../embedded.ts';

const feedUsage = 'usage: npm run admin -- default-feed-users add <username> | remove <username> | list';
const moderationUsage =
  'usage: npm run admin -- reports list [--json] | reports resolve|dismiss|reopen <reportId> | posts remove <postId> --reason <text> | ' +
  'posts restore <postId> | users suspend <userId> [--days N] --reason <text> | users unsuspend <userId> | hubs remove <hubId> --reason <text> | ' +
  'moderation-log [--json]';

function fail(message: string, code: number): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

// The CLI parses its arguments; what makes them valid (an id that names a row, a reason of 1 to
// 1000 characters, a suspension of 1 to 36,500 days) is the SQL functions' to decide, as for
// GraphQL: their errors are turned into the lines below.
interface Command {
  /** Runs in the app_admin transaction; returns what stdout shows. */
  run(client: pg.Client): Promise<string>;
  /** What an unknown or malformed id names. */
  subject?: string;
  /** What a VALIDATION_FAILED answer means for this command. */
  invalid?: string;
}

const reasonRule = '--reason must be 1 to 1000 characters, not blank';
const daysRule = '--days must be a whole number from 1 to 36500';

/** Splits `--name value` options (and the `--json` flag) from the positional arguments. */
function parse(args: string[], options: readonly string[]): { positional: string[]; values: Record<string, string>; json: boolean } {
  const positional: string[] = [];
  const values: Record<string, string> = {};
  let json = false;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    if (arg === '--json') {
      json = true;
    } else if (arg.startsWith('--')) {
      const name = arg.slice(2);
      const value = args[i + 1];
      if (!options.includes(name)) fail(`unknown option ${arg}`, 1);
      if (value === undefined || value.startsWith('--')) fail(`${arg} needs a value`, 1);
      values[name] = value;
      i += 1;
    } else {
      positional.push(arg);
    }
  }
  return { positional, values, json };
}

interface LogRow {
  action: string;
  target_type: string;
  target_id: string;
  reason: string | null;
  report_ids: string[];
  created_at: Date;
}

const logEntry = (row: LogRow) => ({
  action: row.action,
  targetType: row.target_type,
  targetId: row.target_id,
  reason: row.reason,
  reportIds: row.report_ids,
  createdAt: row.created_at.toISOString(),
});

const describeEntry = (row: LogRow) =>
  `${row.action} ${row.target_type} ${row.target_id}` +
  (row.report_ids.length > 0 ? ` (reports ${row.report_ids.join(', ')})` : '') +
  (row.reason ? `: ${row.reason}` : '');

/** One moderation action: `select * from app.<fn>(...)` answers its log row. */
function action(fn: string, params: unknown[], subject: string, json: boolean, invalid?: string): Command {
  return {
    subject,
    invalid,
    async run(client) {
      const placeholders = params.map((_, i) => `$${i + 1}`).join(', ');
      const { rows } = await client.query<LogRow>(`select * from app.${fn}(${placeholders})`, params);
      const row = rows[0] as LogRow;
      return json ? JSON.stringify(logEntry(row)) : describeEntry(row);
    },
  };
}

/** The id argument and what an error about it names (`post with the id "..."`). */
function requireId(value: string | undefined, what: string): { id: string; subject: string } {
  if (value === undefined) fail(`missing ${what} id\n${moderationUsage}`, 1);
  return { id: value, subject: `${what} with the id "${value}"` };
}

function requireReason(values: Record<string, string>): string {
  if (values.reason === undefined) fail('--reason <text> is required', 1);
  return values.reason;
}

function feedCommand(args: string[]): Command {
  const [verb, username, ...extra] = args;
  const needsName = verb === 'add' || verb === 'remove';
  if (!(needsName || verb === 'list') || needsName !== (username !== undefined) || extra.length > 0) fail(feedUsage, 2);
  return {
    async run(client) {
      if (verb === 'list') {
        const { rows } = await client.query<{ username: string; added_at: Date }>(
          `select u.username, d.added_at from app.default_feed_users d join app.users u on u.id = d.user_id order by u.username`,
        );
        return rows.length === 0
          ? 'no default feed users'
          : rows.map((row) => `${row.username}\tadded ${row.added_at.toISOString()}`).join('\n');
      }
      if (verb === 'add') {
        await client.query('select app.add_default_feed_user($1)', [username]);
        return `${username} is a default feed user`;
      }
      const { rows } = await client.query<{ removed: boolean }>('select app.remove_default_feed_user($1) as removed', [username]);
      return rows[0]?.removed ? `${username} is no longer a default feed user` : `${username} was not a default feed user`;
    },
    subject: `user with the username "${username}"`,
  };
}

function moderationCommand(resource: string, args: string[]): Command {
  const [verb, ...rest] = args;
  const extraPositional = (positional: string[], count: number) => {
    if (positional.length > count) fail(`unexpected argument "${positional[count]}"\n${moderationUsage}`, 1);
  };
  if (resource === 'moderation-log') {
    const { positional, json } = parse(args, []);
    extraPositional(positional, 0);
    return {
      async run(client) {
        const { rows } = await client.query<LogRow>(
          'select action, target_type, target_id, reason, report_ids, created_at from app.moderation_log order by created_at desc, id desc',
        );
        if (json) return JSON.stringify(rows.map(logEntry));
        return rows.length === 0
          ? 'the moderation log is empty'
          : rows.map((row) => `${row.created_at.toISOString()}\t${describeEntry(row)}`).join('\n');
      },
    };
  }
  if (resource === 'reports' && verb === 'list') {
    const { positional, json } = parse(rest, []);
    extraPositional(positional, 0);
    return {
      async run(client) {
        const { rows } = await client.query<{
          target_type: string;
          target_id: string;
          report_ids: string[];
          count: number;
          reasons: string[];
          snapshot: unknown;
        }>('select target_type, target_id, report_ids, count, reasons, snapshot from app.open_report_groups()');
        const groups = rows.map((row) => ({
          targetType: row.target_type,
          targetId: row.target_id,
          reportIds: row.report_ids,
          count: row.count,
          reasons: row.reasons,
          snapshot: row.snapshot,
        }));
        if (json) return JSON.stringify(groups);
        return groups.length === 0
          ? 'no open reports'
          : groups
              .map((g) => `${g.targetType} ${g.targetId}\t${g.count} report(s): ${g.reasons.join(', ')}\t${g.reportIds.join(' ')}`)
              .join('\n');
      },
    };
  }
  if (resource === 'reports' && (verb === 'resolve' || verb === 'dismiss' || verb === 'reopen')) {
    const { positional, json } = parse(rest, []);
    extraPositional(positional, 1);
    const { id, subject } = requireId(positional[0], 'report');
    return action(`${verb}_report`, [id], subject, json);
  }
  if (resource === 'posts' && (verb === 'remove' || verb === 'restore')) {
    const { positional, values, json } = parse(rest, verb === 'remove' ? ['reason'] : []);
    extraPositional(positional, 1);
    const { id, subject } = requireId(positional[0], 'post');
    return verb === 'remove'
      ? action('remove_post', [id, requireReason(values)], subject, json, reasonRule)
      : action('restore_post', [id], subject, json);
  }
  if (resource === 'users' && (verb === 'suspend' || verb === 'unsuspend')) {
    const { positional, values, json } = parse(rest, verb === 'suspend' ? ['reason', 'days'] : []);
    extraPositional(positional, 1);
    const { id, subject } = requireId(positional[0], 'user');
    if (verb === 'unsuspend') return action('unsuspend_user', [id], subject, json);
    const reason = requireReason(values);
    // A whole number the SQL's int takes; its range is app.suspend_user's to check.
    if (values.days !== undefined && !/^[0-9]{1,9}$/.test(values.days)) fail(daysRule, 1);
    const days = values.days === undefined ? null : Number(values.days);
    return action('suspend_user', [id, days, reason], subject, json, `${reasonRule}, and --days a whole number from 1 to 36500`);
  }
  if (resource === 'hubs' && verb === 'remove') {
    const { positional, values, json } = parse(rest, ['reason']);
    extraPositional(positional, 1);
    const { id, subject } = requireId(positional[0], 'hub');
    return action('remove_hub', [id, requireReason(values)], subject, json, reasonRule);
  }
  fail(moderationUsage, 1);
}

const [resource, ...args] = process.argv.slice(2);
const command =
  resource === 'default-feed-users'
    ? feedCommand(args)
    : resource && ['reports', 'posts', 'users', 'hubs', 'moderation-log'].includes(resource)
      ? moderationCommand(resource, args)
      : fail(`${feedUsage}\n${moderationUsage}`, 2);

const notFound = new Set(['USER_NOT_FOUND', 'POST_NOT_FOUND', 'HUB_NOT_FOUND', 'REPORT_NOT_FOUND']);

const config = loadConfig();
let database: Database | undefined;
const running = config.databaseUrl ? undefined : runningEmbeddedUrl(config.dataDir);
// Tooling does not migrate a database it is pointed at (`npm run migrate` does); the embedded one is
// brought up to date when it is started for the command.
const url = running ?? (database = await openDatabase({ ...config, migrateOnStart: false })).ownerUrl;
const client = new pg.Client({ connectionString: url });
let exitCode = 0;
try {
  await client.connect();
  await client.query('begin');
  await client.query('set local role app_admin');
  await client.query(`select set_config('app.moderator', $1, true)`, [`cli:${os.userInfo().username}`]);
  const output = await command.run(client);
  await client.query('commit');
  process.stdout.write(`${output}\n`);
} catch (error) {
  const { code, message } = error as { code?: string; message: string };
  exitCode = 1;
  process.stderr.write(
    // 22P02: an id that is not a uuid names no row either.
    (code === 'P0001' && notFound.has(message)) || (code === '22P02' && command.subject)
      ? `no ${command.subject ?? 'such record'}\n`
      : code === 'P0001' && message === 'VALIDATION_FAILED'
        ? `${command.invalid ?? 'invalid arguments'}\n`
        : `failed: ${message}\n`,
  );
} finally {
  await client.end().catch(() => undefined);
  await database?.stop();
}
process.exit(exitCode);
