// The image rules in SQL (db/sql/uploads.sql): which object an image shows, which assets may be
// attached, what processing records (once, and only by the worker), and which objects go when an
// image is replaced or its account purged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { roleUrl } from '../../../db/roles.ts';
import type { TestApp } from '../../helpers/app.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { appWithUsers } from '../../helpers/worlds.ts';

let app: TestApp;
let alice: TestUser;
beforeAll(async () => {
  [app, alice] = await appWithUsers(2);
});
afterAll(() => app.close());

/** An image asset of `owner` as the owner arranges it: its upload at `uploads/<n>`, `status`, and variants when given. */
let assets = 0;
async function imageAsset(owner: TestUser, status: 'processing' | 'ready' | 'failed', processed: boolean, purpose = 'profile_photo') {
  assets += 1;
  const upload = `uploads/${assets}`;
  const { rows } = await app.owner.query<{ id: string }>(
    `with intent as (
       insert into app.upload_intents (owner_id, purpose, content_type, content_length, object_key, expires_at, completed_at)
       values ($1, $3::app.upload_purpose, 'image/jpeg', 10, $2, now() + interval '15 minutes', now()) returning id)
     insert into app.assets (upload_id, owner_id, purpose, content_type, size, checksum, object_key, status)
     select intent.id, $1, $3::app.upload_purpose, 'image/jpeg', 10, repeat('a', 64), $2, $4::app.asset_status from intent returning id`,
    [owner.id, upload, purpose, status],
  );
  const id = (rows[0] as { id: string }).id;
  if (processed) {
    const variants = [
      { width: 128, height: 128, contentType: 'image/webp', key: `images/${id}/128x128.webp` },
      { width: 256, height: 256, contentType: 'image/webp', key: `images/${id}/256x256.webp` },
      { width: 512, height: 512, contentType: 'image/jpeg', key: `images/${id}.jpg` },
    ];
    await app.owner.query(
      `update app.assets set processed_at = now(), width = 600, height = 600, placeholder = 'x', variants = $2, display_key = $3, object_key = $4 where id = $1`,
      [id, JSON.stringify(variants), `images/${id}/256x256.webp`, `images/${id}.jpg`],
    );
  }
  return { id, upload };
}

const imageKey = async (id: string) =>
  (
    await app.owner.query<{ key: string | null }>(
      'select app.image_key(status, display_key, object_key) as key from app.assets where id = $1',
      [id],
    )
  ).rows[0]?.key;

describe('app.image_key', () => {
  it('shows the display variant once processed, the upload of an older image until then, and nothing while processing or failed', async () => {
    const processed = await imageAsset(alice, 'ready', true);
    const older = await imageAsset(alice, 'ready', false);
    const processing = await imageAsset(alice, 'processing', false);
    const failed = await imageAsset(alice, 'failed', false);
    expect(await imageKey(processed.id)).toBe(`images/${processed.id}/256x256.webp`);
    expect(await imageKey(older.id)).toBe(older.upload);
    expect(await imageKey(processing.id)).toBeNull();
    expect(await imageKey(failed.id)).toBeNull();
  });
});

describe('attaching assets', () => {
  it('refuses a failed asset, lets SQL attach one still processing, and tells the API which are processing', async () => {
    const processing = await imageAsset(alice, 'processing', false);
    const failed = await imageAsset(alice, 'failed', false);
    const ready = await imageAsset(alice, 'ready', true);
    const check = (ids: string[]) =>
      asViewer(app, 'app_user', alice.id, (c) =>
        rowsOrError(c, 'select app.profile_asset_usable($1) as one, app.assets_processing($2::uuid[]) as processing', [ids[0], ids]),
      );
    expect(await check([ready.id])).toEqual([{ one: true, processing: false }]);
    expect(await check([processing.id])).toEqual([{ one: true, processing: true }]);
    expect(await check([failed.id])).toEqual([{ one: false, processing: false }]);
    // Whoever writes the column: the trigger refuses the failed one.
    expect(await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, 'select app.complete_media($1) as ok', [failed.id]))).toEqual([
      { ok: false },
    ]);
  });
});

describe('recording processing', () => {
  it('is for the worker only, happens once, and announces the asset id alone', async () => {
    const asset = await imageAsset(alice, 'processing', false);
    const record = `select app_private.finish_image($1, 800, 600, 'ph', '[{"width":800,"height":600,"contentType":"image/jpeg","key":"k"}]', 'd', 'j')`;
    expect(await asViewer(app, 'app_user', alice.id, (c) => rowsOrError(c, record, [asset.id]))).toBe('42501');

    const listener = new pg.Client({ connectionString: app.ownerUrl });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(`${message.channel}:${message.payload}`));
    await listener.query('listen asset_processed');
    await app.storage.putImmutable(asset.upload, Buffer.from('the upload'), 'image/jpeg');
    const worker = new pg.Client({ connectionString: roleUrl(app.ownerUrl, 'app_worker') });
    await worker.connect();
    try {
      await worker.query(record, [asset.id]);
      await worker.query(`select app_private.fail_image($1, 'IMAGE_UNREADABLE')`, [asset.id]);
      await worker.query(record.replace("'j'", "'other'"), [asset.id]);
      await expect.poll(() => heard).toEqual([`asset_processed:${asset.id}`]);
    } finally {
      await worker.end();
      await listener.end();
    }
    const { rows } = await app.owner.query('select status, width, object_key, display_key, error_code from app.assets where id = $1', [
      asset.id,
    ]);
    expect(rows[0]).toEqual({ status: 'ready', width: 800, object_key: 'j', display_key: 'd', error_code: null });
    // The upload's deletion was queued with the record: the app's worker deletes it.
    await expect.poll(() => app.storage.head(asset.upload), { timeout: 10_000 }).toBeNull();
  });
});

describe('objects of an image', () => {
  it('all go when the asset is unused (object_key, upload, variants), none while it is used', async () => {
    const bob = await userAtLevel(app, 2);
    const asset = await imageAsset(bob, 'ready', true);
    const keys = async () =>
      (await app.owner.query<{ key: string }>('select key from app_private.unused_asset_keys($1) key order by 1', [asset.id])).rows.map(
        (r) => r.key,
      );
    await app.owner.query('update app.users set profile_asset_id = $1 where id = $2', [asset.id, bob.id]);
    expect(await keys()).toEqual([]);
    await app.owner.query('update app.users set profile_asset_id = null where id = $1', [bob.id]);
    expect(await keys()).toEqual(
      [`images/${asset.id}.jpg`, `images/${asset.id}/128x128.webp`, `images/${asset.id}/256x256.webp`, asset.upload].sort(),
    );
  });

  it("are all listed for an account's purge", async () => {
    const carol = await userAtLevel(app, 2);
    const asset = await imageAsset(carol, 'ready', true, 'post_image');
    await app.owner.query(
      `insert into app_private.account_states (user_id, purge_started_at) values ($1, now())
       on conflict (user_id) do update set purge_started_at = now()`,
      [carol.id],
    );
    const { rows } = await app.owner.query<{ object_key: string }>('select object_key from app_private.purge_account_object_keys($1)', [
      carol.id,
    ]);
    expect(rows.map((r) => r.object_key)).toEqual(
      expect.arrayContaining([
        asset.upload,
        `images/${asset.id}.jpg`,
        `images/${asset.id}/128x128.webp`,
        `images/${asset.id}/256x256.webp`,
      ]),
    );
  });
});
