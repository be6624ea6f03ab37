// What of schema `app` the internal GraphQL API shows, on top of what PostgreSQL decides.
//
// Tables: every table of `app` appears as far as the grants of the schema's role allow
// (PostGraphile's RBAC plugin reads the grants of the role introspection runs as: app_user, with
// app_anonymous's, for user tokens; app_admin for the admin token; see preset.ts); which rows a
// request sees is row-level security's decision, per request. Tables the role may not read (vote
// counters, activity, follow counts) do not appear at all, and neither does a relation whose
// columns, on either side, the role may not select (an invitation's invitee, an asset's owner).
//
// Functions: hidden unless listed below. Most functions of `app` are either SQL-internal helpers
// (policy helpers such as app.viewer_id or app.can_see_post, app.fail, app.require_level) or the
// stored half of a REST endpoint whose other half runs in Node: sign-in and OTP functions take
// hashes only Node computes, upload functions need the object-store check, invite links take a
// token Node generates, onboarding takes the configured terms version, and vote tallies are
// thresholded in Node before they are shown. Exposing such a function would bypass that half, so a
// function is added here only after its REST handler has been read and found to add nothing but
// shaping. New functions in later migrations therefore stay out of GraphQL by default.
import type {} from 'postgraphile';

/** Functions of `app` exposed as GraphQL fields (read-only, viewer-scoped, shaped only by REST). */
export const exposedFunctions: ReadonlySet<string> = new Set([
  // The viewer's own onboarding progress (GET /users/me/onboarding only renames its columns).
  'onboarding_status',
  // Default feed users by handle (contract section 10): app_admin only (execute is granted to no
  // other role); the same functions `npm run admin -- default-feed-users` runs.
  'add_default_feed_user',
  'remove_default_feed_user',
  // Moderation (contract 14): app_admin only, the same functions `npm run admin -- reports|posts|
  // users|hubs ...` runs (db/sql/reports.sql): the queue and the actions, each answering its log row.
  'open_report_groups',
  'remove_post',
  'restore_post',
  'suspend_user',
  'unsuspend_user',
  'remove_hub',
  'resolve_report',
  'dismiss_report',
  'reopen_report',
]);

// pg-aggregates' attribute behaviors (registered by that plugin, so not in the static type).
const noAggregates = '-aggregate -groupBy -havingBy' as GraphileBuild.BehaviorString;

type Attributes = Record<string, { extensions?: { canSelect?: boolean } }>;

function selectable(attributes: Attributes, names: readonly string[]): boolean {
  return names.every((name) => attributes[name]?.extensions?.canSelect !== false);
}

/**
 * Removes every function resource of `app` not in `exposedFunctions` from the GraphQL schema, keeps
 * pg-aggregates off columns the role may not select (the RBAC plugin hides such a column from the
 * type, not from aggregates; PostgreSQL would refuse the query, but the field should not exist:
 * today app.notifications.tx_id), and drops relations and unique lookups over such columns (the
 * RBAC plugin keeps them: `userByInviteeId` or `hubInviteLinkByToken` would exist, and fail with a
 * permission error).
 */
export const ExposurePlugin: GraphileConfig.Plugin = {
  name: 'InternalGraphqlExposurePlugin',
  description: 'Functions of schema app only when exposure.ts lists them; no aggregates of unreadable columns',
  version: '1.0.0',
  after: ['PgRBACPlugin'],
  gather: {
    hooks: {
      // A function not listed is taken out of the introspection before PostGraphile reads it, so
      // no resource, codec or behavior is made for it. Hiding the ~140 others by behavior instead
      // gave the same schema at twice the build's CPU (resources and behaviors for each of them).
      pgIntrospection_introspection(_info, { introspection }) {
        const app = introspection.namespaces.find((namespace) => namespace.nspname === 'app');
        const { procs } = introspection;
        for (let i = procs.length - 1; i >= 0; i -= 1) {
          const proc = procs[i] as (typeof procs)[number];
          if (proc.pronamespace === app?._id && !exposedFunctions.has(proc.proname)) procs.splice(i, 1);
        }
      },
    },
  },
  schema: {
    entityBehavior: {
      pgCodecAttribute: {
        override: {
          provides: ['internalGraphqlUnselectableColumns'],
          callback(behavior, [codec, attributeName]) {
            const attributes = codec.attributes as Record<string, { extensions?: { canSelect?: boolean } }>;
            if (attributes[attributeName]?.extensions?.canSelect !== false) return behavior;
            // As the RBAC plugin: a table with no selectable column at all is read through functions.
            const siblingSelectable = Object.entries(attributes).some(
              ([name, a]) => name !== attributeName && a.extensions?.canSelect !== false,
            );
            return siblingSelectable ? [behavior, noAggregates] : behavior;
          },
        },
      },
      pgResourceUnique: {
        override: {
          provides: ['internalGraphqlUnselectableUniques'],
          callback(behavior, [resource, unique]) {
            return selectable(resource.codec.attributes as Attributes, unique.attributes)
              ? behavior
              : [behavior, '-single' as GraphileBuild.BehaviorString];
          },
        },
      },
      pgCodecRelation: {
        override: {
          provides: ['internalGraphqlUnselectableRelations'],
          callback(behavior, relation) {
            const local = selectable(relation.localCodec.attributes as Attributes, relation.localAttributes);
            const remote = selectable(relation.remoteResource.codec.attributes as Attributes, relation.remoteAttributes);
            return local && remote ? behavior : [behavior, '-single -connection -list' as GraphileBuild.BehaviorString];
          },
        },
      },
    },
  },
};
