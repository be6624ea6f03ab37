// PostgreSQL types PostGraphile has no codec for. Without one it warns on every schema build and
// drops the column; with one the column is known, and the grants decide whether it shows.
//
// xid8 (as a String): app.notifications.tx_id, the commit order the notification stream reads. No
// API role may select it, so it never reaches the GraphQL schema; the codec keeps the build quiet.
import type {} from 'postgraphile';

export const Xid8CodecPlugin: GraphileConfig.Plugin = {
  name: 'InternalGraphqlXid8CodecPlugin',
  description: 'A text codec for pg_catalog.xid8',
  version: '1.0.0',
  gather: {
    hooks: {
      pgCodecs_findPgCodec(info, event) {
        if (event.pgCodec || event.pgType.typname !== 'xid8' || event.pgType.getNamespace()?.nspname !== 'pg_catalog') return;
        const { sql } = info.lib;
        event.pgCodec = {
          name: 'xid8',
          sqlType: sql`pg_catalog.xid8`,
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
        const codec = build.pgCodecs.xid8;
        if (codec) build.setGraphQLTypeForPgCodec(codec, ['input', 'output'], 'String');
        return _;
      },
    },
  },
};
