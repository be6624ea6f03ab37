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
// most maxAliases × maxPageSize^maxListDepth rows per root field. That is still a lot of work (10
// aliases × 100 rows sorted by an aggregate, each with a nested page of 100), so every operation
// also has an estimated cost, refused in validation above `maxCost` (operationCosts below): each
// row it may return costs 1 (a page counts as `first`/`last` when written in the document, else as
// `maxPageSize`); counting or aggregating a connection's whole collection, whatever the page
// (totalCount and aggregates, once per connection; groupedAggregates), costs `scanCost`; and an
// order by an aggregate of related rows (pg-aggregates' orderBy) reads every related row of every
// row before the first one can be returned: it costs more than `maxCost`, so it is refused.
import { depthLimit } from '@graphile/depth-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { constant, lambda, list, type Step } from 'postgraphile/grafast';
import {
  getNamedType,
  GraphQLError,
  isCompositeType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type FieldNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationRule,
  type ValueNode,
} from 'postgraphile/graphql';
import type {} from 'postgraphile';
import type {} from 'postgraphile/grafserv';

import { graphqlBounds } from './limits.ts';

export { graphqlBounds };

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

const pageArgNames = ['first', 'last'] as const;

interface CostWalk {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  /** Fragments being walked (a cycle is another rule's error: it costs nothing here). */
  open: Set<string>;
}

/** A page size written in the document; a variable or no argument counts as the bound. */
function pageOf(field: FieldNode): number {
  for (const name of pageArgNames) {
    const value = field.arguments?.find((arg) => arg.name.value === name)?.value;
    if (value?.kind === Kind.INT) return Math.min(Number(value.value), graphqlBounds.maxPageSize);
  }
  return graphqlBounds.maxPageSize;
}

const camel = (constant: string) => constant.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * An order by the node type's own (indexed) columns reads a page; any other (pg-aggregates' order
 * by an aggregate of related rows) reads the whole collection. A variable counts as the latter.
 */
function ordersByAggregate(field: FieldNode, node: GraphQLCompositeType | undefined): boolean {
  const value = field.arguments?.find((arg) => arg.name.value === 'orderBy')?.value;
  if (!value) return false;
  const values: ValueNode[] = value.kind === Kind.LIST ? [...value.values] : [value];
  const columns = node && isObjectType(node) ? node.getFields() : {};
  return values.some((v) => {
    if (v.kind !== Kind.ENUM) return true;
    const key = v.value.replace(/_(ASC|DESC)$/, '');
    return !(key === 'NATURAL' || key === 'PRIMARY_KEY' || camel(key) in columns);
  });
}

/** `page`: the page of the connection whose fields these are (for its nodes and edges). */
function selectionCost(set: SelectionSetNode, type: GraphQLCompositeType, walk: CostWalk, page: number): number {
  let cost = 0;
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      cost += fieldCost(selection, type, walk, page);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const condition = selection.typeCondition ? walk.schema.getType(selection.typeCondition.name.value) : type;
      if (condition && isCompositeType(condition)) cost += selectionCost(selection.selectionSet, condition, walk, page);
    } else {
      const name = selection.name.value;
      const fragment = walk.fragments.get(name);
      const condition = fragment && walk.schema.getType(fragment.typeCondition.name.value);
      if (!fragment || !condition || !isCompositeType(condition) || walk.open.has(name)) continue;
      walk.open.add(name);
      cost += selectionCost(fragment.selectionSet, condition, walk, page);
      walk.open.delete(name);
    }
  }
  return cost;
}

function fieldCost(node: FieldNode, parent: GraphQLCompositeType, walk: CostWalk, page: number): number {
  const name = node.name.value;
  if (name.startsWith('__') || !('getFields' in parent)) return 0;
  const field = parent.getFields()[name];
  if (!field) return 0;
  const isConnectionPart = parent.name.endsWith('Connection');
  // totalCount and aggregates: one aggregate over the collection, counted once per connection.
  if (isConnectionPart && (name === 'totalCount' || name === 'aggregates')) return 0;
  const type = getNamedType(field.type);
  if (!node.selectionSet || !isCompositeType(type)) return 0;
  const isConnection = type.name.endsWith('Connection') && 'getFields' in type && 'nodes' in type.getFields();
  const connectionPage = isConnection ? pageOf(node) : graphqlBounds.maxPageSize;
  const inner = selectionCost(node.selectionSet, type, walk, connectionPage);
  if (isConnection) {
    const nodeType = getNamedType(type.getFields().nodes?.type);
    const counted = node.selectionSet.selections.some((s) => s.kind !== Kind.FIELD || ['totalCount', 'aggregates'].includes(s.name.value));
    const aggregateOrder = ordersByAggregate(node, nodeType && isCompositeType(nodeType) ? nodeType : undefined);
    return inner + (counted ? graphqlBounds.scanCost : 0) + (aggregateOrder ? graphqlBounds.maxCost + 1 : 0);
  }
  if (isConnectionPart && (name === 'nodes' || name === 'edges')) return page * (1 + inner);
  if (isConnectionPart && name === 'groupedAggregates') return graphqlBounds.scanCost + graphqlBounds.maxPageSize * (1 + inner);
  const unwrapped = isNonNullType(field.type) ? field.type.ofType : field.type;
  if (isListType(unwrapped)) return graphqlBounds.maxPageSize * (1 + inner);
  return 1 + inner;
}

/** The estimated cost of each operation of a document (see the header). */
export function operationCosts(schema: GraphQLSchema, document: DocumentNode): number[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const costs: number[] = [];
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const operation: OperationDefinitionNode = definition;
    const root = schema.getRootType(operation.operation);
    if (!root) continue;
    costs.push(selectionCost(operation.selectionSet, root, { schema, fragments, open: new Set() }, graphqlBounds.maxPageSize));
  }
  return costs;
}

/** Refuses, in validation, an operation whose estimated cost is above maxCost. */
const costLimit: ValidationRule = (context) => ({
  Document: {
    leave(document) {
      for (const cost of operationCosts(context.getSchema(), document)) {
        if (cost > graphqlBounds.maxCost) {
          context.reportError(new GraphQLError(`Operation cost limit of ${graphqlBounds.maxCost} exceeded, estimated ${cost}.`));
        }
      }
    },
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
  costLimit,
];

interface PageArgs {
  first: number | null | undefined;
  last: number | null | undefined;
}

function checkedPage([first, last]: readonly (number | null | undefined)[]): PageArgs {
  for (const [name, value] of [
    ['first', first],
    ['last', last],
  ] as const) {
    if (value != null && (value < 0 || value > graphqlBounds.maxPageSize)) {
      throw new GraphQLError(`\`${name}\` must be between 0 and ${graphqlBounds.maxPageSize}.`, {
        extensions: { code: 'PAGE_SIZE_EXCEEDED' },
      });
    }
  }
  return { first: first ?? (last == null ? graphqlBounds.maxPageSize : null), last };
}

interface ConnectionLike extends Step {
  setFirst($first: Step): void;
  setLast($last: Step): void;
}

/**
 * Adds the validation rules, and bounds connection pages and grouped aggregates: `first` and
 * `last` lose their own applyPlan and are applied together by the field's plan, which checks them
 * (before the connection's SQL can run) and supplies the default page.
 */
export const OperationBoundsPlugin: GraphileConfig.Plugin = {
  name: 'InternalGraphqlOperationBoundsPlugin',
  description: `Depth, list depth, alias and cost limits; connections read at most ${graphqlBounds.maxPageSize} rows a page`,
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
