// The bounds of every internal GraphQL operation (contract section 10), whoever sends it:
//
// - before execution (validation, so a refused document runs no SQL):
//     depth, list depth and self-reference by @graphile/depth-limit (Benjie Gillam's rule, which
//     knows introspection apart: the standard introspection query passes) and aliases by GraphQL
//     Armor's max-aliases rule (the body itself is bounded by the app's 64 KiB JSON limit);
// - during execution: a connection page is at most `maxPageSize` rows (`first`/`last` above it are
//   refused; a connection with neither reads the first `maxPageSize`), and so is a
//   `groupedAggregates` list; every statement runs under `statementTimeout` (pgSettings, see
//   auth.ts), and GraphQL has its own small pool (db/pools.ts), so it can never take REST's
//   connections.
//
// With at most `maxListDepth` nested lists of at most `maxPageSize` rows, an operation reads at
// most maxAliases × maxPageSize^maxListDepth rows per root field.
import { depthLimit } from '@graphile/depth-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { constant, lambda, list, type Step } from 'postgraphile/grafast';
import { GraphQLError, type ValidationRule } from 'postgraphile/graphql';
import type {} from 'postgraphile';
import type {} from 'postgraphile/grafserv/express/v4';

export const graphqlBounds = {
  maxDepth: 8,
  maxListDepth: 2,
  maxSelfReferentialDepth: 2,
  maxAliases: 10,
  maxPageSize: 100,
  /** PostgreSQL's statement_timeout for every statement of an operation. */
  statementTimeout: '5s',
} as const;

/**
 * A mutation sent to a schema without mutations (every user token's) is refused in validation, as
 * graphql-js 17's KnownOperationTypesRule does, instead of failing later in planning.
 */
const knownOperationTypes: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (!context.getSchema().getRootType(node.operation)) {
      context.reportError(new GraphQLError(`This schema has no ${node.operation} operations.`, { nodes: node }));
    }
  },
});

const validationRules: ValidationRule[] = [
  knownOperationTypes,
  depthLimit({
    maxDepth: graphqlBounds.maxDepth,
    maxListDepth: graphqlBounds.maxListDepth,
    maxSelfReferentialDepth: graphqlBounds.maxSelfReferentialDepth,
    // graphql-js's own getIntrospectionQuery() (depth 14, __Type.ofType nested 9 times).
    maxIntrospectionDepth: 14,
    maxDepthByFieldCoordinates: { '__Type.ofType': 9 },
    revealDetails: true,
  }),
  maxAliasesRule({
    n: graphqlBounds.maxAliases,
    // Report through the validation context (the rule's default throws out of validate()).
    propagateOnRejection: false,
    onReject: [(context, error) => context?.reportError(error)],
  }),
];

interface PageArgs {
  first: number | null | undefined;
  last: number | null | undefined;
}

function checkedPage([first, last]: readonly (number | null | undefined)[]): PageArgs {
  for (const [name, value] of [['first', first], ['last', last]] as const) {
    if (value != null && (value < 0 || value > graphqlBounds.maxPageSize)) {
      throw new GraphQLError(`\`${name}\` must be between 0 and ${graphqlBounds.maxPageSize}.`, { extensions: { code: 'PAGE_SIZE_EXCEEDED' } });
    }
  }
  return { first: first ?? (last == null ? graphqlBounds.maxPageSize : null), last };
}

interface ConnectionLike extends Step {
  setFirst($first: Step): void;
  setLast($last: Step): void;
}

const pageArgNames = ['first', 'last'] as const;

/**
 * Adds the validation rules, and bounds connection pages and grouped aggregates: `first` and
 * `last` lose their own applyPlan and are applied together by the field's plan, which checks them
 * (before the connection's SQL can run) and supplies the default page.
 */
export const OperationBoundsPlugin: GraphileConfig.Plugin = {
  name: 'InternalGraphqlOperationBoundsPlugin',
  description: `Depth, list depth and alias limits; connections read at most ${graphqlBounds.maxPageSize} rows a page`,
  version: '1.0.0',
  after: ['PgFirstLastBeforeAfterArgsPlugin'],
  schema: {
    hooks: {
      GraphQLObjectType_fields_field_args(args, _build, context) {
        if (!context.scope.isPgFieldConnection) return args;
        for (const name of pageArgNames) {
          const arg = args[name];
          if (arg) args[name] = { ...arg, applyPlan: undefined };
        }
        return args;
      },
      GraphQLObjectType_fields_field(field, _build, context) {
        const { isPgFieldConnection, fieldName } = context.scope;
        const plan = field.plan;
        if (!plan) return field;
        if (isPgFieldConnection) {
          return {
            ...field,
            plan(parent, fieldArgs, info) {
              const $connection = plan(parent, fieldArgs, info) as ConnectionLike;
              const argNames = new Set(info.field.args.map((arg) => arg.name));
              if (!argNames.has('first')) return $connection;
              const hasLast = argNames.has('last');
              const $raw = list([fieldArgs.getRaw('first'), hasLast ? fieldArgs.getRaw('last') : constant(null)]);
              // Not "sync and safe": it throws on a page too large.
              const $page = lambda($raw, checkedPage);
              $connection.setFirst(lambda($page, (page) => page.first, true));
              if (hasLast) $connection.setLast(lambda($page, (page) => page.last, true));
              return $connection;
            },
          };
        }
        if (fieldName === 'groupedAggregates' && context.Self.name.endsWith('Connection')) {
          return {
            ...field,
            plan(parent, fieldArgs, info) {
              const $groups = plan(parent, fieldArgs, info) as Step & { setFirst($first: Step): void };
              $groups.setFirst(constant(graphqlBounds.maxPageSize));
              return $groups;
            },
          };
        }
        return field;
      },
    },
  },
  grafserv: {
    middleware: {
      setPreset(next, event) {
        event.validationRules.push(...validationRules);
        return next();
      },
    },
  },
};
