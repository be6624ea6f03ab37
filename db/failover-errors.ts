// The errors that say the primary is gone, changing or not yet writable (contract part 19): what
// a request meets while Patroni promotes a standby and HAProxy moves to it. The API answers them
// 503 and may run the request again (server/http/database-errors.ts, failover-retry.ts); the
// worker's pool has graphile-worker retry them (db/pools.ts).
const lostErrnos = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

/**
 * Whether the error says the primary is gone, changing or not yet writable: a lost or refused
 * connection (class 08, errnos, node-postgres's own messages), an answer not given in time
 * (connection or query time-out), a node shutting down or starting (57P01-57P03), or a node
 * still in recovery (25006 read-only, "during recovery").
 */
export function isFailoverError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (lostErrnos.has(code) || code === '25006' || /^(08|57P0[123])/.test(code))) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|during recovery|recovery is in progress/i.test(
    error.message,
  );
}
