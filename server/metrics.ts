// Prometheus metrics of one process (contract 11), served on METRICS_PORT only, never on the public
// port: requests by route pattern and status (count and latency), every connection pool's use and
// waiters, open notification streams and the dispatcher's lag, worker jobs by task and outcome,
// plus prom-client's process defaults. Labels hold route patterns, never raw URLs or ids.
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import pg from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { WorkerEvents } from 'graphile-worker';
import type { Pools } from '../db/pools.ts';
import type { ReplicaStatus } from '../db/replicas.ts';
import { routePattern } from './http/route-name.ts';

/** Push outcomes, as the push worker reports them (worker/tasks/push/pusher.ts). */
export interface PushCounters {
  sent(kind: 'notification' | 'badge', lagSeconds: number): void;
  failed(outcome: 'given_up' | 'refused'): void;
  retried(reason: string): void;
  deviceDeleted(reason: string): void;
}

/** What the vote endpoint reports (server/votes/routes.ts). */
export interface VoteCounters {
  /** A vote sealed again for hubs app.cast_vote named (a second round trip). */
  resealed(): void;
}

/** What the notification hub reports (server/sse/hub.ts). */
export interface LiveStatus {
  readonly openStreams: number;
  readonly dispatcherLagSeconds: number | undefined;
}

export interface Metrics {
  /** Express middleware counting and timing every request by route pattern and status. */
  requests(): express.RequestHandler;
  watchLive(live: LiveStatus): void;
  watchWorker(events: WorkerEvents): void;
  /** What the push worker reports (worker/tasks/push/pusher.ts PushObserver). */
  push: PushCounters;
  votes: VoteCounters;
  /** The metrics endpoint's app: GET /metrics. */
  app(): express.Express;
}

export function createMetrics(pools: Pools): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'opinion-backend' });
  collectDefaultMetrics({ register: registry });

  const labelNames = ['method', 'route', 'status'] as const;
  const requestCount = new Counter({
    name: 'http_requests_total',
    help: 'Requests answered, by route pattern and status',
    labelNames,
    registers: [registry],
  });
  const requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer a request (to the end of the response; a stream counts its whole life)',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  // Every pg.Pool in Pools (api, worker, and any added later), read when scraped.
  const namedPools = () => Object.entries(pools).filter((entry): entry is [string, pg.Pool] => entry[1] instanceof pg.Pool);
  const poolGauge = (name: string, help: string, read: (pool: pg.Pool) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['pool'],
      registers: [registry],
      collect() {
        for (const [pool, value] of namedPools()) this.set({ pool }, read(value));
      },
    });
  poolGauge('db_pool_connections', 'Open connections of the pool', (pool) => pool.totalCount);
  poolGauge('db_pool_connections_in_use', 'Connections checked out of the pool', (pool) => pool.totalCount - pool.idleCount);
  poolGauge('db_pool_waiting', 'Callers waiting for a connection of the pool', (pool) => pool.waitingCount);
  watchReplicas(registry, pools);

  const jobs = new Counter({
    name: 'worker_jobs_total',
    help: 'Worker jobs run, by task and outcome (success, error: will retry, failed: no attempts left)',
    labelNames: ['task', 'outcome'],
    registers: [registry],
  });

  const pushesSent = new Counter({
    name: 'push_sent_total',
    help: 'Push messages FCM accepted, by kind (notification, badge)',
    labelNames: ['kind'],
    registers: [registry],
  });
  const pushesFailed = new Counter({
    name: 'push_failed_total',
    help: 'Push messages not delivered, by outcome (given_up: out of tries after 429/5xx; refused: FCM refused the message itself)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const pushesRetried = new Counter({
    name: 'push_retried_total',
    help: 'Push messages to be tried again, by reason (rate_limited, unavailable, network)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const devicesDeleted = new Counter({
    name: 'push_devices_deleted_total',
    help: "Devices deleted on FCM's answer, by reason (unregistered, invalid_token, sender_mismatch)",
    labelNames: ['reason'],
    registers: [registry],
  });
  const pushLag = new Histogram({
    name: 'push_lag_seconds',
    help: "From the notification row's writing transaction (its start) to FCM's answer, per message sent",
    labelNames: ['kind'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });

  const votesResealed = new Counter({
    name: 'votes_resealed_total',
    help: 'Votes sealed again because app.cast_vote named hubs the API had no ballot for (a second round trip)',
    registers: [registry],
  });

  return {
    votes: { resealed: () => votesResealed.inc() },
    push: {
      sent(kind, lagSeconds) {
        pushesSent.inc({ kind });
        pushLag.observe({ kind }, lagSeconds);
      },
      failed: (outcome) => pushesFailed.inc({ outcome }),
      retried: (reason) => pushesRetried.inc({ reason }),
      deviceDeleted: (reason) => devicesDeleted.inc({ reason }),
    },
    requests() {
      return (req: Request, res: Response, next: NextFunction) => {
        const started = process.hrtime.bigint();
        res.on('close', () => {
          const labels = { method: req.method, route: routePattern(req, res), status: String(res.statusCode) };
          requestCount.inc(labels);
          requestSeconds.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
        });
        next();
      };
    },
    watchLive(live) {
      new Gauge({
        name: 'sse_open_streams',
        help: 'Notification streams open in this process',
        registers: [registry],
        collect() {
          this.set(live.openStreams);
        },
      });
      new Gauge({
        name: 'notification_dispatcher_lag_seconds',
        help: 'Seconds since the notification dispatcher last announced new rows or found none (reported by the process that leads)',
        registers: [registry],
        collect() {
          const lag = live.dispatcherLagSeconds;
          if (lag === undefined) this.reset();
          else this.set(lag);
        },
      });
    },
    watchWorker(events) {
      events.on('job:success', ({ job }) => jobs.inc({ task: job.task_identifier, outcome: 'success' }));
      events.on('job:error', ({ job }) => jobs.inc({ task: job.task_identifier, outcome: 'error' }));
      events.on('job:failed', ({ job }) => jobs.inc({ task: job.task_identifier, outcome: 'failed' }));
    },
    app() {
      const app = express();
      app.disable('x-powered-by');
      app.get('/metrics', async (_req, res) => {
        res.type(registry.contentType).send(await registry.metrics());
      });
      return app;
    },
  };
}

