// Connection pools. The API pool and the internal GraphQL pool log in as `authenticator` and never
// as the owner; the worker pool logs in as `app_worker`. GraphQL has small pools of its own (one for
// its session checks, one of the same size in its thread for its operations), so however heavy its
// operations are, they never wait for or take a connection REST needs; when every GraphQL
// connection is busy for `graphqlWaitMillis`, a GraphQL request answers 503.
//
// With a pooler (`poolerUrl`, DATABASE_POOLER_URL: PgBouncer in transaction mode) the API and
// GraphQL pools connect through it, with the same roles and passwords. Everything they send is
// then bound to one transaction: settings are `set local` (db/request-transaction.ts) or
// set_config(..., true) (server/graphql/auth.ts) in the transaction, statements are unnamed, advisory locks are
// transaction locks. What needs a session stays on the owner's direct route: the worker pool
// (graphile-worker's LISTEN and its client_connection_check_interval), the live delivery's LISTEN
// connection, its reader (a temporary table) and the dispatcher's leader lock (server/sse), and
// migrations.
// Each pool names itself in pg_stat_activity.application_name: api, graphql (the GraphQL thread's
// operations), graphql session checks, worker (and worker presence: worker/liveness.ts); on a
// replica, api (reads) and replica poll.
// Every connection to PostgreSQL (these pools, the replicas', the live delivery's) carries
// `connectionBounds`: TCP keepalive, so a server that vanishes without a reset (a hung machine, a
// cut link) is noticed in seconds rather than at the kernel's two hours, and a bound on opening a
// connection; a pool's bound on the wait for a free connection is the same number. The API pool
// also gives up on an answer that does not come (`query_timeout`: the statement bound plus a
// margin; the connection is destroyed, so nothing late reaches a later request).
// Timestamps and bigint counts are parsed to Date and number.
import pg from 'pg';
import { connectionBounds } from './connection-bounds.ts';
import { isFailoverError } from './failover-errors.ts';
import { ReplicaSet, type ReplicaOptions } from './replicas.ts';
import { defaultBounds } from './request-transaction.ts';
import { roleUrl } from './roles.ts';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Pools {
  api: pg.Pool;
  /** Internal GraphQL's session checks (server/graphql/auth.ts), on the API's thread. */
  graphql: pg.Pool;
  /**
   * The settings of the pool internal GraphQL's operations run on: the GraphQL thread
   * (server/graphql/thread.ts) opens it, since a pool cannot cross threads. The same as `graphql`'s.
   */
  graphqlConfig: pg.PoolConfig;
  worker: pg.Pool;
  /** Whether the API and GraphQL pools go through a transaction-mode pooler (nothing session-bound may use them). */
  pooled: boolean;
  /** Streaming replicas for read-only requests (DATABASE_REPLICA_URLS: db/replicas.ts); undefined when none. */
  replicas?: ReplicaSet | undefined;
  end(): Promise<void>;
}

export interface PoolOptions {
  apiMax?: number;
  graphqlMax?: number;
  workerMax?: number;
  /** DATABASE_POOLER_URL: the API and GraphQL pools connect there (host, port, database); undefined: direct. */
  poolerUrl?: string | undefined;
  /** Replicas to poll and read from (an API process; the worker reads the primary). */
  replicas?: Omit<ReplicaOptions, 'max'> | undefined;
  /** The API's statement_timeout (API_STATEMENT_TIMEOUT_MS): an API connection whose answer takes longer than this plus a margin is given up. */
  statementTimeoutMs?: number;
}

/** What an API statement's answer may take past statement_timeout (a commit waiting for the synchronous standby, the network) before the connection is given up. */
const answerMarginMillis = 3000;

const graphqlWaitMillis = 10_000;

export function createPools(
  ownerUrl: string,
  {
    apiMax = 20,
    graphqlMax = 3,
    workerMax = 5,
    poolerUrl,
    replicas: replicaOptions,
    statementTimeoutMs = defaultBounds.statementTimeoutMs,
  }: PoolOptions = {},
): Pools {
  const authenticatorUrl = roleUrl(ownerUrl, 'authenticator', poolerUrl);
  // Pipelined: queries issued without waiting for the previous answer share one round trip (the
  // opening, statements and commit of a request's transaction, db/request-transaction.ts).
  const api = new pg.Pool({
    ...connectionBounds,
    connectionString: authenticatorUrl,
    max: apiMax,
    pipeline: true,
    query_timeout: statementTimeoutMs + answerMarginMillis,
    application_name: 'api',
  });
  const graphqlConfig: pg.PoolConfig = {
    ...connectionBounds,
    connectionString: authenticatorUrl,
    max: graphqlMax,
    connectionTimeoutMillis: graphqlWaitMillis,
    application_name: 'graphql',
  };
  const graphql = new pg.Pool({ ...graphqlConfig, application_name: 'graphql session checks' });
  // A worker killed mid-statement: its server process notices within a second and stops the
  // statement, instead of finishing work nobody waits for (PostgreSQL 14+).
  const worker = new pg.Pool({
    ...connectionBounds,
    Client: WorkerClient,
    connectionString: roleUrl(ownerUrl, 'app_worker'),
    max: workerMax,
    options: '-c client_connection_check_interval=1000',
    application_name: 'worker',
  });
  for (const pool of [api, graphql, worker]) survivesServerLoss(pool);
  const replicas = replicaOptions?.urls.length ? new ReplicaSet(api, { ...replicaOptions, max: apiMax }) : undefined;
  replicas?.start();
  return {
    api,
    graphql,
    graphqlConfig,
    worker,
    pooled: poolerUrl !== undefined,
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

/** The codes graphile-worker retries its own statements on (with backoff from 3 s up to 2 minutes). */
const workerRetriedCodes = new Set(['57P03', 'ETIMEDOUT', 'EHOSTUNREACH', '40001', '40P01']);

/**
 * A failover's error (db/failover-errors.ts) as graphile-worker retries it: 57P03 ("cannot connect
 * now"), the original as its cause. graphile-worker retries the statements that complete or fail a
 * job only for a few codes, and any other error there rejects a promise nobody awaits, which ends
 * the process: a job that ended while the primary changed would stop the worker.
 */
function retriedByWorker(error: unknown): unknown {
  if (!isFailoverError(error) || workerRetriedCodes.has((error as { code?: string }).code ?? '')) return error;
  return Object.assign(new Error((error as Error).message, { cause: error }), { code: '57P03' });
}

/** The worker pool's connections: their promised answers and connection failures go through retriedByWorker. */
class WorkerClient extends pg.Client {
  override query(...args: unknown[]): never {
    const result: unknown = (super.query as (...sent: unknown[]) => unknown)(...args);
    return (result instanceof Promise ? result.catch((error: unknown) => Promise.reject(retriedByWorker(error))) : result) as never;
  }

  override connect(...args: unknown[]): never {
    const [callback] = args as [((error: unknown, client?: pg.Client) => void) | undefined];
    if (!callback) return super.connect().catch((error: unknown) => Promise.reject(retriedByWorker(error))) as never;
    return super.connect((error: Error) => callback(error ? retriedByWorker(error) : error, this)) as never;
  }
}
