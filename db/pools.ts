// Connection pools. The API pool and the internal GraphQL pool log in as `authenticator` and never
// as the owner; the worker pool logs in as `app_worker`. GraphQL has a small pool of its own, so
// however heavy its operations are, they never wait for or take a connection REST needs; when every
// GraphQL connection is busy for `graphqlWaitMillis`, a GraphQL request answers 503.
//
// With a pooler (`poolerUrl`, DATABASE_POOLER_URL: PgBouncer in transaction mode) the API and
// GraphQL pools connect through it, with the same roles and passwords. Everything they send is
// then bound to one transaction: settings are set_config(..., true) in the transaction
// (db/request-transaction.ts, server/graphql/auth.ts), statements are unnamed, advisory locks are
// transaction locks. What needs a session stays on the owner's direct route: the worker pool
// (graphile-worker's LISTEN and its client_connection_check_interval), the live delivery's LISTEN
// connection, its reader (a temporary table) and the dispatcher's leader lock (server/sse), and
// migrations.
// Timestamps and bigint counts are parsed to Date and number.
import pg from 'pg';
import { roleUrl } from './roles.ts';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Pools {
  api: pg.Pool;
  /** Internal GraphQL only (server/graphql). */
  graphql: pg.Pool;
  worker: pg.Pool;
  /** Whether the API and GraphQL pools go through a transaction-mode pooler (nothing session-bound may use them). */
  pooled: boolean;
  end(): Promise<void>;
}

export interface PoolOptions {
  apiMax?: number;
  graphqlMax?: number;
  workerMax?: number;
  /** DATABASE_POOLER_URL: the API and GraphQL pools connect there (host, port, database); undefined: direct. */
  poolerUrl?: string | undefined;
}

const graphqlWaitMillis = 10_000;

export function createPools(ownerUrl: string, { apiMax = 20, graphqlMax = 3, workerMax = 5, poolerUrl }: PoolOptions = {}): Pools {
  const authenticatorUrl = roleUrl(ownerUrl, 'authenticator', poolerUrl);
  // Pipelined: queries issued without waiting for the previous answer share one round trip (the
  // opening, statements and commit of a request's transaction, db/request-transaction.ts).
  const api = new pg.Pool({ connectionString: authenticatorUrl, max: apiMax, pipeline: true });
  const graphql = new pg.Pool({ connectionString: authenticatorUrl, max: graphqlMax, connectionTimeoutMillis: graphqlWaitMillis });
  // A worker killed mid-statement: its server process notices within a second and stops the
  // statement, instead of finishing work nobody waits for (PostgreSQL 14+).
  const worker = new pg.Pool({ connectionString: roleUrl(ownerUrl, 'app_worker'), max: workerMax, options: '-c client_connection_check_interval=1000' });
  for (const pool of [api, graphql, worker]) survivesServerLoss(pool);
  return {
    api,
    graphql,
    worker,
    pooled: poolerUrl !== undefined,
    end: async () => {
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
