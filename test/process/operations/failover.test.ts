// Losing the primary (contract part 19) with the production shape of docs/deployment.md: etcd,
// three Patroni nodes of PostgreSQL 15 (synchronous_mode) and HAProxy (test/helpers/patroni.ts,
// test timing: ttl 10 s, loop_wait 1 s), the API and the worker as real processes with DATABASE_URL
// on HAProxy's leader port, under keyed and unkeyed comments, reads and a notification stream
// (test/helpers/failover-load.ts). Three faults of the leader, one after the other on one cluster:
// kill -9 (it then rejoins, rewound), SIGSTOP (a hung machine; thawed, it rejoins) and a planned
// `patronictl switchover`. After each: every acknowledged comment is there once and none twice,
// the stream delivered every notification, the export asked for just before the fault is ready
// (the worker resumed), and the only failed answers are 503 with Retry-After; a switchover fails no
// keyed write and no read.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FailoverLoad, faultRound, startServices, type FaultRound, type Services } from '../../helpers/failover-load.ts';
import { startPatroniCluster, type PatroniCluster } from '../../helpers/patroni.ts';

let cluster: PatroniCluster;
let services: Services;
let load: FailoverLoad;

beforeAll(async () => {
  cluster = await startPatroniCluster({ timing: 'test' });
  services = await startServices({ primaryUrl: cluster.primaryUrl, replicaUrl: cluster.replicaUrl, s3Endpoint: inject('s3Endpoint') });
  load = await FailoverLoad.prepare(services.apiUrl, 6);
}, 180_000);

afterAll(async () => {
  await load?.close();
  await services?.stop();
  await cluster?.stop();
}, 60_000);

/** What every fault keeps: nothing acknowledged lost, nothing doubled, nothing missed, the job done. */
function expectNothingLost(round: FaultRound): void {
  const { check, report } = round;
  expect(report.keyedAcknowledged.length, 'keyed comments acknowledged').toBeGreaterThan(0);
  expect(check.lost, 'acknowledged comments missing').toEqual([]);
  expect(check.doubled, 'comments stored twice').toEqual([]);
  expect(check.missed, 'notifications the stream missed').toEqual([]);
  expect(check.duplicates, 'notifications the stream sent twice').toEqual([]);
  expect(round.exportStatus, 'the export asked for before the fault').toBe('ready');
  expect(round.newLeader).not.toBe(round.leader);
}

const summary = (round: FaultRound) =>
  `${round.fault}: ${round.leader} -> ${round.newLeader} in ${round.leaderAfterSeconds.toFixed(1)} s, write gap ${round.writeGapSeconds.toFixed(1)} s, ` +
  `failures ${JSON.stringify(Object.fromEntries(round.failures))}\n${services.api.output().slice(-3000)}`;

describe('losing the primary under load', () => {
  it(
    'kill -9 of the leader: a new leader takes writes; only 503 with Retry-After meanwhile; the old leader rejoins',
    { timeout: 120_000 },
    async () => {
      const round = await faultRound(cluster, load, 'kill', 0);
      expect(round.badFailures, summary(round)).toEqual([]);
      expectNothingLost(round);
      // The killed node comes back as a standby of the new leader (pg_rewind when it had diverged).
      expect(await cluster.waitHealthy()).toBe(round.newLeader);
      expect((await cluster.members()).find((member) => member.name === round.leader)?.role).not.toBe('leader');
    },
  );

  it(
    'a frozen leader (SIGSTOP): HAProxy cuts its sessions, a new leader takes writes; only 503 with Retry-After',
    { timeout: 120_000 },
    async () => {
      const round = await faultRound(cluster, load, 'freeze', 1);
      expect(round.badFailures, summary(round)).toEqual([]);
      expectNothingLost(round);
      expect(await cluster.waitHealthy()).toBe(round.newLeader);
    },
  );

  it('a planned switchover fails no keyed write and no read: they wait and are retried by the server', { timeout: 120_000 }, async () => {
    const round = await faultRound(cluster, load, 'switchover', 2);
    const keyedOrRead = round.report.answers.filter((answer) => answer.kind !== 'unkeyed' && (answer.status < 200 || answer.status >= 300));
    expect(keyedOrRead, summary(round)).toEqual([]);
    expect(round.badFailures, summary(round)).toEqual([]);
    expectNothingLost(round);
  });
});
