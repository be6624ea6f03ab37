// The sign-in limits of migrations/frozen/0095, tested directly in SQL: sliding windows, who may consume
// them, and housekeeping.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const consume = (key: string, limit: number, window: string) =>
  app.owner
    .query<{ wait: number }>('select app_private.consume_sliding_limit($1, $2, $3::interval) as wait', [key, limit, window])
    .then((r) => r.rows[0]?.wait);

describe('sliding windows', () => {
  it('allow `limit` hits in any window and answer the seconds until the oldest leaves', async () => {
    expect(await consume('test:a', 2, '1 hour')).toBe(0);
    expect(await consume('test:a', 2, '1 hour')).toBe(0);
    const wait = await consume('test:a', 2, '1 hour');
    expect(wait).toBeGreaterThan(3590);
    expect(wait).toBeLessThanOrEqual(3600);
    // A refused hit is not recorded; once the oldest hit is 59 min 30 s old, about 30 s remain.
    const { rows } = await app.owner.query(`select cardinality(hits) as n from app_private.sliding_limits where key = 'test:a'`);
    expect(rows[0].n).toBe(2);
    await app.owner.query(`update app_private.sliding_limits set hits[1] = now() - interval '59 minutes 30 seconds' where key = 'test:a'`);
    expect(await consume('test:a', 2, '1 hour')).toBeLessThanOrEqual(30);
    await app.owner.query(`update app_private.sliding_limits set hits[1] = now() - interval '61 minutes' where key = 'test:a'`);
    expect(await consume('test:a', 2, '1 hour')).toBe(0);
  });

  it('are reached by API roles only through app.consume_address_limit, for the two sign-in buckets', async () => {
    const allowed = await asViewer(app, 'app_anonymous', null, (c) =>
      rowsOrError(c, `select app.consume_address_limit('otp_request', '192.0.2.1') as wait`),
    );
    expect(allowed).toEqual([{ wait: 0 }]);
    const unknown = await asViewer(app, 'app_anonymous', null, (c) =>
      rowsOrError(c, `select app.consume_address_limit('other', '192.0.2.1')`),
    );
    expect(unknown).toBe('P0001');
    for (const role of ['app_anonymous', 'app_user'] as const) {
      const direct = await asViewer(app, role, null, (c) =>
        rowsOrError(c, `select app_private.consume_sliding_limit('x', 1000, '1 second')`),
      );
      expect(direct).toBe('42501');
    }
  });

  it('key a client address by its IPv4 address when IPv4-mapped, by its /64 when IPv6', async () => {
    const keys = await app.owner.query<{ address: string; key: string }>(
      `select a as address, app_private.client_address_key(a) as key
       from unnest(array['203.0.113.78', '::ffff:203.0.113.78', '::FFFF:cb00:714e', '2001:db8:1:2::5',
                         '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:3::5', 'fe80::1%eth0', 'unknown']) a`,
    );
    expect(Object.fromEntries(keys.rows.map((r) => [r.address, r.key]))).toEqual({
      '203.0.113.78': '203.0.113.78',
      '::ffff:203.0.113.78': '203.0.113.78',
      '::FFFF:cb00:714e': '203.0.113.78',
      '2001:db8:1:2::5': '2001:db8:1:2::/64',
      '2001:db8:1:2:ffff:ffff:ffff:ffff': '2001:db8:1:2::/64',
      '2001:db8:1:3::5': '2001:db8:1:3::/64',
      'fe80::1%eth0': 'fe80::/64',
      unknown: 'unknown',
    });
    const waits: number[] = [];
    for (let i = 0; i < 31; i += 1) {
      const address = i % 2 ? `2001:db8:9:9::${i + 1}` : `2001:db8:9:9:${i + 1}::1`;
      const { rows } = await app.owner.query<{ wait: number }>(`select app.consume_address_limit('anonymous_session', $1) as wait`, [
        address,
      ]);
      waits.push(rows[0]?.wait ?? -1);
    }
    expect(waits.slice(0, 30)).toEqual(Array(30).fill(0));
    expect(waits[30]).toBeGreaterThan(0);
  });

  it('are forgotten by housekeeping once their newest hit is over 24 hours old', async () => {
    await consume('test:old', 5, '24 hours');
    await consume('test:recent', 5, '24 hours');
    await app.owner.query(`update app_private.sliding_limits set hits = array[now() - interval '25 hours'] where key = 'test:old'`);
    await app.owner.query('select app_private.purge_expired_auth()');
    const { rows } = await app.owner.query(
      `select key from app_private.sliding_limits where key in ('test:old', 'test:recent') order by key`,
    );
    expect(rows.map((r) => r.key)).toEqual(['test:recent']);
  });
});
