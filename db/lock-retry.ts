// Runs a migration step that takes locks without ever making requests queue behind it for long:
// each try runs in its own transaction under a short lock_timeout (a request that arrives while the
// step waits for a lock queues behind it for at most that long), a try that times out rolls back
// whole and the step is tried again after a growing pause, and after a bounded time the step gives up
// with one line naming what it waited for and which process holds it. The pattern of GitLab's
// with_lock_retries and pgroll's lock timeout: the migration waits, requests do not.
import pg from 'pg';
import { StartupError } from '../config.ts';

export interface LockRetryOptions {
  /** lock_timeout of each try (MIGRATION_LOCK_TIMEOUT_MS, default 200). */
  lockTimeoutMs: number;
  /** How long a step may keep retrying before it gives up (MIGRATION_LOCK_WAIT_SECONDS, default 900). */
  maxWaitSeconds: number;
  /** Told once when a step starts waiting, and when it got through after waiting. */
  log?: (line: string) => void;
}

export const defaultLockRetry: LockRetryOptions = { lockTimeoutMs: 200, maxWaitSeconds: 900 };

/** A step that waited longer than its bound: its message is the one line an operator reads (exit 1). */
export class LockWaitGaveUp extends StartupError {}

const isLockTimeout = (error: unknown) => (error as { code?: string }).code === '55P03';

/** What the migrating backend waited for, and who held it, as last seen by the watcher. */
interface Blocker {
  wanted: string;
  holder: string;
}

/**
 * Watches the backend `pid` from a connection of its own while a try runs, keeping the last lock it
 * was seen waiting for and the processes holding it (pg_blocking_pids).
 */
async function watch(url: string, pid: number): Promise<{ last(): Blocker | undefined; stop(): Promise<void> }> {
  const watcher = new pg.Client({ connectionString: url, application_name: 'migration lock watcher' });
  watcher.on('error', () => {});
  await watcher.connect();
  let last: Blocker | undefined;
  let busy = false;
  const sample = async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await watcher.query<{ wanted: string; holder: string }>(
        `select format('%s on %s', l.mode, coalesce(l.relation::regclass::text, l.locktype)) as wanted,
                string_agg(format('pid %s (%s, user %s, %s for %s s: %s)', b.pid, coalesce(nullif(b.application_name, ''), 'no application name'),
                  b.usename, b.state, coalesce(extract(epoch from now() - b.xact_start)::int, 0), left(regexp_replace(b.query, '\\s+', ' ', 'g'), 80)), '; ') as holder
           from pg_locks l
           cross join lateral unnest(pg_blocking_pids(l.pid)) as bp(pid)
           join pg_stat_activity b on b.pid = bp.pid
          where l.pid = $1 and not l.granted
          group by l.mode, l.relation, l.locktype`,
        [pid],
      );
      if (rows[0]) last = rows[0];
    } catch {
      // The watcher only informs the message; a failed sample changes nothing.
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void sample(), 50);
  return {
    last: () => last,
    stop: async () => {
      clearInterval(timer);
      await watcher.end().catch(() => undefined);
    },
  };
}

/**
 * Runs `step` in a transaction of its own on `client` under the lock timeout, retrying as above.
 * `what` names the step in messages ("policy posts_select on app.posts"). `transaction: false` runs
 * `step` outside a transaction (statements that cannot run in one); a try that fails then leaves what
 * its statements did, and the step must be written to be run again (`if not exists`).
 */
export async function withLockRetries(
  client: pg.Client,
  url: string,
  what: string,
  step: () => Promise<void>,
  options: LockRetryOptions,
  { transaction = true }: { transaction?: boolean } = {},
): Promise<void> {
  const started = Date.now();
  const pid = ((await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0] as { pid: number }).pid;
  const watcher = await watch(url, pid);
  let waited = false;
  try {
    for (let attempt = 0; ; attempt += 1) {
      try {
        if (transaction) await client.query('begin');
        await client.query(`set ${transaction ? 'local ' : ''}lock_timeout = ${Number(options.lockTimeoutMs)}`);
        await step();
        if (transaction) await client.query('commit');
        else await client.query('reset lock_timeout');
        if (waited) options.log?.(`${what}: applied after waiting ${((Date.now() - started) / 1000).toFixed(1)} s for locks`);
        return;
      } catch (error) {
        // A step that manages its own transactions (node-pg-migrate's) may leave one aborted.
        await client.query('rollback').catch(() => undefined);
        if (!transaction) await client.query('reset lock_timeout').catch(() => undefined);
        if (!isLockTimeout(error)) throw error;
        const blocker = watcher.last();
        const held = blocker ? `${blocker.wanted}, held by ${blocker.holder}` : 'a lock (its holder had gone before it was seen)';
        if (!waited) options.log?.(`${what}: waiting for ${held}; retrying every few seconds, requests are not held`);
        waited = true;
        const elapsed = (Date.now() - started) / 1000;
        if (elapsed >= options.maxWaitSeconds) {
          throw new LockWaitGaveUp(
            `migration gave up after ${Math.round(elapsed)} s: ${what} waits for ${held} (MIGRATION_LOCK_WAIT_SECONDS=${options.maxWaitSeconds}); end that transaction or run the migration later`,
          );
        }
        // 50 ms, doubling to 2 s, with jitter, never past the bound.
        const pause = Math.min(2000, 50 * 2 ** Math.min(attempt, 6)) * (0.75 + Math.random() / 2);
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(pause, Math.max(0, options.maxWaitSeconds * 1000 - (Date.now() - started)))),
        );
      }
    }
  } finally {
    await watcher.stop();
  }
}
