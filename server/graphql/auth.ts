// Who an internal GraphQL request acts as (contract section 10):
//   Authorization: Bearer <ADMIN_API_TOKEN>  → role app_admin, no user (off when the token is unset);
//   Authorization: Bearer <access token>     → role app_user as that user and session, after the
//                                              same token and live-session check as REST, in a
//                                              read-only transaction;
//   anything else                            → 401 UNAUTHORIZED in the error envelope.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import type pg from 'pg';
import { RequestTransaction, type TransactionBounds } from '../../db/request-transaction.ts';
import { anonymousViewer, viewerSettings, type Viewer } from '../../db/viewer.ts';
import type { Tokens } from '../auth/tokens.ts';
import { authenticate, bearerToken } from '../http/auth.ts';
import { graphqlBounds } from './limits.ts';

export const adminViewer: Viewer = { role: 'app_admin', userId: null, sessionId: null };

/** The roles a GraphQL schema is built for: one schema per role, from that role's grants. */
export const schemaRoles = ['app_user', 'app_admin'] as const;
export type SchemaRole = (typeof schemaRoles)[number];

export function schemaRoleOf(viewer: Viewer): SchemaRole {
  if (viewer.role === 'app_admin') return 'app_admin';
  if (viewer.role === 'app_user') return 'app_user';
  // graphqlViewer only yields the admin or a signed-in user.
  throw new Error(`no internal GraphQL schema for role ${viewer.role}`);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** A constant-time check of the admin token; always false when ADMIN_API_TOKEN is unset. */
export function adminTokenMatcher(adminApiToken: string | undefined): (token: string) => boolean {
  if (!adminApiToken) return () => false;
  // Equal-length digests: the comparison takes the same time whatever the candidate's length.
  const expected = digest(adminApiToken);
  return (token) => timingSafeEqual(digest(token), expected);
}

export interface GraphqlAuth {
  pool: pg.Pool;
  /** The bounds of the token check's transaction (the API's). */
  bounds: TransactionBounds;
  tokens: Tokens;
  isAdminToken(token: string): boolean;
}

/**
 * The viewer of a request, or an ApiError('UNAUTHORIZED'). A user token goes through REST's own
 * `authenticate` (signature, expiry, and app.session_access_level in one round trip), in a
 * transaction that only checks and ends; GraphQL then runs in its own transaction as that viewer.
 */
export async function graphqlViewer(req: Request, auth: GraphqlAuth): Promise<Viewer> {
  const token = bearerToken(req);
  if (token && auth.isAdminToken(token)) return adminViewer;
  const check = new RequestTransaction(auth.pool, anonymousViewer, auth.bounds);
  let ok = false;
  try {
    await authenticate(req, 'bearer', auth.tokens, check);
    ok = true;
    return check.viewer;
  } finally {
    await check.finish(ok);
  }
}

/**
 * The transaction settings of a viewer, as @dataplan/pg applies them (set_config(..., true)):
 * every statement is bounded by the statement timeout (limits.ts), and JIT optimisation
 * is off, here rather than as @dataplan/pg's session setting (thread.ts), so nothing outlives the
 * transaction on a pooled connection. A user's transaction is also
 * read-only (preset.ts says why); switching to read-only is allowed at any point of a transaction,
 * and nothing in it can switch back.
 */
export function pgSettingsOf(viewer: Viewer): Record<string, string> {
  return {
    ...Object.fromEntries(viewerSettings(viewer)),
    statement_timeout: graphqlBounds.statementTimeout,
    jit_optimize_above_cost: '-1',
    // One core of the database per operation: no parallel workers, which would take the cores REST's statements run on.
    max_parallel_workers_per_gather: '0',
    ...(viewer.role === 'app_admin' ? {} : { transaction_read_only: 'on' }),
  };
}
