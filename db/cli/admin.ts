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

interface Command {
  /** Runs in the app_admin transaction; returns what stdout shows. */
  run(client: pg.Client): Promise<string>;
  /** What an unknown-id error names. */
  subject?: string;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
function action(fn: string, params: unknown[], subject: string, json: boolean): Command {
  return {
    subject,
    async run(client) {
      const placeholders = params.map((_, i) => `$${i + 1}`).join(', ');
      const { rows } = await client.query<LogRow>(`select * from app.${fn}(${placeholders})`, params);
      const row = rows[0] as LogRow;
      return json ? JSON.stringify(logEntry(row)) : describeEntry(row);
    },
  };
}

function requireId(value: string | undefined, what: string): string {
  if (value === undefined) fail(`missing ${what}id\n${moderationUsage}`, 1);
  if (!uuidPattern.test(value)) fail(`no ${what.trim()} with the id "${value}"`, 1);
  return value;
}

function requireReason(values: Record<string, string>): string {
  const reason = values.reason;
  if (reason === undefined || reason.trim() === '') fail('--reason <text> is required', 1);
  if (reason.length > 1000) fail('--reason is longer than 1000 characters', 1);
  return reason;
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
        return rows.length === 0 ? 'no default feed users' : rows.map((row) => `${row.username}\tadded ${row.added_at.toISOString()}`).join('\n');
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
        return rows.length === 0 ? 'the moderation log is empty' : rows.map((row) => `${row.created_at.toISOString()}\t${describeEntry(row)}`).join('\n');
      },
    };
  }
  if (resource === 'reports' && verb === 'list') {
    const { positional, json } = parse(rest, []);
    extraPositional(positional, 0);
    return {
      async run(client) {
        const { rows } = await client.query<{ target_type: string; target_id: string; report_ids: string[]; count: number; reasons: string[]; snapshot: unknown }>(
          'select target_type, target_id, report_ids, count, reasons, snapshot from app.open_report_groups()',
        );
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
          : groups.map((g) => `${g.targetType} ${g.targetId}\t${g.count} report(s): ${g.reasons.join(', ')}\t${g.reportIds.join(' ')}`).join('\n');
      },
    };
  }
  if (resource === 'reports' && (verb === 'resolve' || verb === 'dismiss' || verb === 'reopen')) {
    const { positional, json } = parse(rest, []);
    extraPositional(positional, 1);
    return action(`${verb}_report`, [requireId(positional[0], 'report ')], `report with the id "${positional[0]}"`, json);
  }
  if (resource === 'posts' && (verb === 'remove' || verb === 'restore')) {
    const { positional, values, json } = parse(rest, verb === 'remove' ? ['reason'] : []);
    extraPositional(positional, 1);
    const id = requireId(positional[0], 'post ');
    return verb === 'remove'
      ? action('remove_post', [id, requireReason(values)], `post with the id "${id}"`, json)
      : action('restore_post', [id], `post with the id "${id}"`, json);
  }
  if (resource === 'users' && (verb === 'suspend' || verb === 'unsuspend')) {
    const { positional, values, json } = parse(rest, verb === 'suspend' ? ['reason', 'days'] : []);
    extraPositional(positional, 1);
    const id = requireId(positional[0], 'user ');
    if (verb === 'unsuspend') return action('unsuspend_user', [id], `user with the id "${id}"`, json);
    const reason = requireReason(values);
    let days: number | null = null;
    if (values.days !== undefined) {
      if (!/^[0-9]{1,5}$/.test(values.days) || Number(values.days) < 1 || Number(values.days) > 36500) fail('--days must be a whole number from 1 to 36500', 1);
      days = Number(values.days);
    }
    return action('suspend_user', [id, days, reason], `user with the id "${id}"`, json);
  }
  if (resource === 'hubs' && verb === 'remove') {
    const { positional, values, json } = parse(rest, ['reason']);
    extraPositional(positional, 1);
    const id = requireId(positional[0], 'hub ');
    return action('remove_hub', [id, requireReason(values)], `hub with the id "${id}"`, json);
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
const url = running ?? (database = await openDatabase(config)).ownerUrl;
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
    code === 'P0001' && notFound.has(message)
      ? `no ${command.subject ?? 'such record'}\n`
      : code === 'P0001' && message === 'VALIDATION_FAILED'
        ? 'invalid arguments\n'
        : `failed: ${message}\n`,
  );
} finally {
  await client.end().catch(() => undefined);
  await database?.stop();
}
process.exit(exitCode);
