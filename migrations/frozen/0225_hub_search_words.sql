-- Up Migration
-- Hub search by name (GET /search/hubs?q=) took every hub whose name matched from the trigram index
-- and sorted them by name: "garden", a word of one hub name in 20, is 5,000 hubs to sort among
-- 100,000. As people search does (0223), name matches now come from an index of name words, read
-- in (word, hub_id) order: a page reads about a page of words whatever the number of hubs. Results
-- come by matched word, then hub id (server/search/routes.ts).

-- One row per word of a hub's name (app_private.name_words: as app.name_words_match splits it).
create table app.hub_name_words (
  hub_id uuid not null references app.hubs (id) on delete cascade,
  word text collate "C" not null,
  primary key (hub_id, word)
);
create index hub_name_words_word on app.hub_name_words (word, hub_id);
comment on table app.hub_name_words is
  'The words of each hub''s name as hub search matches them (0225): kept by a trigger on app.hubs, read by GET /search/hubs.';

alter table app.hub_name_words enable row level security;
alter table app.hub_name_words force row level security;
-- As public as the hub names they come from: every hub is visible to signed-in users (0033).
create policy hub_name_words_select_signed_in on app.hub_name_words for select to app_user using (true);
grant select (hub_id, word) on app.hub_name_words to app_user;

-- Keeps a hub's words with every insert and change of its name, in the statement that writes it.
create function app_private.hub_name_words_sync()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'UPDATE' then
    delete from app.hub_name_words w where w.hub_id = new.id and not (w.word = any (app_private.name_words(new.name)));
  end if;
  insert into app.hub_name_words (hub_id, word)
    select new.id, w from unnest(app_private.name_words(new.name)) w
    on conflict do nothing;
  return null;
end
$$;
create trigger hubs_name_words_insert after insert on app.hubs
  for each row execute function app_private.hub_name_words_sync();
create trigger hubs_name_words_update after update of name on app.hubs
  for each row when (old.name is distinct from new.name) execute function app_private.hub_name_words_sync();

-- Sets every hub's words from the names: the backfill below, and the repair after a bulk load
-- made with triggers off (the scale benchmark calls every app_private.rebuild_*).
create function app_private.rebuild_hub_name_words()
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  lock table app.hub_name_words in exclusive mode;
  truncate app.hub_name_words;
  insert into app.hub_name_words (hub_id, word)
    select h.id, w from app.hubs h, unnest(app_private.name_words(h.name)) w;
end
$$;

select app_private.rebuild_hub_name_words();

-- Down Migration
drop function app_private.rebuild_hub_name_words();
drop trigger hubs_name_words_insert on app.hubs;
drop trigger hubs_name_words_update on app.hubs;
drop function app_private.hub_name_words_sync();
drop table app.hub_name_words;
