// Badge counters (migrations/frozen/0200-0202) tested in SQL as app_user: over many generated states
// (inserts, mark-read, deletes, hub joins and leaves, the Hub-ready level coming and going, reposts
// deleted, restored or changing visibility), the counts read through app.unread_counts equal a
// direct count of the unread rows the list's policy shows, the list's pages (app.notification_page)
// are exactly the rows the policy shows, and app_private.unread_counter_drift finds nothing. Also
// under concurrent writers, and at a cost that does not follow the number of rows.
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { createHub } from '../../helpers/hubs.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let owner: TestUser;
let recipients: TestUser[];
let hubs: string[];
/** Reposts: public, public_hub, private_locked_hub targeting hubs[0], and another public one. */
let reposts: string[];

beforeAll(async () => {
  [app, owner] = await appWithUsers(4);
  recipients = [await userAtLevel(app, 4), await userAtLevel(app, 4)];
  hubs = [];
  for (let i = 0; i < 3; i++) hubs.push((await createHub(app, owner)).id);
  const source = (
    await app.owner.query<{ id: string }>(
      `insert into app.posts (author_id, thought_text, visibility) values ($1, 'source', 'public') returning id`,
      [owner.id],
    )
  ).rows[0]?.id;
  reposts = [];
  for (const visibility of ['public', 'public_hub', 'private_locked_hub', 'public']) {
    const { rows } = await app.owner.query<{ id: string }>(
      `insert into app.posts (author_id, thought_text, visibility, source_post_id) values ($1, 'repost', $2, $3) returning id`,
      [owner.id, visibility, source],
    );
    reposts.push(rows[0]?.id as string);
  }
  await app.owner.query(`insert into app.post_hubs (post_id, hub_id, kind, added_by) values ($1, $2, 'target', $3)`, [
    reposts[2],
    hubs[0],
    owner.id,
  ]);
}, 60_000);
afterAll(async () => {
  await app.close();
});

const types = [
  'post_voted',
  'user_followed',
  'post_reposted',
  'post_reposted',
  'post_reposted',
  'hub_post_created',
  'hub_member_joined',
] as const;

type Command =
  | { op: 'insert'; user: number; type: (typeof types)[number]; hub: number | null; post: number | null; read: boolean; rows: number }
  | { op: 'markAll'; user: number }
  | { op: 'markSome'; user: number; pick: number }
  | { op: 'unread'; pick: number }
  | { op: 'delete'; pick: number }
  | { op: 'join'; user: number; hub: number }
  | { op: 'leave'; user: number; hub: number }
  | { op: 'level'; user: number; hubReady: boolean }
  | { op: 'repost'; post: number; change: 'delete' | 'restore' | 'private' | 'public' | 'remove' };

const user = fc.integer({ min: 0, max: 1 });
const hub = fc.integer({ min: 0, max: 2 });
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('insert' as const),
      user,
      type: fc.constantFrom(...types),
      hub: fc.option(hub, { freq: 1 }),
      post: fc.option(fc.integer({ min: 0, max: 4 }), { freq: 6 }),
      read: fc.boolean(),
      rows: fc.integer({ min: 1, max: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('markAll' as const), user }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('markSome' as const), user, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('unread' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('join' as const), user, hub }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('leave' as const), user, hub }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('level' as const), user, hubReady: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('repost' as const),
      post: fc.integer({ min: 0, max: 3 }),
      change: fc.constantFrom('delete' as const, 'restore' as const, 'private' as const, 'public' as const, 'remove' as const),
    }),
  },
);

async function asUser<T>(client: pg.PoolClient, userId: string, read: () => Promise<T>): Promise<T> {
  await client.query(`select set_config('role', 'app_user', true), set_config('app.user_id', $1, true)`, [userId]);
  try {
    return await read();
  } finally {
    await client.query('reset role');
  }
}

