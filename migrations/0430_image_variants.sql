-- Up Migration
-- Images are processed once after upload (contract part 18, docs/photos.md): decoded, turned upright,
-- stripped of every metadata field and re-encoded as variants, which are all that is ever served.
-- An asset's processing state and what it produced live on its row:
--   status       processing (complete answered, the worker has not finished), ready, or failed;
--                rows from before processing existed are ready with processed_at null until the
--                backfill reaches them (they are served as before until then);
--   processed_at when the variants were written (null: never processed; documents never are);
--   width/height the upright size of the whole image; placeholder a ThumbHash of it, base64;
--   variants     [{width, height, contentType, key}], smallest first: the served objects;
--   display_key  the variant shown in lists (post images: 1280 px WebP; profile and hub photos: 256 px
--                WebP, or the largest below), while object_key becomes the JPEG variant once
--                processed (download URLs, share pages, and the previous release's readers);
--   error_code   IMAGE_UNREADABLE or IMAGE_TOO_LARGE when failed.
-- Adding columns with a constant default or none rewrites nothing; the lock is taken under the
-- runner's lock_timeout and retried.
create type app.asset_status as enum ('processing', 'ready', 'failed');
comment on type app.asset_status is
  'Processing state of an asset: processing (images only, until the worker wrote the variants), ready, failed (error_code says why).';

alter table app.assets
  add column status app.asset_status not null default 'ready',
  add column processed_at timestamptz,
  add column width integer,
  add column height integer,
  add column placeholder text,
  add column variants jsonb,
  add column display_key text,
  add column error_code text;

comment on column app.assets.status is 'processing (images, until the worker wrote the variants), ready, or failed (error_code).';
comment on column app.assets.processed_at is 'When the variants were written; null for documents and for images uploaded before processing existed (until the backfill).';
comment on column app.assets.width is 'Upright width of the whole image in pixels (null until processed).';
comment on column app.assets.height is 'Upright height of the whole image in pixels (null until processed).';
comment on column app.assets.placeholder is 'ThumbHash of the upright image, base64 (null until processed).';
comment on column app.assets.variants is 'The served objects, smallest first: [{width, height, contentType, key}] (null until processed).';
comment on column app.assets.display_key is 'The variant shown in lists and cards: post images 1280 px WebP, profile and hub photos 256 px WebP (or the largest below).';
comment on column app.assets.error_code is 'Why processing failed: IMAGE_UNREADABLE or IMAGE_TOO_LARGE.';
