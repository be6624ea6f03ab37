// /search: people (contract section 5) and hubs (spec 4.6).
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { pageQuery, pageSchema, toPage } from '../http/paging.ts';
import { searchQuery, type UserListRow } from '../users/list-item.ts';

const tag = 'Search';

const personResult = z.object({
  id: z.string(),
  name: z.string().nullable(),
  username: z.string().nullable(),
  profilePhotoUrl: z.string().nullable(),
  bio: z.string().nullable(),
  viewerFollows: z.boolean().optional(),
}).meta({ id: 'PersonSearchResult' });

export const searchEndpoints = [
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
    query: pageQuery(50, ['int', 'text']).extend({ q: searchQuery.default('') }),
    response: pageSchema(personResult),
    async handler({ query, tx, viewer, services: { storage } }) {
      if (query.q === '') return { items: [], nextCursor: null };
      const [afterRank, afterUsername] = (query.cursor ?? [-1, '']) as [number, string];
      const { rows } = await tx.query<UserListRow & { rank: number }>(
        `select * from (
           select u.id, u.username, u.full_name, u.bio, a.object_key as photo_key, app.viewer_follows(u.id) as viewer_follows,
                  case when u.username = app.search_text($1) then 0 when u.username like app.search_text($1) || '%' then 1 else 2 end as rank
           from app.users u
           left join app.assets a on a.id = u.profile_asset_id
           where u.username is not null and app.user_matches(u.username, u.full_name, app.search_text($1))
         ) matches
         where (rank, username) > ($2::int, $3::text)
         order by rank, username
         limit $4`,
        [query.q, afterRank, afterUsername, query.limit + 1],
      );
      const page = toPage(rows, query.limit, (row) => [row.rank, row.username as string], (row) => row);
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
    description: 'Case- and accent-insensitive. isRecommended is an admin-set flag; activeUsers24h counts members active in the last 24 hours.',
    auth: 'bearer',
    level: 4,
    query: pageQuery(50, ['text', 'id']).extend({ q: searchQuery.default('') }),
    response: pageSchema(z.object({ id: z.string(), name: z.string(), activeUsers24h: z.number().int(), isRecommended: z.boolean() })),
    async handler({ query, tx }) {
      const [afterName, afterId] = (query.cursor ?? [null, null]) as [string | null, string | null];
      const { rows } = await tx.query<{ id: string; name: string; active_users: number; is_recommended: boolean }>(
        `select h.id, h.name, app.hub_active_users(h.id) as active_users, h.is_recommended
         from app.hubs h
         where (case when $1 = '' then h.is_recommended else app.name_words_match(h.name, app.search_text($1)) end)
           and ($2::text is null or (h.name, h.id) > ($2, $3::uuid))
         order by h.name, h.id
         limit $4`,
        [query.q, afterName, afterId, query.limit + 1],
      );
      return toPage(rows, query.limit, (row) => [row.name, row.id], (row) => ({
        id: row.id,
        name: row.name,
        activeUsers24h: row.active_users,
        isRecommended: row.is_recommended,
      }));
    },
  }),
];
