// What every connection to PostgreSQL carries (db/pools.ts, db/replicas.ts, the live delivery's
// connections in server/sse): TCP keepalive and a bound on opening it. With Patroni and HAProxy
// (docs/deployment.md) the primary can change or hang under a connection; these make a client
// notice instead of waiting on a socket nobody answers.
import type pg from 'pg';

/**
 * Keepalive after 5 s idle (libuv then probes every second, 10 times: a silent peer is dropped
 * within about 15 s) and 5 s to open a connection, or to wait for a pool's free one. PgBouncer and
 * HAProxy in front answer at once; a primary that hangs leaves a connection attempt unanswered.
 */
export const connectionBounds = {
  keepAlive: true,
  keepAliveInitialDelayMillis: 5000,
  connectionTimeoutMillis: 5000,
} as const satisfies pg.ClientConfig;
