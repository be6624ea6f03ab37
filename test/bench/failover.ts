// Losing the primary: `npm run bench -- failover`. Not part of `npm test`.
//
// The production database shape (test/helpers/patroni.ts: etcd, three Patroni nodes of PostgreSQL
// 15 with synchronous_mode, HAProxy; Debian's packages) at test timing (ttl 10 s, loop_wait 1 s,
// retry_timeout 4 s), the API and the worker as processes on HAProxy, and 12 clients like phones
// (test/helpers/failover-load.ts: keyed comments retried with their key after a 503, unkeyed
// comments, reads, one notification stream resuming with Last-Event-ID). Each fault runs
// BENCH_FAILOVER_ROUNDS (3) times, one after the other on one cluster: kill -9 of the leader node
// (it then rejoins), a frozen leader (SIGSTOP, then thawed) and `patronictl switchover`. Then, on a
// second cluster with the production timing of deploy/patroni/patroni.yml (ttl 30 s, loop_wait 10 s),
// one kill. Each round prints its figures; the goal lines follow (medians over the rounds):
//   kill_write_gap_s <= 12, freeze_write_gap_s <= 14, switchover_write_gap_s <= 3 (the longest
//   stretch without a write answered 2xx, from the fault on), switchover_failed_requests = 0 (keyed
//   writes and reads answered other than 2xx), acknowledged_writes_lost = 0, keyed_writes_doubled = 0
//   (any comment stored twice), responses_5xx_other_than_503 = 0 (and 503 without Retry-After),
//   stream_notifications_missed = 0 (these counts summed over the rounds), and kill_write_gap_production_s
//   <= ttl + loop_wait + 3 = 43 (measured once).
// BENCH_FAILOVER_CHECKOUT: run another checkout's API and worker (for a figure before a change).
// BENCH_FAILOVER_PRODUCTION=0 skips the production-timing kill.
// BENCH_FAILOVER_FAULTS=switchover (a comma list of kill, freeze, switchover) runs those faults only.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { freePort } from '../../db/free-port.ts';
import { ensureEngines } from '../helpers/engines.ts';
import { FailoverLoad, faultRound, startServices, type Fault, type FaultRound } from '../helpers/failover-load.ts';
import { startPatroniCluster, timings } from '../helpers/patroni.ts';
import { keepFolders } from '../../server/uploads/s3rver-folders.ts';

const rounds = Number(process.env.BENCH_FAILOVER_ROUNDS ?? 3);
const clients = Number(process.env.BENCH_FAILOVER_CLIENTS ?? 12);
const checkout = process.env.BENCH_FAILOVER_CHECKOUT;
const production = process.env.BENCH_FAILOVER_PRODUCTION !== '0';
const kinds = (process.env.BENCH_FAILOVER_FAULTS ?? 'kill,freeze,switchover').split(',').map((kind) => kind.trim()) as Fault[];
const log = (line: string) => process.stdout.write(`${line}\n`);
const fmt = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(1));
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
/** A count that must stay 0 in every round: its sum over the rounds, with each round's. */
function countGoal(name: string, values: number[]): void {
  const total = values.reduce((sum, value) => sum + value, 0);
  log(`goal ${name}: ${total} (${values.join(', ')} per round; target 0) ${total === 0 ? 'ok' : 'short'}`);
}
function goal(name: string, values: number[], target: string, ok: (value: number) => boolean): void {
  if (values.length === 0) {
    log(`goal ${name}: n/a (its fault did not run; target ${target}) short`);
    return;
  }
  const value = median(values);
  log(
    `goal ${name}: ${fmt(value)} (min ${fmt(Math.min(...values))}, max ${fmt(Math.max(...values))}; target ${target}) ${ok(value) ? 'ok' : 'short'}`,
  );
}

ensureEngines();
const s3Directory = await mkdtemp(path.join(os.tmpdir(), 'opinion-failover-bench-s3-'));
const s3Port = await freePort();
const s3 = keepFolders(new S3rver({ address: '127.0.0.1', port: s3Port, directory: s3Directory, silent: true }));
await s3.run();
const s3Endpoint = `http://127.0.0.1:${s3Port}`;

