// Who may write through the internal GraphQL API: the admin token, where app_admin's grants allow
// (today: hubs.is_recommended). A user token reads as that user and writes nothing: its
// transaction is read-only (auth.ts), so PostgreSQL refuses any write whatever the schema shows.
//
// Why users do not write here: several app_user grants exist for REST handlers that check more
// than a policy can (a profile photo must be the user's own completed upload, a report goes through
// app.report_*), and the mobile app's writes belong to REST, which holds the Node half of each.
//
// PostGraphile's RBAC plugin derives create/update/delete mutations from the grants of every role
// `authenticator` may become; this plugin narrows the write side to app_admin's grants, so the
// schema has no mutation that only a user role could run.
import type {} from 'postgraphile';
import { entityPermissions } from 'postgraphile/graphile-build-pg/pg-introspection';

const writerRole = 'app_admin';

export const AdminWritesPlugin: GraphileConfig.Plugin = {
  name: 'InternalGraphqlAdminWritesPlugin',
  description: "Create/update/delete mutations only where app_admin's grants allow them",
  version: '1.0.0',
  after: ['PgRBACPlugin'],
  gather: {
    hooks: {
      async pgCodecs_attribute(info, event) {
        const { introspection } = await info.helpers.pgIntrospection.getService(event.serviceName);
        const writer = introspection.roles.find((role) => role.rolname === writerRole);
        const pgClass = event.pgAttribute.getClass();
        if (!pgClass) return;
        const column = writer ? entityPermissions(introspection, event.pgAttribute, writer, true) : {};
        const table = writer ? entityPermissions(introspection, pgClass, writer, true) : {};
        event.attribute.extensions = event.attribute.extensions ?? {};
        Object.assign(event.attribute.extensions, {
          canInsert: Boolean(column.insert || table.insert),
          canUpdate: Boolean(column.update || table.update),
        });
      },
      async pgTables_PgResourceOptions(info, event) {
        const { pgClass, resourceOptions } = event;
        const { introspection } = await info.helpers.pgIntrospection.getService(event.serviceName);
        const writer = introspection.roles.find((role) => role.rolname === writerRole);
        const table = writer ? entityPermissions(introspection, pgClass, writer, true) : {};
        const columns = writer
          ? pgClass
              .getAttributes()
              .filter((attribute) => attribute.attnum > 0)
              .map((attribute) => entityPermissions(introspection, attribute, writer, true))
          : [];
        resourceOptions.extensions = resourceOptions.extensions ?? {};
        Object.assign(resourceOptions.extensions, {
          canInsert: Boolean(table.insert || columns.some((column) => column.insert)),
          canUpdate: Boolean(table.update || columns.some((column) => column.update)),
          canDelete: Boolean(table.delete),
        });
      },
    },
  },
};
