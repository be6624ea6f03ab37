// The API roles' read grants (contract section 10, migration 0091): app_anonymous and app_user hold
// no table-wide select in schema `app`, only column lists, so a column added later stays unreadable
// (and out of the user-token GraphQL schema) until it is granted on purpose. Columns that map
// invited phones to accounts, or show members' settings and join times, are not theirs to read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import type { TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let user: TestUser;
beforeAll(async () => {
  [app, user] = await appWithUsers(1);
});
afterAll(() => app.close());

describe('the API roles', () => {
  it('hold no table-wide select on any table of app', async () => {
    const { rows } = await app.owner.query<{ grantee: string; table_name: string }>(
      `select grantee, table_name from information_schema.role_table_grants
       where table_schema = 'app' and privilege_type = 'SELECT' and grantee in ('app_anonymous', 'app_user')
       order by 1, 2`,
    );
    expect(rows).toEqual([]);
  });

  it('may not select the columns REST shows nobody who may read the row', async () => {
    const hidden = [
      'hub_invitations.invitee_id',
      'hub_invitations.phone_e164',
      'hub_memberships.joined_at',
      'hub_memberships.content_muted',
      'assets.owner_id',
      'users.created_at',
      'users.terms_version',
      'phone_identities.verified_at',
      'hub_invite_links.token',
      'hub_join_requests.decided_by',
      'posts.deleted_at',
      'comments.deleted_at',
      'reports.details',
    ];
    for (const column of hidden) {
      const [table, name] = column.split('.') as [string, string];
      for (const role of ['app_anonymous', 'app_user'] as const) {
        const result = await asViewer(app, role, role === 'app_user' ? user.id : null, (c) =>
          rowsOrError(c, `select ${name} from app.${table} limit 0`),
        );
        expect(result, `${role} ${column}`).toBe('42501');
      }
    }
  });

  it('may not insert a report directly, not even as its reporter (reports go through app.report_*)', async () => {
    const result = await asViewer(app, 'app_user', user.id, (c) =>
      rowsOrError(c, `insert into app.reports (reporter_id, target_type, target_id, reason) values ($1, 'user', $1, 'spam') returning id`, [
        user.id,
      ]),
    );
    expect(result).toBe('42501');
    const { rows } = await app.owner.query(`select count(*)::int as n from app.reports`);
    expect(rows[0].n).toBe(0);
  });
});
