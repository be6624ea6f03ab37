// Row-level security and grants for identities and sessions, tested directly in SQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let alice: TestUser;
let bob: TestUser;
beforeAll(async () => {
  [app, alice, bob] = await appWithUsers(3, 3);
  await app.post('/auth/otp/request', { phoneCountryCode: '+1', phoneNumber: '5550009999' });
});
afterAll(() => app.close());

const insufficientPrivilege = '42501';

describe('every table with user data has row-level security enabled and forced', () => {
  it('holds for every table in the app schema', async () => {
    const { rows } = await app.owner.query(`
      select c.relname, c.relrowsecurity, c.relforcerowsecurity
      from pg_class c where c.relnamespace = 'app'::regnamespace and c.relkind = 'r'
        and c.relname <> 'reserved_handles'`);
    expect(rows.length).toBeGreaterThan(3);
    for (const row of rows) expect(row, row.relname).toMatchObject({ relrowsecurity: true, relforcerowsecurity: true });
  });

  it('gives the API roles no privilege at all in app_private', async () => {
    const { rows } = await app.owner.query(`
      select c.relname, r.rolname from pg_class c cross join (values ('app_anonymous'), ('app_user'), ('app_admin'), ('authenticator')) r(rolname)
      where c.relnamespace = 'app_private'::regnamespace and c.relkind = 'r'
        and has_table_privilege(r.rolname, c.oid, 'select, insert, update, delete')`);
    expect(rows).toEqual([]);
  });
});

describe('the inlined rules (migrations/frozen/0180)', () => {
  const rules = [
    'user_level(uuid)',
    'session_level(uuid, uuid)',
    'block_list(uuid)',
    'active_member(uuid, uuid)',
    'notification_visible(app.notifications, uuid)',
  ];

  it('are plain stable SQL (inlinable: no security definer, no SET clause) that no API role nor the login role may call', async () => {
    for (const rule of rules) {
      const { rows } = await app.owner.query(
        `select l.lanname, p.provolatile, p.prosecdef, p.proconfig,
                array(select r from unnest(array['app_anonymous', 'app_user', 'app_admin', 'authenticator', 'app_worker']) r
                      where has_function_privilege(r, p.oid, 'execute')) as callers
         from pg_proc p join pg_language l on l.oid = p.prolang where p.oid = $1::regprocedure`,
        [`app_private.${rule}`],
      );
      expect(rows[0], rule).toEqual({ lanname: 'sql', provolatile: 's', prosecdef: false, proconfig: null, callers: [] });
    }
  });

  it('are what the app.* helpers answer: each helper follows its rule when the rule changes (in a transaction rolled back)', async () => {
    const marker = '00000000-0000-4000-8000-000000000001';
    const cases = [
      {
        rule: 'user_level(p_user_id uuid) returns table (level int)',
        body: 'select 99',
        door: 'app.user_access_level(gen_random_uuid())',
        answer: 99,
      },
      {
        rule: 'session_level(p_session_id uuid, p_user_id uuid) returns table (level int)',
        body: 'select 99',
        door: 'app.session_access_level(gen_random_uuid(), gen_random_uuid())',
        answer: 99,
      },
      {
        rule: 'block_list(p_user_id uuid) returns table (ids uuid[])',
        body: `select array['${marker}'::uuid]`,
        door: 'app.user_block_list(gen_random_uuid())',
        answer: [marker],
      },
      {
        rule: 'active_member(p_hub_id uuid, p_user_id uuid) returns table (active boolean)',
        body: 'select true',
        door: 'app.is_active_member(gen_random_uuid(), gen_random_uuid())',
        answer: true,
      },
      {
        rule: 'notification_visible(p_notification app.notifications, p_user_id uuid) returns boolean',
        body: 'select true',
        door: 'app.notification_visible_to(null::app.notifications, gen_random_uuid())',
        answer: true,
      },
    ];
    const client = await app.owner.connect();
    try {
      for (const { rule, body, door, answer } of cases) {
        const ask = async () => (await client.query(`select ${door} as answer`)).rows[0].answer;
        expect(await ask(), door).not.toEqual(answer);
        await client.query('begin');
        await client.query(`create or replace function app_private.${rule} language sql stable as $$ ${body} $$`);
        expect(await ask(), door).toEqual(answer);
        await client.query('rollback');
        expect(await ask(), door).not.toEqual(answer);
      }
    } finally {
      client.release();
    }
  });

  it("give a revoked session no level and a live one its user's", async () => {
    const level = async (user: TestUser) =>
      (
        await app.owner.query(
          'select app.session_access_level(s.id, s.user_id) as level from app.sessions s where s.user_id = $1 and s.revoked_at is null',
          [user.id],
        )
      ).rows[0]?.level;
    expect(await level(alice)).toBe(3);
    const carol = await userAtLevel(app, 2);
    expect(await level(carol)).toBe(2);
    const { rows } = await app.owner.query('update app.sessions set revoked_at = now() where user_id = $1 returning id', [carol.id]);
    expect((await app.owner.query('select app.session_access_level($1, $2) as level', [rows[0]?.id, carol.id])).rows[0].level).toBeNull();
  });
});

