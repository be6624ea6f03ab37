-- Up Migration
-- no transaction
-- The backfill (worker task process_image_backfill) walks the images never processed, a batch at a
-- time: this index holds exactly those, so each batch reads what it takes and the index empties
-- as the backfill progresses. Built without blocking writes.
create index concurrently if not exists assets_unprocessed_images on app.assets (created_at, id)
  where processed_at is null and status = 'ready' and purpose <> 'document';
