// /search: people (contract section 5) and hubs (spec 4.6).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { activeUsers24h } from '../hubs/shape.ts';
import { searchQuery, type UserListRow } from '../shapes/user-list-item.ts';
import { nullableText, text, textMax } from '../http/text.ts';
import { imageKeySql } from '../uploads/images.ts';
import { levels } from '../http/access-levels.ts';

const tag = 'Search';

// People search: $1 the query (searchQuery's form), $2..$4 the position after which the page starts
// (rank, key, user id; rank -1 for the first page), $5 the rows to read. Three ranks, each read in
// the order of an index and cut at $5 rows, so a page reads about a page of rows whatever the number
// of users (docs/performance.md): 0 the exact handle (users_username_key), 1 other handles with the
// query as prefix, by handle (users_username_prefix: text_pattern_ops, hence ~<~ and ~>~, bytewise
// as collation "C"; the range is spelled out: the table's policy runs before any condition that is
// not leakproof, like is not, so like alone would read the whole index), 2 users with a name word
// starting with the query's first word, by that word and user id, each user once (at the first of
// their words that matches), without those of rank 0 and 1, rechecked with app.name_words_match
// (which a query of several words needs: its first word must then be a whole word of the name, and
// the rest follow): app.user_name_matches (db/sql/users.sql), which walks the words' index from a
// cursor whatever the statistics say a word holds. The expressions of $1 are immutable, so the
// planner folds them into constants (a request's statement is planned with its parameters), which
// the index ranges need.
const handlePrefix = `replace(replace(replace(app.search_text($1), '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;
const personColumns = `u.id, u.username, u.full_name, u.bio, ${imageKeySql('a')} as photo_key, app.viewer_follows(u.id) as viewer_follows`;
export const peopleSearchSql = `
  select * from (
    (select ${personColumns}, 0 as rank, u.username::text collate "C" as key
     from app.users u
     left join app.assets a on a.id = u.profile_asset_id
     where u.username = app.search_text($1) and $2::int < 0)
    union all
    (select ${personColumns}, 1, u.username collate "C"
     from app.users u
     left join app.assets a on a.id = u.profile_asset_id
     where u.username ~>=~ app.search_text($1) and u.username ~<~ (app.search_text($1) || chr(1114111))
       and u.username like ${handlePrefix} and u.username <> app.search_text($1)
       and ($2::int < 1 or ($2::int = 1 and u.username ~>~ $3::text))
     order by u.username using ~<~
     limit $5)
    union all
    (select w.user_id as id, w.username, w.full_name, w.bio, ${imageKeySql('a')} as photo_key, app.viewer_follows(w.user_id) as viewer_follows, 2,
            w.word collate "C"
     from app.user_name_matches($1, case when $2::int = 2 then $3::text end, case when $2::int = 2 then $4::uuid end, $5::int) w
     left join app.assets a on a.id = w.profile_asset_id
     where $2::int <= 2
     order by w.word collate "C", w.user_id
     limit $5)
  ) found
  order by found.rank, found.key, found.id
  limit $5`;

// Hubs: the recommended ones by name (hubs_recommended), or those with a name word starting with the
// query's first word, by that word and hub id, each hub once, rechecked with app.name_words_match, as
// people search's rank 2 does (app.hub_name_matches, db/sql/hubs/hubs.sql, from a cursor in the order of
// the words' index). $1 the query, $2 and $3 the position after which the page starts (word or
// name, hub id; null for the first), $4 the rows.
const recommendedHubsSql = `
  select h.id, h.name, h.name as key, app.hub_active_users(h.id) as active_users, h.is_recommended
  from app.hubs h
  where $1::text = '' and h.is_recommended and ($2::text is null or (h.name, h.id) > ($2, $3::uuid))
  order by h.name, h.id
  limit $4`;
export const hubSearchSql = `
  select h.hub_id as id, h.name, h.word collate "C" as key, app.hub_active_users(h.hub_id) as active_users, h.is_recommended
  from app.hub_name_matches($1, $2::text, $3::uuid, $4::int) h
  order by h.word collate "C", h.hub_id`;

const personResult = z
  .object({
    id: z.string(),
    name: nullableText(textMax.name),
    username: nullableText(textMax.handle),
    profilePhotoUrl: nullableText(textMax.url),
    bio: nullableText(textMax.bio),
    viewerFollows: z.boolean().optional(),
  })
  .meta({ id: 'PersonSearchResult' });

export const endpoints = [
  endpoint({
    method: 'get',
    path: '/search/users',
    tag,
    summary: 'Find people by handle prefix or name words',
    description:
      'Case- and accent-insensitive; a leading @ is ignored; an empty q finds nobody. Results expose only id, name, username, ' +
      'profilePhotoUrl and bio, plus viewerFollows with a token. Exact handle first, then handle prefixes, then name matches. ' +
      'Phone numbers are never searched.',
    auth: 'optional',
    query: pageQuery(50, ['int', 'text', 'id']).extend({ q: searchQuery.default('') }),
    response: pageSchema(personResult),
    async handler({ query, tx, viewer, services: { storage } }) {
      if (query.q === '') return { items: [], nextCursor: null };
      const [afterRank, afterKey, afterId] = (query.cursor ?? [-1, '', null]) as [number, string, string | null];
      const { rows } = await tx.query<UserListRow & { rank: number; key: string }>(peopleSearchSql, [
        query.q,
        afterRank,
        afterKey,
        afterId,
        query.limit + 1,
      ]);
      const page = toPage(
        rows,
        query.limit,
        (row) => [row.rank, row.key, row.id],
        (row) => row,
      );
      return {
        items: await Promise.all(
          page.items.map(async (row) => ({
            id: row.id,
            name: row.full_name,
            username: row.username,
            profilePhotoUrl: await storage.photoUrl(row.photo_key),
            bio: row.bio,
            ...(viewer.userId ? { viewerFollows: row.id !== viewer.userId && row.viewer_follows } : {}),
          })),
        ),
        nextCursor: page.nextCursor,
      };
    },
  }),

  endpoint({
    method: 'get',
    path: '/search/hubs',
    tag,
    summary: 'Find hubs by name words; an empty q lists recommended hubs',
    description:
      'Case- and accent-insensitive; matches come by the matched name word, then id. isRecommended is an admin-set flag; activeUsers24h counts members active in the last 24 hours, up to 1,000 (1,000 means at least 1,000).',
    auth: 'bearer',
    level: levels.hubReady,
    query: pageQuery(50, ['text', 'id']).extend({ q: searchQuery.default('') }),
    response: pageSchema(
      z.object({ id: z.string(), name: text(textMax.hubName), activeUsers24h: activeUsers24h(), isRecommended: z.boolean() }),
    ),
    async handler({ query, tx }) {
      const [afterName, afterId] = (query.cursor ?? [null, null]) as [string | null, string | null];
      const { rows } = await tx.query<{ id: string; name: string; key: string; active_users: number; is_recommended: boolean }>(
        query.q === '' ? recommendedHubsSql : hubSearchSql,
        [query.q, afterName, afterId, query.limit + 1],
      );
      return toPage(
        rows,
        query.limit,
        (row) => [row.key, row.id],
        (row) => ({
          id: row.id,
          name: row.name,
          activeUsers24h: row.active_users,
          isRecommended: row.is_recommended,
        }),
      );
    },
  }),
];
