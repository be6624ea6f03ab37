// The PostGraphile V5 preset of the internal GraphQL API (contract section 10): schema `app` only,
// introspected and queried through the GraphQL pool as `authenticator` (never the owner), with
// pg-aggregates, the function allow-list of exposure.ts, the bounds of bounds.ts, and per-request
// settings (role, app.user_id, app.session_id, statement_timeout) of the viewer the main thread
// authenticated (auth.ts pgSettingsOf). Loaded only in the GraphQL thread (thread.ts), which starts
// when the first GraphQL request arrives (mount.ts).
//
// One schema per role: introspection runs as that role, so PostGraphile's RBAC plugin sees only
// its grants (app_user's include app_anonymous's, which it inherits). A user token's schema
// therefore holds exactly the columns app_user may select, which the column grants keep to what
// REST shows a user (test/http/graphql/graphql-user-schema.test.ts walks it against an allow-list).
//
// Writes: only the admin schema has mutations, where app_admin's grants allow (today
// hubs.is_recommended). The user schema has none, and a user's transaction is read-only besides
// (auth.ts): several app_user grants exist for REST handlers that check more than a policy can (a
// profile photo must be the user's own completed upload, a report goes through app.report_*), and
// the mobile app's writes belong to REST, which holds the Node half of each.
import { PgAggregatesPreset } from '@graphile/pg-aggregates';
import type pg from 'pg';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { makePgService } from 'postgraphile/adaptors/pg';
import { GraphQLError } from 'postgraphile/graphql';
import type {} from 'postgraphile/grafserv';
import { timeoutOf, translateDatabaseError } from '../http/database-errors.ts';
import type { Log } from '../../logger.ts';
import { ApiError } from '../http/errors.ts';
import { TextCodecsPlugin } from './codecs.ts';
import { pgSettingsOf, type SchemaRole } from './auth.ts';
import { OperationBoundsPlugin } from './bounds.ts';
import { ExposurePlugin } from './exposure.ts';

export type PgService = ReturnType<typeof makePgService>;

/** The pgService of the schema of `role` over `pool`; release it before the pool ends. */
export function internalPgService(pool: pg.Pool, role: SchemaRole): PgService {
  // pubsub: false: no subscriptions, so no LISTEN client is taken from the pool.
  return makePgService({ pool, schemas: ['app'], pubsub: false, pgSettingsForIntrospection: { role } });
}

export interface PresetOptions {
  graphqlPath: string;
  /** The role whose grants shape this schema (its pgService introspects as that role). */
  role: SchemaRole;
  pgService: PgService;
  log: Log;
}

export function internalGraphqlPreset({ graphqlPath, role, pgService, log }: PresetOptions): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset, PgAggregatesPreset],
    plugins: [ExposurePlugin, OperationBoundsPlugin, TextCodecsPlugin],
    pgServices: [pgService],
    schema: {
      // A naming conflict (design.md: V5 inflection collisions) fails the build instead of
      // silently dropping a type or field.
      dontSwallowErrors: true,
      ...(role === 'app_admin' ? {} : { defaultBehavior: '-insert -update -delete' as GraphileBuild.BehaviorString }),
    },
    grafast: {
      explain: false,
      // Overrides the service's pgSettings: @dataplan/pg runs each request's SQL in a transaction
      // that first applies these with set_config(..., true), so row-level security sees the viewer.
      context(requestContext) {
        const viewer = requestContext.viewer;
        // Unreachable through thread.ts, which passes every request's viewer; refuse rather than run as the bare authenticator.
        if (!viewer) throw new Error('internal GraphQL request without an authenticated viewer');
        return { pgSettings: pgSettingsOf(viewer) };
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
    // A statement stopped by GraphQL's own bound keeps its SQLSTATE (57014) for tooling.
    const translated = timeoutOf(original) ? original : translateDatabaseError(original);
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