/** The streaming replicas (db/replicas.ts), read when scraped: reads each served, lag, usable, and the reads the primary took instead. */
function watchReplicas(registry: Registry, pools: Pools): void {
  const replicaGauge = (name: string, help: string, read: (status: ReplicaStatus) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['replica'],
      registers: [registry],
      collect() {
        for (const status of pools.replicas?.status() ?? []) this.set({ replica: status.name }, read(status));
      },
    });
  replicaGauge('db_replica_reads_total', 'Read-only requests the replica served', (status) => status.served);
  replicaGauge(
    'db_replica_lag_seconds',
    'Age of the oldest WAL the replica has not replayed (+Inf: unreachable)',
    (status) => status.lagMillis / 1000,
  );
  replicaGauge('db_replica_usable', 'Whether the replica takes reads (answers, and lags at most REPLICA_MAX_LAG_MS)', (status) =>
    status.usable ? 1 : 0,
  );
  new Gauge({
    name: 'db_replica_fallback_reads_total',
    help: 'Read-only requests the primary served with replicas configured (session floor ahead of the replica, no usable replica, or a replica read that failed)',
    registers: [registry],
    collect() {
      if (pools.replicas) this.set(pools.replicas.primaryReads);
    },
  });
  new Gauge({
    name: 'db_replica_session_checks_total',
    help: 'Sessions checked on a replica (the request carried its Read-Floor), not on the primary',
    registers: [registry],
    collect() {
      if (pools.replicas) this.set(pools.replicas.sessionChecks);
    },
  });
  new Gauge({
    name: 'db_replica_polls_total',
    help: 'Rounds of the replicas poll (each one statement on the primary and one on each replica)',
    registers: [registry],
    collect() {
      if (pools.replicas) this.set(pools.replicas.polls);
    },
  });
}
