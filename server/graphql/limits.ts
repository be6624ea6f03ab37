// The numbers of the internal GraphQL bounds (bounds.ts applies them). A module of their own, so
// what reads them at startup (auth.ts: the statement timeout) does not load PostGraphile, which is
// loaded on the first GraphQL request (mount.ts).
export const graphqlBounds = {
  maxDepth: 8,
  maxListDepth: 2,
  maxSelfReferentialDepth: 2,
  maxAliases: 10,
  maxPageSize: 100,
  /** The estimated cost above which an operation is refused (operationCost). */
  maxCost: 2500,
  /** The cost of work over a whole collection, whatever the page. */
  scanCost: 1000,
  /** PostgreSQL's statement_timeout for every statement of an operation. */
  statementTimeout: '5s',
} as const;
