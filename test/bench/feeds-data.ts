// The feeds benchmark's data set, generated in bulk SQL (generate_series) as the owner. Size 1x:
// 10,000 users, 100,000 posts, 500,000 interaction events, 100 hubs; 10x is ten times that. The
// per-user shape is the same at every size, so a viewer's sources are alike and only the database
// grows: follows are skewed (most users follow 5-34 users, every 100th follows up to 5,000,
// log-uniform), followed users and authors are skewed towards the first users, hubs 2 and 3 have
// min(10,000, users/2) members and the rest 20-199, 10 % of posts are
// public_hub and 5 % private_locked_hub (targeted to a hub), interactions favour recent posts (half on the newest 10 %)
// (60 % votes, 20 % comments, 10 % reposts, 8 % feed shares, 2 % hub shares).
// The measured viewer kinds are defined by their own counts, the same at both sizes of a run (the
// 1x size's): user 100, the heavy follower, follows exactly `heavyFollows` distinct users (5,000 at
// full scale), drawn with the same skew as everyone's; hub 1, the big hub of the member viewer, has
// exactly `bigHubMembers` members (5,000 at full scale).
// Ids are a function of the row number, so the SQL refers to rows without lookups. Triggers and
// foreign keys are off while loading (session_replication_role = replica); counters are set after,
// and the data set is vacuumed as autovacuum would have done.
import type pg from 'pg';

export interface Size {
  users: number;
  posts: number;
  events: number;
  hubs: number;
  heavyFollows: number;
  bigHubMembers: number;
}

/** The data set of `factor` × 1x at `scale` (1 is full size); the viewer kinds follow the scale only. */
export function sizeOf(factor: number, scale = 1): Size {
  const n = factor * scale;
  const viewerKind = Math.round(5_000 * scale);
  return {
    users: Math.round(10_000 * n),
    posts: Math.round(100_000 * n),
    events: Math.round(500_000 * n),
    hubs: Math.max(4, Math.round(100 * n)),
    heavyFollows: viewerKind,
    bigHubMembers: viewerKind,
  };
}

/** Row number → uuid, one namespace per table (users 1, posts 2, hubs 3). */
export const benchId = (space: number, n: number) => `00000000-0000-4000-800${space}-${n.toString(16).padStart(12, '0')}`;
const sqlId = (space: number, n: string) => `('00000000-0000-4000-800${space}-' || lpad(to_hex(${n}), 12, '0'))::uuid`;

