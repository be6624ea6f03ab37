// The internal GraphQL endpoint, POST /internal/graphql (outside /api/v1 and its OpenAPI document).
// Every request is authenticated first (auth.ts); PostGraphile then answers as that viewer.
// PostGraphile is loaded and the schema built on the first authenticated request, not at startup:
// processes and tests that never use GraphQL neither load it nor introspect. A failed build is
// retried on the next request. release() must run before the API pool ends (design.md: release the
// pgService before pool.end()).
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type pg from 'pg';
import type { Viewer } from '../../db/viewer.ts';
import type { Log } from '../../logger.ts';
import type { Tokens } from '../auth/tokens.ts';
import { ApiError } from '../http/errors.ts';
import { adminTokenMatcher, graphqlViewer, pgSettingsOf, type GraphqlAuth } from './auth.ts';

export const internalGraphqlPath = '/internal/graphql';

export interface InternalGraphql {
  /** Express middleware: serves internalGraphqlPath and passes every other request on. */
  handler: RequestHandler;
  /** Builds the schema now instead of on the first request. */
  ready(): Promise<void>;
  /** Stops serving and releases PostGraphile and its pgService. Idempotent. */
  release(): Promise<void>;
}

export interface InternalGraphqlOptions {
  pool: pg.Pool;
  tokens: Tokens;
  adminApiToken: string | undefined;
  log: Log;
}

interface Running {
  serve: (req: Request, res: Response, next: NextFunction) => void;
  release(): Promise<void>;
}

export function createInternalGraphql({ pool, tokens, adminApiToken, log }: InternalGraphqlOptions): InternalGraphql {
  const auth: GraphqlAuth = { pool, tokens, isAdminToken: adminTokenMatcher(adminApiToken) };
  // The viewer of each authenticated request, read back by the preset's grafast.context.
  const viewers = new WeakMap<Request, Viewer>();
  let running: Promise<Running> | undefined;
  let released = false;

  function pgSettingsFor(req: Request): Record<string, string> {
    const viewer = viewers.get(req);
    // Unreachable through the handler below; refuse rather than run as the bare authenticator.
    if (!viewer) throw new Error('internal GraphQL request without an authenticated viewer');
    return pgSettingsOf(viewer);
  }

  async function start(): Promise<Running> {
    // Grafast warns on load when neither GRAPHILE_ENV nor NODE_ENV is set; production is what it
    // then runs as anyway, so say so. Tests (NODE_ENV=test) keep Grafast's development checks.
    if (process.env.GRAPHILE_ENV === undefined && process.env.NODE_ENV === undefined) process.env.GRAPHILE_ENV = 'production';
    const [{ postgraphile }, { grafserv }, { internalGraphqlPreset, internalPgService }] = await Promise.all([
      import('postgraphile'),
      import('postgraphile/grafserv/express/v4'),
      import('./preset.ts'),
    ]);
    const pgService = internalPgService(pool);
    const pgl = postgraphile(internalGraphqlPreset({ graphqlPath: internalGraphqlPath, pgService, pgSettingsFor, log }));
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

  function instance(): Promise<Running> {
    if (released) return Promise.reject(new ApiError('SERVICE_UNAVAILABLE'));
    running ??= start().catch((error: unknown) => {
      running = undefined;
      throw error;
    });
    return running;
  }

  const handler: RequestHandler = (req, res, next) => {
    if (req.path !== internalGraphqlPath) {
      next();
      return;
    }
    // The request log names this route (it reads the endpoint's path) and the acting user.
    res.locals.endpoint = { path: internalGraphqlPath };
    graphqlViewer(req, auth)
      .then(async (viewer) => {
        viewers.set(req, viewer);
        res.locals.userId = viewer.userId ?? undefined;
        (await instance()).serve(req, res, next);
      })
      .catch(next);
  };

  return {
    handler,
    async ready() {
      await instance();
    },
    async release() {
      if (released) return;
      released = true;
      const current = running;
      running = undefined;
      const built = await current?.catch(() => undefined);
      await built?.release();
    },
  };
}
