-- Up Migration
-- People search (GET /search/users) tested every user row with app.user_matches and sorted all
-- matches: 1,000,000 users, a full scan for a name nobody has and a sort of every "anna" for one
-- that many have. Name matches now come from an index of name words, one row per distinct word of
-- a user's name (as app.name_words_match splits them: app.search_text, split at every character
-- that is not a letter or digit), read in (word, user_id) order: a page reads about a page of
-- words, whatever the number of users. Handle matches read the username index in its own order
-- (users_username_prefix, text_pattern_ops). Results: the exact handle, then handle prefixes by
-- handle, then name matches by matched word and user id (server/search/routes.ts).

-- The distinct words of a name, normalised as queries are (app.search_text).
create function app_private.name_words(p_name text)
  returns text[]
  language sql immutable parallel safe
  set search_path = pg_catalog
  as $$
  select coalesce(array_agg(distinct w.word), '{}')
  from regexp_split_to_table(app.search_text(p_name), '[^[:alnum:]]+') w (word)
  where w.word <> ''
$$;

-- One row per word of a user's name. `word` sorts bytewise (collation "C"), so the index serves a
-- prefix range (`word like 'ann%'`) in its order. Written only by the trigger below.
create table app.user_name_words (
  user_id uuid not null references app.users (id) on delete cascade,
  word text collate "C" not null,
  primary key (user_id, word)
);
create index user_name_words_word on app.user_name_words (word, user_id);
comment on table app.user_name_words is
  'The words of each user''s full_name as people search matches them (0223): kept by a trigger on app.users, read by GET /search/users.';

alter table app.user_name_words enable row level security;
alter table app.user_name_words force row level security;
-- A user's name words are as public as the name they come from: a row is visible exactly when its
-- user is (the users policy decides, through the subquery, for the querying role). A scalar
-- subquery, not exists (...): the planner keeps it as one primary-key probe per word read, where it
-- would turn exists into a join that reads every user before the first word.
create policy user_name_words_select on app.user_name_words for select to app_anonymous
  using (user_id = (select u.id from app.users u where u.id = user_name_words.user_id));
grant select (user_id, word) on app.user_name_words to app_anonymous;

-- Keeps a user's words with every insert and every change of full_name (by the user, internal
-- tooling or an account merge), in the statement that writes the name.
create function app_private.user_name_words_sync()
  returns trigger
  language plpgsql security definer
  set search_path = pg_catalog
  as $$
begin
  if tg_op = 'UPDATE' then
    delete from app.user_name_words w where w.user_id = new.id and not (w.word = any (app_private.name_words(new.full_name)));
  end if;
  insert into app.user_name_words (user_id, word)
    select new.id, w from unnest(app_private.name_words(new.full_name)) w
    on conflict do nothing;
  return null;
end
$$;
create trigger users_name_words_insert after insert on app.users
  for each row when (new.full_name is not null) execute function app_private.user_name_words_sync();
create trigger users_name_words_update after update of full_name on app.users
  for each row when (old.full_name is distinct from new.full_name) execute function app_private.user_name_words_sync();

-- Sets every user's words from the names: the backfill below, and the repair after a bulk load made
-- with triggers off (the scale benchmark calls every app_private.rebuild_*).
create function app_private.rebuild_user_name_words()
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  lock table app.user_name_words in exclusive mode;
  truncate app.user_name_words;
  insert into app.user_name_words (user_id, word)
    select u.id, w from app.users u, unnest(app_private.name_words(u.full_name)) w
    where u.full_name is not null;
end
$$;

select app_private.rebuild_user_name_words();

-- Down Migration
drop function app_private.rebuild_user_name_words();
drop trigger users_name_words_insert on app.users;
drop trigger users_name_words_update on app.users;
drop function app_private.user_name_words_sync();
drop table app.user_name_words;
drop function app_private.name_words(text);
