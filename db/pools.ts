// Connection pools. The API pool logs in as `authenticator` and never as the owner; the worker pool
// logs in as `app_worker`. Timestamps and bigint counts are parsed to Date and number.
import pg from 'pg';
import { roleUrl } from './roles.ts';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Pools {
  api: pg.Pool;
  worker: pg.Pool;
  end(): Promise<void>;
}

export function createPools(ownerUrl: string, { apiMax = 20, workerMax = 5 } = {}): Pools {
  // Pipelined: queries issued without waiting for the previous answer share one round trip
  // (a request's last statement and its commit, RequestTransaction.queryAndCommit).
  const api = new pg.Pool({ connectionString: roleUrl(ownerUrl, 'authenticator'), max: apiMax, pipeline: true });
  const worker = new pg.Pool({ connectionString: roleUrl(ownerUrl, 'app_worker'), max: workerMax });
  // A client that loses its server emits 'error' (on the pool when idle, on the client when
  // checked out); the failing query rejects and the pool replaces the client.
  for (const pool of [api, worker]) {
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
  }
  return {
    api,
    worker,
    end: async () => {
      await Promise.all([api.end(), worker.end()]);
    },
  };
}
