-- Up Migration
-- People search (contract section 5): handle prefix and name words, case- and
-- accent-insensitive, served by indexes. Phone numbers are not searchable: they are not in
-- app.users at all.
create extension if not exists unaccent with schema public;
create extension if not exists pg_trgm with schema public;

-- Lowercase, unaccented text. Immutable so that indexes can be built on it (the unaccent
-- dictionary is named explicitly, which makes the result independent of search_path).
create function app.search_text(p_text text)
  returns text
  language sql immutable parallel safe strict
  as $$ select lower(public.unaccent('public.unaccent'::regdictionary, p_text)) $$;

-- Whether a word of a name starts with a normalised query (app.search_text of what was typed).
-- Inlined by the planner, so a trigram index on app.search_text(name) serves it.
create function app.name_words_match(p_name text, p_query text)
  returns boolean
  language sql immutable parallel safe
  as $$
  select app.search_text(p_name) ~ ('(^|[^[:alnum:]])' || regexp_replace(p_query, '([^[:alnum:][:space:]])', '\\\1', 'g'))
$$;

-- Whether a user matches a normalised query (no leading @): the handle starts with it, or a word
-- of the name does.
create function app.user_matches(p_username text, p_full_name text, p_query text)
  returns boolean
  language sql immutable parallel safe
  as $$
  select p_username like replace(replace(replace(p_query, '\', '\\'), '%', '\%'), '_', '\_') || '%'
      or app.name_words_match(p_full_name, p_query)
$$;

create index users_username_prefix on app.users (username text_pattern_ops);
create index users_full_name_search on app.users using gin (app.search_text(full_name) public.gin_trgm_ops);

grant execute on function app.search_text(text), app.name_words_match(text, text), app.user_matches(text, text, text) to app_anonymous, app_admin;
-- Extension functions follow this project's default of no PUBLIC execute (0002); the index
-- expressions run unaccent for whoever writes a name (API roles and internal tooling).
grant execute on function public.unaccent(regdictionary, text) to app_anonymous, app_admin;

-- Down Migration
drop index app.users_full_name_search;
drop index app.users_username_prefix;
drop function app.user_matches(text, text, text);
drop function app.name_words_match(text, text);
drop function app.search_text(text);
