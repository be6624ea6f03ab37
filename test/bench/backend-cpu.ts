// CPU time of PostgreSQL backends (and of the service process), read from /proc/<pid>/schedstat:
// the nanoseconds the scheduler ran the process, the database's own cost of a phase, whatever the
// client does. (/proc/<pid>/stat counts in 10 ms ticks per process: with 16 backends that is up to
// 0.16 ms of error per operation over 1,000 operations, as large as a session lookup.) Works when
// the server runs on this machine (the embedded default, or DATABASE_URL on localhost); elsewhere
// it reports null.
import { readFileSync } from 'node:fs';

/** CPU seconds used so far by each pid that still exists. */
export function cpuSeconds(pids: number[]): Map<number, number> {
  const used = new Map<number, number>();
  for (const pid of pids) {
    try {
      // First field: time spent on the CPU, in nanoseconds.
      const onCpu = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0];
      used.set(pid, Number(onCpu) / 1e9);
    } catch {
      // The backend has ended (or runs on another machine).
    }
  }
  return used;
}

/** CPU seconds spent between two readings; pids new in `after` count from zero. */
export function cpuDelta(before: Map<number, number>, after: Map<number, number>): number | null {
  if (after.size === 0) return null;
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}
