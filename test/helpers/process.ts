// Real processes for tests about processes: the entry point or an npm script in a child process
// (its own process group, like a terminal's foreground job), its output collected, waits on
// conditions (never on fixed sleeps).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const projectRoot = path.resolve(import.meta.dirname, '../..');

export interface RunningProcess {
  child: ChildProcess;
  output(): string;
  /** Lines the process logged at warn level or above (pino: 40 warn, 50 error, 60 fatal). */
  problems(): { level: number; msg: string; err?: unknown }[];
  exited: Promise<number | null>;
  waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs?: number): Promise<void>;
  /** Like waitFor, also after the process itself ended (for what its children still do). */
  waitForAfterExit(condition: () => boolean | Promise<boolean>, what: string, timeoutMs?: number): Promise<void>;
}

/** `cwd`: the folder it runs in (this checkout unless given: another release's tree). */
export function startProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  { cwd = projectRoot }: { cwd?: string } = {},
): RunningProcess {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, NODE_ENV: 'development', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const running: RunningProcess = {
    child,
    output: () => output,
    problems: () =>
      output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown })
        .filter((line) => line.level >= 40),
    exited,
    waitFor: (condition, what, timeoutMs = 45_000) => poll(condition, what, timeoutMs, true),
    waitForAfterExit: (condition, what, timeoutMs = 45_000) => poll(condition, what, timeoutMs, false),
  };
  async function poll(condition: () => boolean | Promise<boolean>, what: string, timeoutMs: number, whileRunning: boolean) {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (whileRunning && (child.exitCode !== null || child.signalCode !== null))
        throw new Error(`the process ended while waiting for ${what}; output:\n${output}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return running;
}

/** Ends every process still running with SIGKILL to its whole group, and waits for all of them. */
export async function killAll(processes: Iterable<RunningProcess | undefined>): Promise<void> {
  const all = [...processes].filter((running) => running !== undefined);
  for (const { child } of all) if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), 'SIGKILL');
  await Promise.all(all.map((running) => running.exited));
}

/** Whether anything still answers at the URL. */
export async function answers(url: string): Promise<boolean> {
  return fetch(url).then(
    () => true,
    () => false,
  );
}

/** The PostgreSQL of a data folder is running (its postmaster.pid names a live process). */
export function clusterRunning(clusterDir: string): boolean {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return false;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