async function apply(client: pg.PoolClient, c: Command): Promise<void> {
  const idOf = async (pick: number, userId?: string) => {
    const { rows } = await client.query<{ id: string }>(
      'select id from app.notifications where $1::uuid is null or recipient_id = $1 order by id',
      [userId ?? null],
    );
    return rows.length ? (rows[pick % rows.length] as { id: string }).id : undefined;
  };
  switch (c.op) {
    case 'insert': {
      const recipient = recipients[c.user] as TestUser;
      const post = c.post === null ? null : (reposts[c.post] ?? '00000000-0000-4000-8000-00000000abcd');
      await client.query(
        `insert into app.notifications (recipient_id, type, hub_id, post_id, read_at)
         select $1, $2, $3, $4, case when $5 then now() end from generate_series(1, $6)`,
        [recipient.id, c.type, c.hub === null ? null : hubs[c.hub], post, c.read, c.rows],
      );
      return;
    }
    case 'markAll':
      await asUser(client, (recipients[c.user] as TestUser).id, () => client.query('select app.mark_notifications_read(null, true)'));
      return;
    case 'markSome': {
      const recipient = recipients[c.user] as TestUser;
      const id = await idOf(c.pick, recipient.id);
      if (id) await asUser(client, recipient.id, () => client.query('select app.mark_notifications_read($1::uuid[], false)', [[id]]));
      return;
    }
    case 'unread': {
      const id = await idOf(c.pick);
      if (id) await client.query('update app.notifications set read_at = null where id = $1', [id]);
      return;
    }
    case 'delete': {
      const id = await idOf(c.pick);
      if (id) await client.query('delete from app.notifications where id = $1', [id]);
      return;
    }
    case 'join':
      await client.query('insert into app.hub_memberships (hub_id, user_id) values ($1, $2) on conflict do nothing', [
        hubs[c.hub],
        (recipients[c.user] as TestUser).id,
      ]);
      return;
    case 'leave':
      await client.query('delete from app.hub_memberships where hub_id = $1 and user_id = $2', [
        hubs[c.hub],
        (recipients[c.user] as TestUser).id,
      ]);
      return;
    case 'level':
      await client.query('update app.users set contacts_synced_at = case when $2 then now() end where id = $1', [
        (recipients[c.user] as TestUser).id,
        c.hubReady,
      ]);
      return;
    case 'repost': {
      const id = reposts[c.post];
      const change = {
        delete: 'update app.posts set deleted_at = now() where id = $1',
        restore: 'update app.posts set deleted_at = null where id = $1',
        private: `update app.posts set visibility = 'private_locked_hub' where id = $1`,
        public: `update app.posts set visibility = 'public' where id = $1`,
        // A post gone altogether (as a purge would remove it); its dependants first.
        remove: `with h as (delete from app.post_hubs where post_id = $1), v as (delete from app.vote_counters where post_id = $1)
                 delete from app.posts where id = $1`,
      }[c.change];
      await client.query(change, [id]);
      return;
    }
  }
}

/**
 * Per user, as app_user, in one statement: the counts as app.unread_counts reads them against a
 * direct count of the unread rows the list's policy shows, and the pages of app.notification_page
 * (all rows, unread rows) against the rows the policy shows. Then the drift check, as the owner.
 */
const comparison = `
  with counted as (select coalesce(hub_id::text, '-') as hub, unread::int from app.unread_counts()),
       direct as (select coalesce(hub_id::text, '-') as hub, count(*)::int as unread from app.notifications where read_at is null group by 1)
  select
    (select coalesce(json_agg(x order by x.hub), '[]') from counted x) as counted,
    (select coalesce(json_agg(x order by x.hub), '[]') from direct x) as direct,
    array(select id from app.notification_page(null, null, false, 100000) order by id) as paged,
    array(select id from app.notifications order by id) as visible,
    array(select id from app.notification_page(null, null, true, 100000) order by id) as paged_unread,
    array(select id from app.notifications where read_at is null order by id) as visible_unread`;

