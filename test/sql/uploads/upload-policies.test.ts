// Row-level security of upload intents and assets, tested directly in SQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let alice: TestUser;
let bob: TestUser;
let intentId: string;
let assetId: string;
beforeAll(async () => {
  [app, alice, bob] = await appWithUsers(2, 2);
  // Arrange as the owner: one pending intent and one completed asset of Alice.
  const intent = await app.owner.query(
    `insert into app.upload_intents (owner_id, purpose, content_type, content_length, object_key, expires_at)
     values ($1, 'profile_photo', 'image/png', 10, 'profile_photo/test/a', now() + interval '15 minutes') returning id`,
    [alice.id],
  );
  intentId = intent.rows[0].id;
  const asset = await app.owner.query(
    `insert into app.assets (upload_id, owner_id, purpose, content_type, size, checksum, object_key)
     values ($1, $2, 'profile_photo', 'image/png', 10, repeat('a', 64), 'profile_photo/test/a') returning id`,
    [intentId, alice.id],
  );
  assetId = asset.rows[0].id;
});
afterAll(() => app.close());

describe('upload intents', () => {
  it('are visible to their owner only, and to no anonymous request', async () => {
    expect(await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'select id from app.upload_intents'))).toEqual([
      { id: intentId },
    ]);
    expect(await asViewer(app, 'app_user', bob.id, (c) => rowsOrError(c, 'select id from app.upload_intents'))).toEqual([]);
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, 'select id from app.upload_intents'))).toBe('42501');
  });

  it('cannot be written directly', async () => {
    const write = await asViewer(app, 'app_user', alice.id, (c) =>
      rowsOrError(c, `update app.upload_intents set completed_at = now() returning id`),
    );
    expect(write).toBe('42501');
  });
});

describe('assets', () => {
  it('are visible to the owner, and to others only while a visible profile uses them', async () => {
    expect(await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'select id from app.assets'))).toEqual([{ id: assetId }]);
    expect(await asViewer(app, 'app_user', bob.id, (c) => rowsOrError(c, 'select id from app.assets'))).toEqual([]);
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, 'select id from app.assets'))).toEqual([]);
    await app.owner.query('update app.users set profile_asset_id = $1 where id = $2', [assetId, alice.id]);
    expect(await asViewer(app, 'app_user', bob.id, (c) => rowsOrError(c, 'select id from app.assets'))).toEqual([{ id: assetId }]);
    expect(await asViewer(app, 'app_anonymous', null, (c) => rowsOrError(c, 'select id from app.assets'))).toEqual([{ id: assetId }]);
    await app.owner.query('insert into app.blocks (blocker_id, blocked_id) values ($1, $2)', [alice.id, bob.id]);
    expect(await asViewer(app, 'app_user', bob.id, (c) => rowsOrError(c, 'select id from app.assets'))).toEqual([]);
  });
});

describe('profile photos', () => {
  it("accept only the user's own profile_photo assets, whoever writes the column", async () => {
    const carol = await userAtLevel(app, 4);
    // Alice's asset as Carol's photo, written straight into the column (the grant allows the column).
    expect(
      await asViewer(app, 'app_user', carol.id, (c) =>
        rowsOrError(c, 'update app.users set profile_asset_id = $1 where id = $2 returning id', [assetId, carol.id]),
      ),
    ).toBe('P0001');
    expect(
      await asViewer(app, 'app_user', carol.id, (c) =>
        rowsOrError(c, 'insert into app.hub_profiles (user_id, profile_asset_id) values ($1, $2) returning user_id', [carol.id, assetId]),
      ),
    ).toBe('P0001');
    // Alice's own asset is fine.
    expect(
      await asViewer(app, 'app_user', alice.id, (c) =>
        rowsOrError(c, 'update app.users set profile_asset_id = $1 where id = $2 returning id', [assetId, alice.id]),
      ),
    ).toEqual([{ id: alice.id }]);
  });
});