describe('sessions, OTP rows and phones', () => {
  it("app_user reads only its own sessions, never another user's", async () => {
    const rows = await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'select id, user_id from app.sessions order by id'));
    const { rows: hers } = await app.owner.query('select id, user_id from app.sessions where user_id = $1 order by id', [alice.id]);
    expect(hers.length).toBeGreaterThan(0);
    expect(rows).toEqual(hers);
    const bobs = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, 'select id from app.sessions where user_id = $1', [bob.id]),
    );
    expect(bobs).toEqual([]);
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, 'select id from app.sessions'))).toBe(insufficientPrivilege);
  });

  it('app_user cannot read OTP codes, refresh tokens or device and subject mappings', async () => {
    for (const table of [
      'app_private.otp_codes',
      'app_private.refresh_tokens',
      'app_private.anonymous_devices',
      'app_private.idp_subjects',
      'app_private.rate_limits',
    ]) {
      expect(await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, `select * from ${table}`)), table).toBe(insufficientPrivilege);
    }
  });

  it("app_user reads its own phone and no one else's", async () => {
    const own = await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'select user_id, phone_e164 from app.phone_identities'));
    expect(own).toEqual([{ user_id: alice.id, phone_e164: alice.phone?.e164 }]);
    const others = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, 'select phone_e164 from app.phone_identities where user_id = $1', [bob.id]),
    );
    expect(others).toEqual([]);
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, 'select * from app.phone_identities'))).toBe(
      insufficientPrivilege,
    );
  });

  it('app_user cannot claim a phone or change identity rows directly', async () => {
    const insert = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, `insert into app.phone_identities (user_id, phone_e164) values ($1, '+15550001111') returning user_id`, [alice.id]),
    );
    expect(insert).toBe(insufficientPrivilege);
    const onboarding = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, 'update app.users set contacts_synced_at = now() where id = $1 returning id', [alice.id]),
    );
    expect(onboarding).toBe(insufficientPrivilege);
  });

  it('app_user edits only its own user row and reads no private user columns', async () => {
    const other = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, `update app.users set bio = 'hacked' where id = $1 returning id`, [bob.id]),
    );
    expect(other).toEqual([]);
    const own = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, `update app.users set bio = 'mine' where id = $1 returning id`, [alice.id]),
    );
    expect(own).toEqual([{ id: alice.id }]);
    expect(await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'select terms_accepted_at from app.users'))).toBe(
      insufficientPrivilege,
    );
  });

  it('anonymous callers reach sign-in only through the granted functions', async () => {
    const issued = await asViewer(app, 'app_anonymous', null, (c) =>
      rowsOrError(c, `select app.request_otp('+15550009998', '\\x00'::bytea) as wait`),
    );
    expect(issued).toEqual([{ wait: 0 }]);
    const direct = await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, `select app_private.sign_in_phone('+15550009998')`));
    expect(direct).toBe(insufficientPrivilege);
    const merge = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, 'select app_private.merge_user($1, $2)', [bob.id, alice.id]),
    );
    expect(merge).toBe(insufficientPrivilege);
  });
});
