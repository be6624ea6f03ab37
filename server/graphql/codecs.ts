// PostgreSQL types PostGraphile has no codec for. Without one it warns on every schema build and
// drops the column; with one the object is known, and the grants decide whether it shows. Read as a
// string:
//
// - xid8: app.notifications.tx_id, the commit order the notification stream reads. No API role may
//   select it, so it never reaches the GraphQL schema.
//
// (pg_lsn, the argument of app.replica_caught_up, needs none: exposure.ts removes every function it
// does not list before the build reads the database.)
import type {} from 'postgraphile';

const textTypes = ['xid8'] as const;

export const TextCodecsPlugin: GraphileConfig.Plugin = {
  name: 'InternalGraphqlTextCodecsPlugin',
  description: `Text codecs for ${textTypes.map((name) => `pg_catalog.${name}`).join(' and ')}`,
  version: '1.0.0',
  gather: {
    hooks: {
      pgCodecs_findPgCodec(info, event) {
        const name = textTypes.find((type) => type === event.pgType.typname);
        if (event.pgCodec || !name || event.pgType.getNamespace()?.nspname !== 'pg_catalog') return;
        const { sql } = info.lib;
        event.pgCodec = {
          name,
          sqlType: sql.identifier('pg_catalog', name),
          fromPg: (value: string) => value,
          toPg: (value: string) => value,
          executor: null,
          attributes: undefined,
        };
      },
    },
  },
  schema: {
    hooks: {
      init(_, build) {
        for (const name of textTypes) {
          const codec = build.pgCodecs[name];
          if (codec) build.setGraphQLTypeForPgCodec(codec, ['input', 'output'], 'String');
        }
        return _;
      },
    },
  },
};