async function compare(client: pg.PoolClient, label: string): Promise<void> {
  for (const recipient of recipients) {
    const { rows } = await asUser(client, recipient.id, () => client.query(comparison));
    const row = rows[0];
    expect(row.counted, `${label}: counts of ${recipient.id}`).toEqual(row.direct);
    expect(row.paged, `${label}: page of ${recipient.id}`).toEqual(row.visible);
    expect(row.paged_unread, `${label}: unread page of ${recipient.id}`).toEqual(row.visible_unread);
  }
  expect((await client.query('select * from app_private.unread_counter_drift()')).rows, `${label}: drift`).toEqual([]);
}

describe('badge counters', () => {
  it('count exactly the unread rows the list shows, in every generated state (app_user)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 14 }), async (commands) => {
        const client = await app.owner.connect();
        try {
          await client.query('begin');
          for (const [index, c] of commands.entries()) {
            await apply(client, c);
            await compare(client, `after command ${index} ${JSON.stringify(c)}`);
          }
        } finally {
          await client.query('rollback');
          client.release();
        }
      }),
      { numRuns: 100 },
    );
  }, 300_000);
});

describe('under concurrent writers', () => {
  it('share-lock the repost a row is about until the writer commits, and no post for rows about none', async () => {
    const [recipient] = recipients as [TestUser];
    const writer = await app.owner.connect();
    try {
      // What the writing transaction holds on posts, seen from its own connection.
      const postLocks = () =>
        writer.query<{ n: number }>(
          `select count(*)::int as n from pg_locks where pid = pg_backend_pid() and locktype = 'tuple' or
             (pid = pg_backend_pid() and locktype = 'relation' and relation = 'app.posts'::regclass and mode = 'RowShareLock')`,
        );
      await writer.query('begin');
      await writer.query(`insert into app.notifications (recipient_id, type) values ($1, 'user_followed')`, [recipient.id]);
      expect((await postLocks()).rows).toEqual([{ n: 0 }]);
      await writer.query(`insert into app.notifications (recipient_id, type, post_id) values ($1, 'post_reposted', $2)`, [
        recipient.id,
        reposts[1],
      ]);
      expect((await postLocks()).rows[0]?.n).toBeGreaterThan(0);
      // Another transaction cannot change the repost's visibility until the writer commits (the row's
      // foreign key alone takes a key-share lock, which a visibility update does not wait for).
      await expect(app.owner.query('select from app.posts where id = $1 for no key update nowait', [reposts[1]])).rejects.toMatchObject({
        code: '55P03',
      });
      await writer.query('rollback');
      await app.owner.query('select from app.posts where id = $1 for no key update nowait', [reposts[1]]);
    } finally {
      writer.release();
    }
  });

  it('stay exact: parallel inserts for one user, mark-read, and reposts deleted and restored meanwhile', async () => {
    const [recipient] = recipients as [TestUser];
    const writers = Array.from({ length: 6 }, async (_, writer) => {
      for (let i = 0; i < 25; i++) {
        await app.owner.query(
          `insert into app.notifications (recipient_id, type, hub_id, post_id)
           select $1, t, case when t = 'hub_post_created' then $2::uuid end, case when t = 'post_reposted' then $3::uuid end
           from unnest(array['post_voted', 'post_reposted', 'hub_post_created']::app.notification_type[]) t`,
          [recipient.id, hubs[1], reposts[(writer + i) % 4]],
        );
      }
    });
    const readers = (async () => {
      for (let i = 0; i < 15; i++) {
        const client = await app.owner.connect();
        try {
          await client.query('begin');
          await asUser(client, recipient.id, () => client.query('select app.mark_notifications_read(null, true)'));
          await client.query('commit');
        } finally {
          client.release();
        }
        // A repost stops and starts being visible to everyone (and one is deleted) while rows about it are written and read.
        await app.owner.query(
          `update app.posts set visibility = case when visibility = 'public' then 'private_locked_hub' else 'public' end::app.post_visibility where id = $1`,
          [reposts[0]],
        );
        if (i === 7) await app.owner.query('update app.posts set deleted_at = now() where id = $1', [reposts[3]]);
      }
    })();
    await Promise.all([...writers, readers]);
    expect((await app.owner.query('select * from app_private.unread_counter_drift()')).rows).toEqual([]);
    await app.owner.query(`update app.posts set visibility = 'public', deleted_at = null where id = any ($1)`, [[reposts[0], reposts[3]]]);
    expect((await app.owner.query('select * from app_private.unread_counter_drift()')).rows).toEqual([]);
  }, 60_000);

  it('are set right again by the rebuild after a drift', async () => {
    const [recipient] = recipients as [TestUser];
    const count = async () =>
      (await app.owner.query<{ n: number }>('select coalesce(sum(unread), 0)::int as n from app_private.unread_counts($1)', [recipient.id]))
        .rows[0]?.n;
    const right = await count();
    await app.owner.query(`update app_private.unread_counters set unread = unread + 5 where user_id = $1`, [recipient.id]);
    await app.owner.query(
      `insert into app_private.unread_counters (user_id, kind, scope_id, slot, unread) values ($1, 'g', null, 31, 3)
                           on conflict (user_id, kind, scope_id, slot) do update set unread = app_private.unread_counters.unread + 3`,
      [recipient.id],
    );
    expect((await app.owner.query('select * from app_private.unread_counter_drift()')).rows.length).toBeGreaterThan(0);
    expect(await count()).not.toBe(right);
    await app.owner.query('select app_private.rebuild_unread_counters()');
    expect((await app.owner.query('select * from app_private.unread_counter_drift()')).rows).toEqual([]);
    expect(await count()).toBe(right);
  });
});

