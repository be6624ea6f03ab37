// Counter slots (db/sql/counters.sql app_private.free_slot): a writer of a popular subject takes a
// slot no other open transaction is writing, so concurrent votes on one author's posts, or
// notifications to one recipient, do not wait for each other's commit; only when every slot is
// taken does a writer wait, as every writer once did. Each transaction here stays open while the
// next writes, with a lock timeout: a writer that waited for another's slot would fail with 55P03.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { userAtLevel } from '../../helpers/users.ts';

let app: TestApp;
let clients: pg.Client[];
beforeAll(async () => {
  app = await startTestApp();
  clients = await Promise.all(
    Array.from({ length: 17 }, async () => {
      const client = new pg.Client({ connectionString: app.ownerUrl });
      await client.connect();
      return client;
    }),
  );
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.end()));
  await app.close();
});

/** Runs `sql` in a new transaction of `client` under a short lock timeout; answers the SQLSTATE it failed with, or null. */
async function writeOpen(client: pg.Client, sql: string, params: unknown[]): Promise<string | null> {
  await client.query(`begin; set local lock_timeout = '500ms'`);
  try {
    await client.query(sql, params);
    return null;
  } catch (error) {
    await client.query('rollback');
    return (error as { code?: string }).code ?? 'error';
  }
}

describe('counter slots', () => {
  it('give 16 open writers of one counter 16 slots without waiting, and the 17th the wait', async () => {
    const subject = crypto.randomUUID();
    const add = `select app_private.add_counts(array[row('user_votes_received', $1::uuid, 1)::app_private.counter_change])`;
    const open = clients.slice(0, 16);
    for (const client of open) expect(await writeOpen(client, add, [subject])).toBeNull();
    // Every slot is held by an open transaction: the next writer waits for one of them.
    expect(await writeOpen(clients[16] as pg.Client, add, [subject])).toBe('55P03');
    await Promise.all(open.map((client) => client.query('commit')));
    const { rows } = await app.owner.query(
      `select count(distinct slot)::int as slots, sum(n)::int as n from app_private.counters where counter = 'user_votes_received' and subject = $1`,
      [subject],
    );
    expect(rows[0]).toEqual({ slots: 16, n: 16 });
    await app.owner.query(`delete from app_private.counters where subject = $1`, [subject]);
  });

  it('give open notifications to one recipient their own unread slots, without waiting', async () => {
    const recipient = await userAtLevel(app, 2);
    const open = clients.slice(0, 16);
    const insert = `insert into app.notifications (recipient_id, type) values ($1, 'user_followed')`;
    // Random slots would collide (two of 16 writers in one of 32 slots) in 99 runs of 100.
    for (const client of open) expect(await writeOpen(client, insert, [recipient.id])).toBeNull();
    await Promise.all(open.map((client) => client.query('commit')));
    const { rows } = await app.owner.query(
      `select count(distinct slot)::int as slots, sum(unread)::int as n from app_private.unread_counters where user_id = $1 and kind = 'g'`,
      [recipient.id],
    );
    expect(rows[0]).toEqual({ slots: 16, n: 16 });
    const unread = await app.get('/notifications/unread-count', { token: recipient.token });
    expect(unread.status).toBe(200);
    expect(unread.body.data.unreadCount).toBe(16);
  });
});
