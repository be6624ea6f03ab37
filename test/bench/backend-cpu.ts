// CPU time of PostgreSQL backends, read from /proc/<pid>/stat (user + system time): the
// database's own cost of a phase, whatever the client does. Works when the server runs on this
// machine (the embedded default, or DATABASE_URL on localhost); elsewhere it reports null.
import { readFileSync } from 'node:fs';

const ticksPerSecond = 100; // USER_HZ on Linux

/** CPU seconds used so far by each pid that still exists. */
export function cpuSeconds(pids: number[]): Map<number, number> {
  const used = new Map<number, number>();
  for (const pid of pids) {
    try {
      // Fields after the command name (which may hold spaces) start at state; utime and stime are 14 and 15.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      used.set(pid, (Number(fields[11]) + Number(fields[12])) / ticksPerSecond);
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
