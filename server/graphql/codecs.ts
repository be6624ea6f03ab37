// PostgreSQL types PostGraphile has no codec for. Without one it warns on every schema build and
// drops the column or function; with one the object is known, and the grants and the function
// allow-list (exposure.ts) decide whether it shows. Both are read as strings:
//
// - xid8: app.notifications.tx_id, the commit order the notification stream reads. No API role may
//   select it, so it never reaches the GraphQL schema.
// - pg_lsn: the argument of app.replica_caught_up, the replica read check (server/http/replica-reads.ts),
//   which the allow-list does not expose.
import type {} from 'postgraphile';

const textTypes = ['xid8', 'pg_lsn'] as const;

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
