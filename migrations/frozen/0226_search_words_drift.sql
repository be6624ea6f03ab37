-- Up Migration
-- The reconciliation check of the search words (0223, 0225): every user and hub whose kept words
-- differ from the words of its name now. No rows: the words agree with the names. A full scan of
-- users and hubs: for a check or a repair (app_private.rebuild_user_name_words,
-- app_private.rebuild_hub_name_words), never for a request.
create function app_private.search_word_drift()
  returns table (kind text, id uuid, kept text[], named text[])
  language sql stable
  set search_path = pg_catalog
  as $$
  with kept_users as (select w.user_id as id, array_agg(w.word order by w.word) as words from app.user_name_words w group by w.user_id),
       named_users as (select u.id, (select array_agg(x order by x collate "C") from unnest(app_private.name_words(u.full_name)) x) as words
                       from app.users u where u.full_name is not null),
       kept_hubs as (select w.hub_id as id, array_agg(w.word order by w.word) as words from app.hub_name_words w group by w.hub_id),
       named_hubs as (select h.id, (select array_agg(x order by x collate "C") from unnest(app_private.name_words(h.name)) x) as words
                      from app.hubs h)
  select 'user', coalesce(k.id, n.id), k.words::text[], n.words::text[]
  from kept_users k full join named_users n on n.id = k.id
  where k.words::text[] is distinct from n.words::text[]
  union all
  select 'hub', coalesce(k.id, n.id), k.words::text[], n.words::text[]
  from kept_hubs k full join named_hubs n on n.id = k.id
  where k.words::text[] is distinct from n.words::text[]
$$;

-- Down Migration
drop function app_private.search_word_drift();
