// The restore drill (tools/restore-drill.ts, `npm run drill:restore`, docs/backups.md) as part of
// the suite: a PostgreSQL 15 cluster of the machine's binaries archiving with Debian's pgBackRest,
// the API and the worker as processes, a backup, a point-in-time restore into a new data directory,
// the service on the restored database, and the drill's own checks (what was committed before the
// noted time is there and nothing after it, counters agree, pending sealed ballots open and tally
// with the same BALLOT_KEY, `pgbackrest verify` passes). Run with a plain repository (neither
// compressed nor encrypted), so that its search of the repository's files for BALLOT_KEY reads what
// PostgreSQL wrote: a post's text written through the API is found there, the key is not.
import { describe, expect, it } from 'vitest';
import { startProcess } from '../helpers/process.ts';

interface DrillResult {
  ok: boolean;
  restoreSeconds: number;
  dataBytes: number;
  unarchivedBytes: number;
  keyFiles: number;
  markerFiles: number;
  failures: string[];
}

describe('npm run drill:restore', () => {
  it('restores a backup to a point in time and the service runs on it with everything before the point and nothing after', { timeout: 300_000 }, async () => {
    const drill = startProcess(process.execPath, ['tools/restore-drill.ts', '--plain-repository'], {});
    const code = await drill.exited;
    const output = drill.output();
    expect(code, output).toBe(0);
    const line = output.split('\n').find((text) => text.startsWith('drill result: '));
    expect(line, output).toBeDefined();
    const result = JSON.parse((line as string).slice('drill result: '.length)) as DrillResult;
    expect(result.failures, output).toEqual([]);
    expect(result.ok).toBe(true);
    // The key is in no file of the repository, which holds what the API wrote in the clear.
    expect(result.keyFiles, output).toBe(0);
    expect(result.markerFiles, output).toBeGreaterThan(0);
    expect(output).toMatch(/^restored [\d.]+ MB to .* in [\d.]+ s: files/m);
    expect(output).toMatch(/^recovery point: last transaction replayed committed at /m);
    expect(output).toContain('ok    pgbackrest verify passes on the repository');
    expect(output).toMatch(/drill passed\n$/);
  });
});
