// Connection pools. The API pool and the internal GraphQL pool log in as `authenticator` and never
// as the owner; the worker pool logs in as `app_worker`. GraphQL has a small pool of its own, so
// however heavy its operations are, they never wait for or take a connection REST needs; when every
// GraphQL connection is busy for `graphqlWaitMillis`, a GraphQL request answers 503.
// Timestamps and bigint counts are parsed to Date and number.
import pg from 'pg';
import { ReplicaSet, type ReplicaOptions } from './replicas.ts';
import { roleUrl } from './roles.ts';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Pools {
  api: pg.Pool;
  /** Internal GraphQL only (server/graphql). */
  graphql: pg.Pool;
  worker: pg.Pool;
  /** Streaming replicas for read-only requests (DATABASE_REPLICA_URLS: db/replicas.ts); undefined when none. */
  replicas?: ReplicaSet | undefined;
  end(): Promise<void>;
}

export interface PoolSizes {
  apiMax?: number;
  graphqlMax?: number;
  workerMax?: number;
  /** Replicas to poll and read from (an API process; the worker reads the primary). */
  replicas?: Omit<ReplicaOptions, 'max'> | undefined;
}

const graphqlWaitMillis = 10_000;

export function createPools(ownerUrl: string, { apiMax = 20, graphqlMax = 3, workerMax = 5, replicas: replicaOptions }: PoolSizes = {}): Pools {
  const authenticatorUrl = roleUrl(ownerUrl, 'authenticator');
  // Pipelined: queries issued without waiting for the previous answer share one round trip
  // (a request's last statement and its commit, RequestTransaction.queryAndCommit).
  const api = new pg.Pool({ connectionString: authenticatorUrl, max: apiMax, pipeline: true });
  const graphql = new pg.Pool({ connectionString: authenticatorUrl, max: graphqlMax, connectionTimeoutMillis: graphqlWaitMillis });
  // A worker killed mid-statement: its server process notices within a second and stops the
  // statement, instead of finishing work nobody waits for (PostgreSQL 14+).
  const worker = new pg.Pool({ connectionString: roleUrl(ownerUrl, 'app_worker'), max: workerMax, options: '-c client_connection_check_interval=1000' });
  for (const pool of [api, graphql, worker]) survivesServerLoss(pool);
  const replicas = replicaOptions?.urls.length ? new ReplicaSet(api, { ...replicaOptions, max: apiMax }) : undefined;
  replicas?.start();
  return {
    api,
    graphql,
    worker,
    replicas,
    end: async () => {
      await replicas?.end();
      await Promise.all([api.end(), graphql.end(), worker.end()]);
    },
  };
}

/**
 * A client that loses its server emits 'error' (on the pool when idle, on the client when checked
 * out); without a listener that error ends the process. The failing query rejects anyway, and the
 * pool replaces the client.
 */
export function survivesServerLoss(pool: pg.Pool): pg.Pool {
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
