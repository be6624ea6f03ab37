// One pino logger for the process. Request logs carry method, route, status, timing and ids only:
// never bodies, tokens, OTP codes or phone numbers (server/http/request-context.ts decides what goes in).
// A terminal (stdout is a TTY, NODE_ENV is not production) gets pino-pretty's readable lines, a
// development dependency loaded only then; anything else (files, pipes, containers) gets one JSON
// object per line.
import { createRequire } from 'node:module';
import pino from 'pino';
import { Logger as WorkerLogger } from 'graphile-worker';

export type Log = pino.Logger;

export interface LogOutput {
  /** Where lines go (default: stdout). */
  destination?: pino.DestinationStream;
  /** Readable lines instead of JSON (default: stdout is a terminal and NODE_ENV is not production). */
  pretty?: boolean;
}

/** Whether this process writes readable lines: a terminal, outside production. */
export function prettyByDefault(env: NodeJS.ProcessEnv = process.env, stdoutIsTty = process.stdout.isTTY === true): boolean {
  return stdoutIsTty && env.NODE_ENV !== 'production';
}

type PrettyFactory = (options: Record<string, unknown>) => pino.DestinationStream;

function prettyStream(destination: pino.DestinationStream | undefined): pino.DestinationStream | undefined {
  let pretty: PrettyFactory;
  try {
    pretty = createRequire(import.meta.url)('pino-pretty') as PrettyFactory;
  } catch {
    return undefined; // an install without development dependencies: JSON lines
  }
  return pretty({
    sync: true,
    colorize: destination === undefined && process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
    ...(destination ? { destination } : {}),
  });
}

/** stdout, written synchronously; a closed terminal (EIO, EPIPE) silences the log instead of ending the process. */
function stdoutDestination(): pino.DestinationStream {
  const destination = pino.destination({ fd: 1, sync: true });
  destination.on('error', () => {});
  return destination;
}

export function createLogger(level: string, output: LogOutput | pino.DestinationStream = {}): Log {
  const { destination, pretty = prettyByDefault() } = 'write' in output ? { destination: output, pretty: false } : output;
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'opinion-backend' },
    redact: {
      paths: ['*.authorization', '*.password', '*.accessToken', '*.refreshToken', '*.phoneNumber', '*.phoneE164'],
      censor: '[redacted]',
    },
  };
  return pino(options, (pretty ? prettyStream(destination) : undefined) ?? destination ?? stdoutDestination());
}

/**
 * graphile-worker's lines about failing to reach the database and retrying: its listening
 * connection, its periodic reset of locked jobs and its cron loop, one line per retry, with no code
 * to tell them by. They are logged at debug level and handed to `onRetry`; the worker's OutageLog
 * (worker/runner.ts) reports the outage once instead.
 */
const workerRetryLines =
  /^(Error with notify listener|Error occurred attempting to UNLISTEN|Error occurred releasing client|Failed to reset locked; we'll try again|Cron hit an error; restarting)/;

/** graphile-worker's line for every job that succeeded: routine, so a debug line. */
const workerRoutineLines = /^Completed task /;

/**
 * A job as a log line shows it: its id, task, attempts and queue, never its payload (hundreds of
 * characters of ids on every line; the row in graphile_worker.jobs holds it while the job is
 * pending or failing).
 */
function jobSummary(job: unknown): unknown {
  if (typeof job !== 'object' || job === null) return job;
  const { id, task_identifier: task, attempts, max_attempts: maxAttempts, queue_name: queue } = job as Record<string, unknown>;
  return { id, task, attempts, maxAttempts, ...(queue ? { queue } : {}) };
}

/**
 * graphile-worker's logger interface, writing to the process logger. Info keeps what an operator
 * acts on (the worker starting, shutdowns, warnings); a finished job is a debug line; a failed job
 * is an error line. A job shows as its id, task and attempts, not its payload.
 */
export function workerLogger(log: Log, onRetry?: (error: unknown) => void): WorkerLogger {
  return new WorkerLogger((scope) => (level, message, meta) => {
    const child = log.child({ worker: { ...scope } });
    const retry = workerRetryLines.test(message);
    if (retry) onRetry?.((meta as { error?: unknown } | undefined)?.error ?? message);
    const routine = workerRoutineLines.test(message);
    const method =
      retry || routine ? 'debug' : level === 'error' ? 'error' : level === 'warning' ? 'warn' : level === 'debug' ? 'debug' : 'info';
    const fields = meta && 'job' in meta ? { ...meta, job: jobSummary(meta.job) } : (meta ?? {});
    child[method](fields, message);
  });
}

/**
 * One component's database outages in the log (API requests, the notification hub, the worker):
 * one warning when the component first fails to reach the database, then nothing for the failures
 * that follow (retries, reconnects), and one line when it works again, with how long it lasted and
 * how many failures it counted. A retry loop calls failed() on every failure and recovered() on
 * every success.
 */
export class OutageLog {
  #log: Log;
  #effect: string;
  #countName: string;
  #since: number | undefined;
  #count = 0;

  /** `effect`: what the component does meanwhile ("answering 503 until it is back"). */
  constructor(log: Log, component: string, effect: string, countName = 'failures') {
    this.#log = log.child({ component });
    this.#effect = effect;
    this.#countName = countName;
  }

  get active(): boolean {
    return this.#since !== undefined;
  }

  failed(error: unknown): void {
    this.#count += 1;
    if (this.#since !== undefined) return;
    this.#since = Date.now();
    const reason = error instanceof Error ? error.message || (error as { code?: string }).code : String(error);
    this.#log.warn({ reason }, `database unavailable: ${this.#effect}`);
  }

  recovered(): void {
    if (this.#since === undefined) return;
    this.#log.info({ seconds: (Date.now() - this.#since) / 1000, [this.#countName]: this.#count }, 'database available again');
    this.#since = undefined;
    this.#count = 0;
  }
}
