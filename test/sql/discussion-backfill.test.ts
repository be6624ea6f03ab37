// The discussions migrations on a database that already holds hub placements: run down and up again,
// they give every placement that had no discussion one, dated from the placement, and keep the rest.
import path from 'node:path';
import { runner } from 'node-pg-migrate';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createHub } from '../helpers/hubs.ts';
import { createPost } from '../helpers/posts.ts';
import { userAtLevel } from '../helpers/users.ts';

const discussionMigrations = ['0082_saved_discussions', '0081_discussion_messages', '0080_hub_discussions'];

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const migrate = (direction: 'up' | 'down', file?: string) =>
  runner({
    databaseUrl: app.ownerUrl,
    dir: path.join(import.meta.dirname, '..', '..', 'migrations'),
    direction,
    file,
    migrationsTable: 'pgmigrations',
    checkOrder: false,
    log: () => {},
  });

it('backfills a discussion for every placement that lacks one', async () => {
  const author = await userAtLevel(app, 4);
  const hub = await createHub(app, author);
  const kept = await createPost(app, author, { visibility: 'public_hub', hubIds: [hub.id] });
  const orphan = await createPost(app, author, { visibility: 'private_locked_hub', hubIds: [hub.id] });
  const { rows: keptBefore } = await app.owner.query('select id from app.hub_discussions where post_id = $1', [kept.id]);

  for (const file of discussionMigrations) await migrate('down', file);
  await app.owner.query(`update app.post_hubs set created_at = '2026-01-02T03:04:05Z' where post_id = $1`, [orphan.id]);
  await app.owner.query('delete from app.hub_discussions where post_id = $1', [orphan.id]);
  await migrate('up');

  const { rows } = await app.owner.query(
    `select ph.post_id, d.id, d.created_at, d.last_activity_at, st.message_count from app.post_hubs ph
     left join app.hub_discussions d on d.hub_id = ph.hub_id and d.post_id = ph.post_id
     left join app.hub_discussion_stats st on st.discussion_id = d.id
     where ph.hub_id = $1`,
    [hub.id],
  );
  expect(rows).toHaveLength(2);
  const byPost = new Map(rows.map((row) => [row.post_id, row]));
  expect(byPost.get(kept.id).id).toBe(keptBefore[0].id);
  const backfilled = byPost.get(orphan.id);
  expect(backfilled.created_at.toISOString()).toBe('2026-01-02T03:04:05.000Z');
  expect(backfilled.last_activity_at.toISOString()).toBe('2026-01-02T03:04:05.000Z');
  expect(backfilled.message_count).toBeNull();
  // The backfilled discussion is a normal one: listed to members, and it takes messages.
  const list = await app.get(`/hubs/${hub.id}/discussions`, { token: author.token });
  expect(list.body.data.items.map((d: { id: string }) => d.id)).toEqual([keptBefore[0].id, backfilled.id]);
  const message = await app.post(`/hubs/${hub.id}/discussions/${backfilled.id}/messages`, { text: 'late' }, { token: author.token });
  expect(message.status).toBe(201);
  const after = await app.get(`/hubs/${hub.id}/discussions`, { token: author.token });
  expect(after.body.data.items.map((d: { id: string; messageCount: number }) => [d.id, d.messageCount])).toEqual([
    [backfilled.id, 1],
    [keptBefore[0].id, 0],
  ]);
});