function printRound(round: FaultRound, timing: string): void {
  const failures = [...round.failures].map(([name, count]) => `${count} x ${name}`).join(', ') || 'none';
  log(
    `${round.fault} (${timing}): ${round.leader} -> ${round.newLeader}, writable after ${fmt(round.leaderAfterSeconds)} s; write gap ${fmt(round.writeGapSeconds)} s; ` +
      `acknowledged ${round.report.keyedAcknowledged.length} keyed + ${round.report.unkeyedAcknowledged.length} unkeyed, lost ${round.check.lost.length}, doubled ${round.check.doubled.length}; ` +
      `answers other than 2xx: ${failures}; stream ${round.check.delivered} delivered, ${round.check.missed.length} missed; export ${round.exportStatus}`,
  );
}

/** One cluster of `timing`, the services on it, and `faults` in order. */
async function runOn(timing: keyof typeof timings, faults: Fault[], exportsFrom: number): Promise<FaultRound[]> {
  const cluster = await startPatroniCluster({ timing });
  const results: FaultRound[] = [];
  try {
    const services = await startServices({ primaryUrl: cluster.primaryUrl, replicaUrl: cluster.replicaUrl, s3Endpoint, cwd: checkout });
    const load = await FailoverLoad.prepare(services.apiUrl, clients);
    try {
      for (const [n, fault] of faults.entries()) {
        const round = await faultRound(cluster, load, fault, (exportsFrom + n) % clients);
        printRound(round, timing);
        results.push(round);
      }
    } finally {
      await load.close();
      await services.stop();
    }
  } finally {
    await cluster.stop();
  }
  return results;
}

try {
  log(
    `failover bench: ${os.cpus().length} CPUs, PostgreSQL 15 (Debian), ${clients} clients, ${rounds} rounds of each fault${checkout ? `, code of ${checkout}` : ''}`,
  );
  const faults: Fault[] = [];
  for (let round = 0; round < rounds; round += 1) faults.push(...kinds);
  const results = await runOn('test', faults, 0);
  const of = (fault: Fault) => results.filter((round) => round.fault === fault);
  const productionKill = production ? (await runOn('production', ['kill'], 0))[0] : undefined;
  const all = productionKill ? [...results, productionKill] : results;

  log('');
  goal(
    'kill_write_gap_s',
    of('kill').map((round) => round.writeGapSeconds),
    '<= 12',
    (value) => value <= 12,
  );
  goal(
    'freeze_write_gap_s',
    of('freeze').map((round) => round.writeGapSeconds),
    '<= 14',
    (value) => value <= 14,
  );
  goal(
    'switchover_write_gap_s',
    of('switchover').map((round) => round.writeGapSeconds),
    '<= 3',
    (value) => value <= 3,
  );
  countGoal(
    'switchover_failed_requests',
    of('switchover').map(
      (round) => round.report.answers.filter((answer) => answer.kind !== 'unkeyed' && (answer.status < 200 || answer.status >= 300)).length,
    ),
  );
  countGoal(
    'acknowledged_writes_lost',
    all.map((round) => round.check.lost.length),
  );
  countGoal(
    'keyed_writes_doubled',
    all.map((round) => round.check.doubled.length),
  );
  countGoal(
    'responses_5xx_other_than_503',
    all.map((round) => round.badFailures.length),
  );
  countGoal(
    'stream_notifications_missed',
    all.map((round) => round.check.missed.length),
  );
  if (productionKill) {
    const { ttl, loop_wait } = timings.production;
    const bound = ttl + loop_wait + 3;
    log(
      `goal kill_write_gap_production_s: ${fmt(productionKill.writeGapSeconds)} (once; ttl ${ttl} s, loop_wait ${loop_wait} s; target <= ${bound}) ${productionKill.writeGapSeconds <= bound ? 'ok' : 'short'}`,
    );
  }
} finally {
  await s3.close();
  await rm(s3Directory, { recursive: true, force: true });
}
