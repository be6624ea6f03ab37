// The internal GraphQL endpoint, POST /internal/graphql (outside /api/v1 and its OpenAPI document).
// Every request is authenticated first (auth.ts); PostGraphile then answers as that viewer, from
// the schema of the viewer's role: user tokens get the schema built from app_user's grants (what
// REST may show a user), the admin token the one built from app_admin's (preset.ts).
// PostGraphile is loaded and a schema built on the first authenticated request of its role, not at
// startup: processes and tests that never use GraphQL neither load it nor introspect. A failed
// build is retried on the next request. release() must run before the GraphQL pool ends
// (design.md: release the pgService before pool.end()).
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type pg from 'pg';
import type { TransactionBounds } from '../../db/request-transaction.ts';
import type { Viewer } from '../../db/viewer.ts';
import type { Log } from '../../logger.ts';
import type { Tokens } from '../auth/tokens.ts';
import { ApiError } from '../http/errors.ts';
import { Admission } from './admission.ts';
import { adminTokenMatcher, graphqlViewer, pgSettingsOf, schemaRoleOf, schemaRoles, type GraphqlAuth, type SchemaRole } from './auth.ts';

export const internalGraphqlPath = '/internal/graphql';

export interface InternalGraphql {
  /** Express middleware: serves internalGraphqlPath and passes every other request on. */
  handler: RequestHandler;
  /** Builds both schemas now instead of on the first request. */
  ready(): Promise<void>;
  /** Stops serving and releases PostGraphile and its pgServices. Idempotent. */
  release(): Promise<void>;
}

export interface InternalGraphqlOptions {
  /** The GraphQL pool (db/pools.ts), never REST's. */
  pool: pg.Pool;
  /** Whether that pool goes through a transaction-mode pooler: PostGraphile then prepares no statement. */
  pooled: boolean;
  /** The bounds of the token check's transaction (the API's). */
  bounds: TransactionBounds;
  tokens: Tokens;
  adminApiToken: string | undefined;
  log: Log;
  /** How many operations run at once (admission.ts); one per user and address, two in all, by default. */
  admission?: Admission;
}

interface Running {
  serve: (req: Request, res: Response, next: NextFunction) => void;
  release(): Promise<void>;
}

/**
 * @dataplan/pg reads two settings from the environment once, when loaded: its prepared-statement
 * cache (named statements of the connection, which a transaction-mode pooler does not keep from one
 * transaction to the next: 0 turns them off) and whether to `set jit_optimize_above_cost` on each
 * new connection (a session setting: auth.ts sets it per transaction instead). The first load in a
 * process decides; a pooled GraphQL after a direct one in the same process (tests) is refused.
 */
let preparedStatementsLoaded: boolean | undefined;
function configureDataplan(pooled: boolean): void {
  process.env.DATAPLAN_PG_DONT_DISABLE_JIT ??= '1';
  if (preparedStatementsLoaded === undefined) {
    if (pooled) process.env.DATAPLAN_PG_PREPARED_STATEMENT_CACHE_SIZE = '0';
    preparedStatementsLoaded = process.env.DATAPLAN_PG_PREPARED_STATEMENT_CACHE_SIZE !== '0';
  }
  if (pooled && preparedStatementsLoaded) throw new Error('internal GraphQL behind a pooler, in a process whose @dataplan/pg prepares statements');
}

export function createInternalGraphql({ pool, pooled, bounds, tokens, adminApiToken, log, admission = new Admission() }: InternalGraphqlOptions): InternalGraphql {
  const auth: GraphqlAuth = { pool, bounds, tokens, isAdminToken: adminTokenMatcher(adminApiToken) };
  // The viewer of each authenticated request, read back by the preset's grafast.context.
  const viewers = new WeakMap<Request, Viewer>();
  const running = new Map<SchemaRole, Promise<Running>>();
  let released = false;

  function pgSettingsFor(req: Request): Record<string, string> {
    const viewer = viewers.get(req);
    // Unreachable through the handler below; refuse rather than run as the bare authenticator.
    if (!viewer) throw new Error('internal GraphQL request without an authenticated viewer');
    return pgSettingsOf(viewer);
  }

  async function start(role: SchemaRole): Promise<Running> {
    // Grafast reads its mode once, when loaded, and warns unless GRAPHILE_ENV says it: development
    // and tests keep its development checks, anything else runs as production.
    process.env.GRAPHILE_ENV ??= process.env.NODE_ENV === 'development' || process.env.NODE_ENV === 'test' ? process.env.NODE_ENV : 'production';
    configureDataplan(pooled);
    const [{ postgraphile }, { grafserv }, { internalGraphqlPreset, internalPgService }] = await Promise.all([
      import('postgraphile'),
      import('postgraphile/grafserv/express/v4'),
      import('./preset.ts'),
    ]);
    const pgService = internalPgService(pool, role);
    const pgl = postgraphile(internalGraphqlPreset({ graphqlPath: internalGraphqlPath, role, pgService, pgSettingsFor, log }));
    const releaseAll = async () => {
      await pgl.release();
      await pgService.release?.();
    };
    try {
      await pgl.getSchema();
      const serv = pgl.createServ(grafserv);
      return { serve: serv.createHandler(), release: releaseAll };
    } catch (error) {
      await releaseAll().catch(() => undefined);
      throw error;
    }
  }

  function instance(role: SchemaRole): Promise<Running> {
    if (released) return Promise.reject(new ApiError('SERVICE_UNAVAILABLE'));
    let current = running.get(role);
    if (!current) {
      current = start(role).catch((error: unknown) => {
        running.delete(role);
        throw error;
      });
      running.set(role, current);
    }
    return current;
  }

  const handler: RequestHandler = (req, res, next) => {
    if (req.path !== internalGraphqlPath) {
      next();
      return;
    }
    // The request log and the metrics name this route (server/http/route-name.ts); the log the acting user.
    res.locals.route = internalGraphqlPath;
    graphqlViewer(req, auth)
      .then(async (viewer) => {
        viewers.set(req, viewer);
        res.locals.userId = viewer.userId ?? undefined;
        // Room for the operation, for this user and this address (429 after a short wait), held
        // until the response is done or the client goes away.
        const leave = await admission.enter([`user:${viewer.userId ?? 'admin'}`, `address:${req.ip ?? req.socket.remoteAddress ?? ''}`]);
        res.once('close', leave);
        try {
          (await instance(schemaRoleOf(viewer))).serve(req, res, next);
        } catch (error) {
          leave();
          throw error;
        }
      })
      .catch(next);
  };

  return {
    handler,
    async ready() {
      await Promise.all(schemaRoles.map(instance));
    },
    async release() {
      if (released) return;
      released = true;
      const current = [...running.values()];
      running.clear();
      for (const instance of current) {
        const built = await instance.catch(() => undefined);
        await built?.release();
      }
    },
  };
}