describe('cost', () => {
  /** Shared buffers (hit + read) of one statement as app_user, inner function bodies included. */
  async function buffers(userId: string, sql: string): Promise<number> {
    const client = await app.owner.connect();
    try {
      await client.query('begin');
      const plan = await asUser(client, userId, () => client.query(`explain (analyze, buffers, format json) ${sql}`));
      const top = plan.rows[0]['QUERY PLAN'][0].Plan;
      return top['Shared Hit Blocks'] + top['Shared Read Blocks'];
    } finally {
      await client.query('rollback');
      client.release();
    }
  }

  it("follows the viewer's scopes, not their rows: counts and pages of 20,000 rows cost what those of 40 do", async () => {
    const [small, large] = [await userAtLevel(app, 4), await userAtLevel(app, 4)];
    const left = hubs[2] as string;
    for (const target of [small, large]) {
      const many = target === large ? 10_000 : 20;
      // Oldest: unread global rows; then read global rows; newest: unread rows of a hub the user left.
      await app.owner.query(
        `insert into app.notifications (recipient_id, type, created_at) select $1, 'post_voted', now() - interval '3 days' + i * interval '1 ms' from generate_series(1, 20) i`,
        [target.id],
      );
      await app.owner.query(
        `insert into app.notifications (recipient_id, type, created_at, read_at) select $1, 'user_followed', now() - interval '2 days' + i * interval '1 ms', now() from generate_series(1, $2) i`,
        [target.id, many],
      );
      await app.owner.query(
        `insert into app.notifications (recipient_id, type, hub_id, created_at) select $1, 'hub_post_created', $2, now() - interval '1 day' + i * interval '1 ms' from generate_series(1, $3) i`,
        [target.id, left, many],
      );
    }
    await app.owner.query('vacuum analyze app.notifications');
    for (const sql of [
      'select * from app.unread_counts()',
      'select * from app.notification_page(null, null, false, 21)',
      'select * from app.notification_page(null, null, true, 21)',
    ]) {
      const [few, lots] = [await buffers(small.id, sql), await buffers(large.id, sql)];
      expect(lots, `${sql}: ${few} buffers for 40 rows, ${lots} for 20,020`).toBeLessThanOrEqual(few * 1.5 + 10);
    }
  }, 60_000);
});