export async function generate(client: pg.ClientBase, size: Size, log: (line: string) => void): Promise<void> {
  const { users: U, posts: P, events: E, hubs: H, heavyFollows, bigHubMembers } = size;
  const step = async (name: string, sql: string) => {
    const started = performance.now();
    await client.query(sql);
    log(`  ${name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  await client.query('set session_replication_role = replica');
  await step(
    `${U} users`,
    `insert into app.users (id, username, full_name, terms_accepted_at, terms_version, media_completed_at, contacts_synced_at)
     select ${sqlId(1, 'n')}, 'bench_' || n, 'Bench User ' || n, now(), 'bench', now(), now() from generate_series(1, ${U}) n`,
  );
  // Post n was created at a time increasing with n over the last year.
  await step(
    `${P} posts`,
    `insert into app.posts (id, author_id, thought_text, slider_text, slider_left_label, slider_right_label, visibility, created_at)
     select ${sqlId(2, 'n')}, ${sqlId(1, `(1 + floor(${U} * random() ^ 2))::int`)}, 'Bench thought ' || n,
            case when n % 2 = 0 then 'Agree?' end, case when n % 2 = 0 then 'No' end, case when n % 2 = 0 then 'Yes' end,
            (case when n % 20 = 0 then 'private_locked_hub' when n % 10 = 0 then 'public_hub' else 'public' end)::app.post_visibility,
            now() - interval '365 days' + n * (interval '365 days' / ${P})
     from generate_series(1, ${P}) n`,
  );
  await step(
    `${H} hubs`,
    `insert into app.hubs (id, name, profile_asset_id, created_by)
     select ${sqlId(3, 'h')}, 'Bench hub ' || h, gen_random_uuid(), ${sqlId(1, '1')} from generate_series(1, ${H}) h`,
  );
  await step(
    'memberships',
    `insert into app.hub_memberships (hub_id, user_id)
     select ${sqlId(3, '1')}, ${sqlId(1, 'u')} from (select u from generate_series(1, ${U}) u order by random() limit ${bigHubMembers}) m;
     insert into app.hub_memberships (hub_id, user_id)
     select ${sqlId(3, 'h')}, ${sqlId(1, `(1 + floor(${U} * random()))::int`)}
     from generate_series(2, ${H}) h
     cross join lateral generate_series(1, case when h <= 3 then least(10000, ${U} / 2) else 20 + (h * 37) % 180 end) m
     on conflict do nothing;
     ${await memberCountsSql(client)}`,
  );
  await step(
    'hub targets',
    `insert into app.post_hubs (post_id, hub_id, kind, added_by, created_at)
     select p.id, ${sqlId(3, `(1 + floor(${H} * random() ^ 2))::int`)}, 'target', p.author_id, p.created_at
     from app.posts p where p.visibility <> 'public'`,
  );
  await step(
    'follows',
    `insert into app.follows (follower_id, followee_id)
     select ${sqlId(1, 'x.f')}, ${sqlId(1, 'x.t')}
     from (select f, (1 + floor(${U} * random() ^ 3))::int as t
           from generate_series(1, ${U}) f
           cross join lateral (select case when f = 100 then 0
                                           when f % 100 = 0 then least(5000, floor(exp(random() * ln(5000))))::int
                                           else 5 + floor(random() * 30)::int end as c) k
           cross join lateral generate_series(1, k.c) g) x
     where x.t <> x.f
     on conflict do nothing;
     insert into app.follows (follower_id, followee_id)
     select ${sqlId(1, '100')}, ${sqlId(1, 'd.t')}
     from (select t, min(g) as first from (select g, (1 + floor(${U} * random() ^ 3))::int as t from generate_series(1, ${20 * heavyFollows}) g) x
           where t <> 100 group by t) d
     order by d.first limit ${heavyFollows};
     ${await followCountsSql(client)}`,
  );
  // Interactions favour recent posts; each happens after its post, before now.
  await step(
    `${E} interaction events`,
    `insert into app.activity_events (actor_id, post_id, kind, hub_id, created_at)
     select ${sqlId(1, `(1 + floor(${U} * random() ^ 2))::int`)}, ${sqlId(2, 'x.n')}, x.kind::app.activity_kind,
            case when x.kind = 'post_shared_to_hub' then ${sqlId(3, `(1 + floor(${H} * random() ^ 2))::int`)} end,
            x.at + random() * (now() - x.at)
     from (
       select n, now() - interval '365 days' + n * (interval '365 days' / ${P}) as at,
              case when r < 0.6 or (r >= 0.98 and n % 20 = 0) then 'post_voted' when r < 0.8 then 'post_commented'
                   when r < 0.9 then 'post_reposted' when r < 0.98 then 'post_shared_to_feed' else 'post_shared_to_hub' end as kind
       from (select case when random() < 0.5 then 1 + floor(${P} * random())::int else ${P} - floor(${P} * 0.1 * random())::int end as n,
                    random() as r
             from generate_series(1, ${E})) g
     ) x`,
  );
  await step('default feed users', `insert into app.default_feed_users (user_id) select ${sqlId(1, 'n')} from generate_series(1, 20) n`);
  await client.query('set session_replication_role = origin');
  // As autovacuum leaves append-mostly tables in production: statistics current, pages all-visible
  // (index-only scans read the heap only for pages changed since).
  await step('vacuum analyze', 'vacuum analyze');
}

// Counters as the schema keeps them: slot counters set from the rows (app_private.rebuild_counters,
// run once the follows are in), or the older counter column and table.
async function countersKept(client: pg.ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ kept: boolean }>(`select to_regprocedure('app_private.rebuild_counters()') is not null as kept`);
  return rows[0]?.kept ?? false;
}

async function memberCountsSql(client: pg.ClientBase): Promise<string> {
  return (await countersKept(client))
    ? 'select 1'
    : 'update app.hubs h set member_count = (select count(*) from app.hub_memberships m where m.hub_id = h.id)';
}

async function followCountsSql(client: pg.ClientBase): Promise<string> {
  return (await countersKept(client))
    ? 'select app_private.rebuild_counters()'
    : `insert into app.follow_counts (user_id, followers, following)
       select u.id, (select count(*) from app.follows f where f.followee_id = u.id), (select count(*) from app.follows f where f.follower_id = u.id)
       from app.users u`;
}
