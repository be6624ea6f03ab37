// The PostGraphile V5 preset of the internal GraphQL API (contract section 10): schema `app` only,
// introspected and queried through the API's `authenticator` pool (never the owner), with
// pg-aggregates, the function allow-list of exposure.ts, and per-request settings (role,
// app.user_id, app.session_id) supplied by the caller through `pgSettingsFor`.
// Loaded only when the first GraphQL request arrives (mount.ts), like everything PostGraphile.
import type { Request } from 'express';
import { PgAggregatesPreset } from '@graphile/pg-aggregates';
import type pg from 'pg';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { makePgService } from 'postgraphile/adaptors/pg';
import { GraphQLError } from 'postgraphile/graphql';
import type {} from 'postgraphile/grafserv/express/v4';
import { translateDatabaseError } from '../http/database-errors.ts';
import type { Log } from '../../logger.ts';
import { ApiError } from '../http/errors.ts';
import { Xid8CodecPlugin } from './codecs.ts';
import { ExposurePlugin } from './exposure.ts';
import { AdminWritesPlugin } from './writes.ts';

export type PgService = ReturnType<typeof makePgService>;

/** The pgService of the internal API over `pool`; release it before the pool ends. */
export function internalPgService(pool: pg.Pool): PgService {
  // pubsub: false: no subscriptions, so no LISTEN client is taken from the pool.
  return makePgService({ pool, schemas: ['app'], pubsub: false });
}

export interface PresetOptions {
  graphqlPath: string;
  pgService: PgService;
  /** The transaction settings of an authenticated request (the mount authenticates first). */
  pgSettingsFor(req: Request): Record<string, string>;
  log: Log;
}

export function internalGraphqlPreset({ graphqlPath, pgService, pgSettingsFor, log }: PresetOptions): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset, PgAggregatesPreset],
    plugins: [ExposurePlugin, AdminWritesPlugin, Xid8CodecPlugin],
    pgServices: [pgService],
    schema: {
      // A naming conflict (design.md: V5 inflection collisions) fails the build instead of
      // silently dropping a type or field.
      dontSwallowErrors: true,
    },
    grafast: {
      explain: false,
      // Overrides the service's pgSettings: @dataplan/pg runs each request's SQL in a transaction
      // that first applies these with set_config(..., true), so row-level security sees the viewer.
      context(requestContext) {
        const req = requestContext.expressv4?.req;
        if (!req) throw new Error('internal GraphQL served outside Express');
        return { pgSettings: pgSettingsFor(req) };
      },
    },
    grafserv: {
      graphqlPath,
      graphqlOverGET: false,
      graphiql: false,
      watch: false,
      websockets: false,
      maskError: maskErrorWith(log),
    },
  };
}

/**
 * GraphQL errors as tooling sees them. A catalogued failure (a stored function's P0001 code, a
 * known constraint) keeps its catalog code; another PostgreSQL error (permission denied, a check
 * constraint) keeps PostgreSQL's message and SQLSTATE, which name objects but carry no row data;
 * anything else is logged and answered with an id.
 */
function maskErrorWith(log: Log) {
  return (error: GraphQLError): GraphQLError => {
    const original = error.originalError;
    if (!original || original instanceof GraphQLError) return error;
    const options = { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, originalError: original };
    const translated = translateDatabaseError(original);
    if (translated instanceof ApiError) {
      return new GraphQLError(translated.message, { ...options, extensions: { code: translated.code } });
    }
    const sqlstate = (original as { code?: unknown }).code;
    if (typeof sqlstate === 'string' && /^[0-9A-Z]{5}$/.test(sqlstate)) {
      return new GraphQLError(original.message, { ...options, extensions: { sqlstate } });
    }
    const errorId = crypto.randomUUID();
    log.error({ errorId, err: { name: original.name, message: original.message, stack: original.stack } }, 'internal GraphQL error');
    return new GraphQLError(`Something went wrong (error id ${errorId}).`, { ...options, extensions: { errorId } });
  };
}
