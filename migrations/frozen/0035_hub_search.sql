-- Up Migration
-- Hub search by name words (GET /search/hubs), case- and accent-insensitive, index-served.
create index hubs_name_search on app.hubs using gin (app.search_text(name) public.gin_trgm_ops);

-- Down Migration
drop index app.hubs_name_search;
