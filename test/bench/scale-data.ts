// The scale benchmark's data set (test/bench/scale.ts), generated in bulk SQL as the database owner.
// One world per size: `n` rows behind every hot dimension (1,000 or 100,000), `users` people in all
// (1,000,000 in the large world) and `votes` votes received by one author (1,000 or 1,000,000).
// Each dimension has its own subject, so a line measures one collection growing while the rest of
// the request stays the same:
//   user 1 wrote post P1 with n comments and post P2 whose root comment has n replies; user 2 wrote
//   10 slider posts with `votes` votes in all; user 3 wrote n posts; user 4 has n followers; user 5
//   follows n users; hub 1 has n members (user 6 its super_admin, users 11 and 12 admins), n pending
//   invitations, n pending join requests, n members active in the last day, n posts targeted to it
//   (each with its discussion), a discussion with n messages whose first message has n replies;
//   user 7 saved n posts and n discussions; user 8 belongs to n other hubs (hubs 2 .. n+1); user 10
//   wrote post P3 with n reposts; post P4 was shared into every hub; user 9 is the viewer who
//   belongs to hub 1 and hubs 2 and 3 and follows nobody.
// Rows are written as the write paths write them, with their notifications, activity events, vote
// counters and hub discussions; the counters and other derived state are set from the rows at the
// end (see `deriveState`), as the write paths would have left them. Ids are a function of the row
// number (benchId), so the SQL refers to rows without lookups. Triggers and foreign keys are off
// while loading (session_replication_role = replica).
import type pg from 'pg';

export interface ScaleSize {
  name: string;
  /**
   * spread (default): each subject holds its dimension's rows beside the rest of the population
   * (1,000,000 users in the large world). hot: the young deployment's skew, where one key holds
   * every row of its column: one author wrote every comment and every discussion message, the
   * star's followers are every follow but a page of the fan's, and every user's name has the word
   * "Follower"; users are only those the dimensions need.
   */
  shape?: 'spread' | 'hot';
  /** Rows behind every hot dimension. */
  n: number;
  /** People in all (at least 2n + 20). */
  users: number;
  /** Votes received by the votes author (over 10 posts). */
  votes: number;
}

export function sizes(scale: number, shape: 'spread' | 'hot' = 'spread'): [ScaleSize, ScaleSize] {
  const small = Math.round(1_000 * scale);
  const large = Math.round(100_000 * scale);
  if (shape === 'hot') {
    return [
      { name: 'small-hot', shape, n: small, users: 2 * small + 100, votes: small },
      { name: 'large-hot', shape, n: large, users: 2 * large + 100, votes: large },
    ];
  }
  return [
    { name: 'small', n: small, users: 2 * small + 100, votes: small },
    { name: 'large', n: large, users: Math.max(2 * large + 100, Math.round(1_000_000 * scale)), votes: Math.round(1_000_000 * scale) },
  ];
}

/** The follows of the fan in a world: n, or one page in the hot shape (the star has every other follow). */
export const fanFollows = (size: ScaleSize) => (size.shape === 'hot' ? 20 : size.n);
/** A word of every user's name in the hot shape (none in the spread one). */
export const hotNameWord = 'follower';

/** Row number → uuid, one namespace per table. */
export const space = { user: 1, post: 2, hub: 3, comment: 4, discussion: 5, message: 6, invitation: 7, request: 8, session: 9 } as const;
export const benchId = (s: number, n: number) => `00000000-0000-4000-800${s.toString(16)}-${n.toString(16).padStart(12, '0')}`;
const sqlId = (s: number, n: string) => `('00000000-0000-4000-800${s.toString(16)}-' || lpad(to_hex(${n}), 12, '0'))::uuid`;

/** The subjects of the lines, by role. */
export const subject = {
  commentAuthor: 1,
  votesAuthor: 2,
  prolificAuthor: 3,
  star: 4,
  fan: 5,
  hubOwner: 6,
  saver: 7,
  joiner: 8,
  viewer: 9,
  originalAuthor: 10,
  rootCommenter: 13,
  /** Posts. */
  commentedPost: 1,
  repliedPost: 2,
  repostedPost: 3,
  sharedPost: 4,
  /** The root comment of the replied post; the discussion with many messages and its first message. */
  rootComment: 1,
  /** Ranges of generated rows (row numbers). */
  prolificPosts: 1_000_000,
  reposts: 2_000_000,
  hubPosts: 3_000_000,
  votesPosts: 4_000_000,
  replies: 1_000_000,
  comments: 2_000_000,
  sharedDiscussions: 4_000_000,
  replyMessages: 1_000_000,
  hub: 1,
  /** The first user of the population (1-20 are subjects). */
  firstPerson: 21,
} as const;

export const inviteToken = 'bench-scale-invite-link-token';
/** First names and last names: a name word prefix matches about 1 person in 40. */
const firstNames = [
  'Anna',
  'Bruno',
  'Chloé',
  'Dmitri',
  'Elena',
  'Farid',
  'Greta',
  'Hugo',
  'Inés',
  'Jonas',
  'Kaito',
  'Léa',
  'Mateo',
  'Nadia',
  'Oskar',
  'Priya',
  'Quentin',
  'Rosa',
  'Sven',
  'Tomás',
  'Uma',
  'Viktor',
  'Wanda',
  'Xavier',
  'Yara',
  'Zoë',
  'Amir',
  'Birgit',
  'Carlos',
  'Dalia',
  'Emil',
  'Fatima',
  'Gustav',
  'Hana',
  'Igor',
  'Julia',
  'Karim',
  'Lotte',
  'Malik',
  'Noor',
];
const lastNames = [
  'Almeida',
  'Berg',
  'Castro',
  'Dubois',
  'Eriksen',
  'Fischer',
  'García',
  'Hansen',
  'Ibáñez',
  'Jansen',
  'Kowalski',
  'Larsen',
  'Moreau',
  'Novak',
  'Olsen',
  'Petrov',
  'Quinn',
  'Rossi',
  'Schmidt',
  'Tanaka',
  'Ueda',
  'Vargas',
  'Weber',
  'Xu',
  'Yilmaz',
  'Zimmermann',
  'Aalto',
  'Brandt',
  'Costa',
  'Dahl',
  'Engel',
  'Fontaine',
  'Gallo',
  'Haas',
  'Iversen',
  'Jovanović',
  'Keller',
  'Lindqvist',
  'Mäkinen',
  'Nieminen',
];
const words = [
  'Chess',
  'Garden',
  'Cycling',
  'Jazz',
  'Poetry',
  'Hiking',
  'Cinema',
  'Robotics',
  'Baking',
  'Climbing',
  'Opera',
  'Startup',
  'Running',
  'Knitting',
  'Astronomy',
  'Photography',
  'Sailing',
  'Debate',
  'Wine',
  'Coding',
];
const sqlArray = (values: string[]) => `array[${values.map((v) => `'${v}'`).join(', ')}]`;

/** Full name of person i (also used by the benchmark to pick search terms). */
export const fullNameSql = (i: string) =>
  `(${sqlArray(firstNames)})[1 + (${i} * 7) % ${firstNames.length}] || ' ' || (${sqlArray(lastNames)})[1 + (${i} * 11) % ${lastNames.length}]`;
export const hubWords = words;

/** A live session for every subject user (1-20): the session id of each user id. */
export async function subjectSessions(client: pg.ClientBase): Promise<Map<string, string>> {
  const { rows } = await client.query<{ user_id: string; id: string }>(
    `insert into app.sessions (user_id, expires_at) select ${sqlId(space.user, 'i')}, now() + interval '1 day'
     from generate_series(1, 20) i returning user_id, id`,
  );
  return new Map(rows.map((row) => [row.user_id, row.id]));
}

export async function generate(client: pg.ClientBase, size: ScaleSize, log: (line: string) => void): Promise<void> {
  const { n, users: U, votes: V } = size;
  const s = subject;
  const hot = size.shape === 'hot';
  const person = (expr: string) => sqlId(space.user, expr);
  const step = async (name: string, sql: string) => {
    const started = performance.now();
    await client.query(sql);
    log(`  ${name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  const hub = sqlId(space.hub, String(s.hub));
  const votesPerPost = Math.max(1, Math.floor(V / 10));
  await client.query('set session_replication_role = replica');
  await step(
    `${U} users with phones`,
    `insert into app.users (id, username, full_name, terms_accepted_at, terms_version, media_completed_at, contacts_synced_at, created_at)
     select ${person('i')}, 'user' || i, ${hot ? `'Follower ' || ` : ''}${fullNameSql('i')}, now(), 'bench', now(), now(), now() - interval '400 days'
     from generate_series(1, ${U}) i;
     insert into app.phone_identities (user_id, phone_e164) select ${person('i')}, '+1555' || lpad(i::text, 7, '0') from generate_series(1, ${U}) i;
     insert into app.upload_intents (id, owner_id, purpose, content_type, content_length, object_key, expires_at, completed_at)
       values ('00000000-0000-4000-800c-000000000001', ${person(String(s.hubOwner))}, 'hub_photo', 'image/png', 1, 'bench/hub-photo', now(), now());
     insert into app.assets (id, upload_id, owner_id, purpose, content_type, size, checksum, object_key)
       values ('00000000-0000-4000-800b-000000000001', '00000000-0000-4000-800c-000000000001', ${person(String(s.hubOwner))}, 'hub_photo',
               'image/png', 1, repeat('0', 64), 'bench/hub-photo')`,
  );
  // Hub 1 and hubs 2 .. n+1 (user 8 made those and is their super_admin); every 20th recommended.
  await step(
    `${n + 1} hubs`,
    `insert into app.hubs (id, name, profile_asset_id, created_by, is_recommended, created_at, last_activity_at)
     select ${sqlId(space.hub, 'h')}, (${sqlArray(words)})[1 + h % ${words.length}] || ' club ' || h, '00000000-0000-4000-800b-000000000001',
            case when h = 1 then ${person(String(s.hubOwner))} else ${person(String(s.joiner))} end, h % 20 = 0,
            now() - interval '300 days', now() - interval '300 days' + h * (interval '290 days' / ${n + 1})
     from generate_series(1, ${n + 1}) h;
     insert into app.hub_memberships (hub_id, user_id, role, joined_at)
     select ${sqlId(space.hub, 'h')}, ${person(String(s.joiner))}, 'super_admin', now() - interval '300 days' from generate_series(2, ${n + 1}) h;
     insert into app.hub_memberships (hub_id, user_id, role, joined_at)
     select ${sqlId(space.hub, 'h')}, ${person(String(s.viewer))}, 'member', now() - interval '200 days' from generate_series(2, 3) h`,
  );
  // Hub 1: its staff, the saver and the viewer, then n members joining over 200 days; a tenth of
  // them with a hub display name; all of them active in the last day.
  await step(
    `hub 1: ${n} members, invitations and join requests`,
    `insert into app.hub_memberships (hub_id, user_id, role, joined_at)
     values (${hub}, ${person(String(s.hubOwner))}, 'super_admin', now() - interval '300 days'),
            (${hub}, ${person('11')}, 'admin', now() - interval '299 days'),
            (${hub}, ${person('12')}, 'admin', now() - interval '298 days'),
            (${hub}, ${person(String(s.saver))}, 'member', now() - interval '297 days'),
            (${hub}, ${person(String(s.viewer))}, 'member', now() - interval '296 days');
     insert into app.hub_memberships (hub_id, user_id, role, joined_at)
     select ${hub}, ${person(`${s.firstPerson - 1} + i`)}, 'member', now() - interval '200 days' + i * (interval '199 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.hub_profiles (user_id, display_name)
     select ${person(`${s.firstPerson - 1} + i`)}, 'Alias ' || i from generate_series(1, ${n}) i where i % 10 = 0;
     insert into app.hub_activity (hub_id, user_id, last_active_at)
     select m.hub_id, m.user_id, now() - (row_number() over (order by m.user_id) % 1380) * interval '1 minute'
     from app.hub_memberships m where m.hub_id = ${hub};
     insert into app.hub_invitations (id, hub_id, invited_by, phone_e164, requires_admin_approval, created_at, expires_at)
     select ${sqlId(space.invitation, 'i')}, ${hub}, ${person(String(s.hubOwner))}, '+1666' || lpad(i::text, 7, '0'), false,
            now() - interval '6 days' + i * (interval '6 days' / ${n}), now() + interval '1 day' + i * (interval '6 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.hub_invite_links (id, hub_id, token, created_by, expires_at)
       values ('00000000-0000-4000-800a-000000000001', ${hub}, '${inviteToken}', ${person(String(s.hubOwner))}, now() + interval '7 days');
     insert into app.hub_join_requests (id, hub_id, user_id, source, invite_link_id, created_at)
     select ${sqlId(space.request, 'i')}, ${hub}, ${person(`${s.firstPerson - 1 + n} + i`)}, 'invite_link', '00000000-0000-4000-800a-000000000001',
            now() - interval '6 days' + i * (interval '6 days' / ${n})
     from generate_series(1, ${n}) i`,
  );
  // Posts of the subjects. Post n of a range was written at a time increasing with n.
  await step(
    `posts: ${n} by one author, ${n} reposts of one post, ${n} targeted to hub 1, 10 voted`,
    `insert into app.posts (id, author_id, thought_text, slider_text, slider_left_label, slider_right_label, visibility, created_at)
     values (${sqlId(space.post, String(s.commentedPost))}, ${person(String(s.commentAuthor))}, 'A post with many comments', null, null, null, 'public', now() - interval '60 days'),
            (${sqlId(space.post, String(s.repliedPost))}, ${person(String(s.commentAuthor))}, 'A post with a long thread', null, null, null, 'public', now() - interval '60 days'),
            (${sqlId(space.post, String(s.repostedPost))}, ${person(String(s.originalAuthor))}, 'A post reposted many times', 'Agree?', 'No', 'Yes', 'public', now() - interval '60 days'),
            (${sqlId(space.post, String(s.sharedPost))}, ${person(String(s.hubOwner))}, 'A post shared into every hub', 'Agree?', 'No', 'Yes', 'public', now() - interval '60 days');
     insert into app.posts (id, author_id, thought_text, visibility, created_at)
     select ${sqlId(space.post, `${s.prolificPosts} + i`)}, ${person(String(s.prolificAuthor))}, 'Post ' || i, 'public',
            now() - interval '365 days' + i * (interval '364 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.posts (id, author_id, thought_text, visibility, source_post_id, created_at)
     select ${sqlId(space.post, `${s.reposts} + i`)}, ${person(`${s.firstPerson} + i % ${U - s.firstPerson}`)}, 'Repost ' || i, 'public',
            ${sqlId(space.post, String(s.repostedPost))}, now() - interval '59 days' + i * (interval '58 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.posts (id, author_id, thought_text, visibility, created_at)
     select ${sqlId(space.post, `${s.hubPosts} + i`)}, ${person(`${s.firstPerson - 1} + i`)}, 'Hub post ' || i, 'public_hub',
            now() - interval '199 days' + i * (interval '198 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.post_hubs (post_id, hub_id, kind, added_by, created_at)
     select p.id, ${hub}, 'target', p.author_id, p.created_at from app.posts p
     where p.id between ${sqlId(space.post, `${s.hubPosts} + 1`)} and ${sqlId(space.post, `${s.hubPosts} + ${n}`)};
     insert into app.hub_discussions (id, hub_id, post_id, created_at, last_activity_at)
     select ${sqlId(space.discussion, `${s.hubPosts} + i`)}, ${hub}, ${sqlId(space.post, `${s.hubPosts} + i`)},
            now() - interval '199 days' + i * (interval '198 days' / ${n}), now() - interval '199 days' + i * (interval '198 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.posts (id, author_id, slider_text, slider_left_label, slider_right_label, visibility, created_at)
     select ${sqlId(space.post, `${s.votesPosts} + i`)}, ${person(String(s.votesAuthor))}, 'Vote ' || i, 'No', 'Yes', 'public', now() - interval '30 days' + i * interval '1 day'
     from generate_series(1, 10) i;
     insert into app.notifications (recipient_id, type, actor_id, post_id, created_at)
     select ${person(String(s.originalAuthor))}, 'post_reposted', p.author_id, p.id, p.created_at from app.posts p
     where p.source_post_id = ${sqlId(space.post, String(s.repostedPost))};
     insert into app.activity_events (actor_id, post_id, kind, created_at)
     select p.author_id, p.source_post_id, 'post_reposted', p.created_at from app.posts p
     where p.source_post_id = ${sqlId(space.post, String(s.repostedPost))}`,
  );
  // Post 4 shared into hub 1 and every hub of the joiner, with a discussion per placement.
  await step(
    `a post shared into ${n + 1} hubs`,
    `insert into app.post_hubs (post_id, hub_id, kind, added_by, created_at)
     select ${sqlId(space.post, String(s.sharedPost))}, ${sqlId(space.hub, 'h')}, 'share', ${person(String(s.hubOwner))}, now() - interval '59 days'
     from generate_series(1, ${n + 1}) h;
     insert into app.hub_discussions (id, hub_id, post_id, created_at, last_activity_at)
     select ${sqlId(space.discussion, `${s.sharedDiscussions} + h`)}, ${sqlId(space.hub, 'h')}, ${sqlId(space.post, String(s.sharedPost))},
            now() - interval '59 days', now() - interval '59 days'
     from generate_series(1, ${n + 1}) h;
     insert into app.activity_events (actor_id, post_id, kind, hub_id, created_at)
     select ${person(String(s.hubOwner))}, ${sqlId(space.post, String(s.sharedPost))}, 'post_shared_to_hub', ${sqlId(space.hub, 'h')}, now() - interval '59 days'
     from generate_series(1, ${n + 1}) h`,
  );
  // Vote counters of every slider post and scope, as the post and placement triggers seed them.
  await step(
    'vote counters',
    `select app_private.seed_vote_counters(p.id, null) from app.posts p where p.slider_text is not null;
     select app_private.seed_vote_counters(ph.post_id, ph.hub_id) from app.post_hubs ph join app.posts p on p.id = ph.post_id where p.slider_text is not null`,
  );
  // Votes on the votes author's 10 posts: receipts, the global scope receipt, the author's
  // post_voted row (no actor), the voter's activity event, and the counts in the counters.
  await step(
    `${votesPerPost * 10} votes received`,
    `insert into app.vote_receipts (post_id, user_id, voted_at)
     select ${sqlId(space.post, `${s.votesPosts} + k`)}, ${person(`${s.firstPerson - 1} + v`)}, now() - interval '20 days' + v * (interval '19 days' / ${votesPerPost})
     from generate_series(1, 10) k, generate_series(1, ${votesPerPost}) v;
     insert into app.vote_scope_receipts (post_id, user_id, hub_id) select post_id, user_id, null from app.vote_receipts
     where post_id between ${sqlId(space.post, `${s.votesPosts} + 1`)} and ${sqlId(space.post, `${s.votesPosts} + 10`)};
     insert into app.notifications (recipient_id, type, actor_id, post_id, created_at)
     select ${person(String(s.votesAuthor))}, 'post_voted', null, post_id, voted_at from app.vote_receipts
     where post_id between ${sqlId(space.post, `${s.votesPosts} + 1`)} and ${sqlId(space.post, `${s.votesPosts} + 10`)};
     insert into app.activity_events (actor_id, post_id, kind, created_at)
     select user_id, post_id, 'post_voted', voted_at from app.vote_receipts
     where post_id between ${sqlId(space.post, `${s.votesPosts} + 1`)} and ${sqlId(space.post, `${s.votesPosts} + 10`)};
     update app.vote_counters c set left_count = c.left_count + ${Math.floor(votesPerPost / 2)},
                                    right_count = c.right_count + ${votesPerPost - Math.floor(votesPerPost / 2)}
     where c.post_id between ${sqlId(space.post, `${s.votesPosts} + 1`)} and ${sqlId(space.post, `${s.votesPosts} + 10`)} and c.hub_id is null and c.slot = 0`,
  );
  // Comments: n on post 1; a root comment on post 2 with n replies; each with the post author's
  // post_commented row and the commenter's activity event. Hot: one author wrote them all.
  const commenter = hot ? person(String(s.rootCommenter)) : person(`${s.firstPerson} + (i * 7919) % ${U - s.firstPerson}`);
  await step(
    `${2 * n + 1} comments`,
    `insert into app.comments (id, post_id, author_id, parent_id, text, created_at)
     select ${sqlId(space.comment, `${s.comments} + i`)}, ${sqlId(space.post, String(s.commentedPost))}, ${commenter},
            null, 'Comment ' || i, now() - interval '59 days' + i * (interval '58 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.comments (id, post_id, author_id, parent_id, text, created_at)
     values (${sqlId(space.comment, String(s.rootComment))}, ${sqlId(space.post, String(s.repliedPost))}, ${person(String(s.rootCommenter))}, null, 'The root', now() - interval '59 days');
     insert into app.comments (id, post_id, author_id, parent_id, text, created_at)
     select ${sqlId(space.comment, `${s.replies} + i`)}, ${sqlId(space.post, String(s.repliedPost))}, ${commenter},
            ${sqlId(space.comment, String(s.rootComment))}, 'Reply ' || i, now() - interval '58 days' + i * (interval '57 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.notifications (recipient_id, type, actor_id, post_id, comment_id, created_at)
     select ${person(String(s.commentAuthor))}, 'post_commented', c.author_id, c.post_id, c.id, c.created_at from app.comments c
     where c.post_id in (${sqlId(space.post, String(s.commentedPost))}, ${sqlId(space.post, String(s.repliedPost))});
     insert into app.activity_events (actor_id, post_id, kind, created_at)
     select c.author_id, c.post_id, 'post_commented', c.created_at from app.comments c
     where c.post_id in (${sqlId(space.post, String(s.commentedPost))}, ${sqlId(space.post, String(s.repliedPost))})`,
  );
  // Follows: n followers of the star, n users followed by the fan; user_followed rows.
  await step(
    `${n + fanFollows(size)} follows`,
    `insert into app.follows (follower_id, followee_id, created_at)
     select ${person(`${s.firstPerson - 1} + i`)}, ${person(String(s.star))}, now() - interval '100 days' + i * (interval '99 days' / ${n})
     from generate_series(1, ${n}) i order by i;
     insert into app.follows (follower_id, followee_id, created_at)
     select ${person(String(s.fan))}, ${person(`${s.firstPerson - 1} + i`)}, now() - interval '100 days' + i * (interval '99 days' / ${n})
     from generate_series(1, ${fanFollows(size)}) i order by i;
     insert into app.notifications (recipient_id, type, actor_id, created_at)
     select f.followee_id, 'user_followed', f.follower_id, f.created_at from app.follows f where f.followee_id = ${person(String(s.star))}`,
  );
  // Hub 1's discussions: the newest hub post's discussion has n messages; its first has n replies.
  const discussion = sqlId(space.discussion, `${s.hubPosts} + ${n}`);
  const messageAuthor = hot ? person(String(s.firstPerson)) : person(`${s.firstPerson - 1} + 1 + (i * 7919) % ${n}`);
  await step(
    `${2 * n} discussion messages`,
    `insert into app.hub_discussion_messages (id, discussion_id, hub_id, author_id, parent_id, text, created_at)
     select ${sqlId(space.message, 'i')}, ${discussion}, ${hub}, ${messageAuthor}, null, 'Message ' || i,
            now() - interval '20 days' + i * (interval '19 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.hub_discussion_messages (id, discussion_id, hub_id, author_id, parent_id, text, created_at)
     select ${sqlId(space.message, `${s.replyMessages} + i`)}, ${discussion}, ${hub}, ${messageAuthor},
            ${sqlId(space.message, '1')}, 'Reply ' || i, now() - interval '19 days' + i * (interval '18 days' / ${n})
     from generate_series(1, ${n}) i;
     update app.hub_discussions d set last_activity_at = m.at
     from (select discussion_id, max(created_at) at from app.hub_discussion_messages group by 1) m where m.discussion_id = d.id`,
  );
  await step(
    `${n} saved posts and ${n} saved discussions`,
    `insert into app.saved_posts (user_id, post_id, saved_at)
     select ${person(String(s.saver))}, ${sqlId(space.post, `${s.prolificPosts} + i`)}, now() - interval '50 days' + i * (interval '49 days' / ${n})
     from generate_series(1, ${n}) i;
     insert into app.saved_discussions (user_id, discussion_id, hub_id, saved_at)
     select ${person(String(s.saver))}, ${sqlId(space.discussion, `${s.hubPosts} + i`)}, ${hub}, now() - interval '50 days' + i * (interval '49 days' / ${n})
     from generate_series(1, ${n}) i`,
  );
  await client.query('set session_replication_role = origin');
  await step('derived state (counters, search keys)', await deriveStateSql(client));
  await step('vacuum analyze', 'vacuum analyze');
}

/**
 * The derived state the write paths keep beside the rows, set from the rows: through the schema's
 * own rebuild functions when it has them (app_private.rebuild_*: counters, search keys), else as
 * the older schema keeps it (counter columns and app.follow_counts).
 */
async function deriveStateSql(client: pg.ClientBase): Promise<string> {
  const { rows } = await client.query<{ name: string }>(
    `select p.proname as name from pg_proc p where p.pronamespace = 'app_private'::regnamespace and p.proname like 'rebuild\\_%' and p.pronargs = 0`,
  );
  if (rows.length > 0) return rows.map((row) => `select app_private.${row.name}();`).join('\n');
  return `update app.posts p set comment_count = c.n from (select post_id, count(*) n from app.comments where deleted_at is null group by post_id) c where c.post_id = p.id;
    update app.posts p set repost_count = r.n from (select source_post_id, count(*) n from app.posts where deleted_at is null and source_post_id is not null group by source_post_id) r where r.source_post_id = p.id;
    update app.comments p set reply_count = r.n from (select parent_id, count(*) n from app.comments where deleted_at is null and parent_id is not null group by parent_id) r where r.parent_id = p.id;
    insert into app.follow_counts (user_id, followers, following)
      select u, sum(a), sum(b) from (select followee_id u, 1 a, 0 b from app.follows union all select follower_id, 0, 1 from app.follows) f group by u;
    update app.hubs h set member_count = m.n from (select hub_id, count(*) n from app.hub_memberships group by hub_id) m where m.hub_id = h.id;
    insert into app.hub_discussion_stats (discussion_id, hub_id, message_count) select discussion_id, hub_id, count(*) from app.hub_discussion_messages group by 1, 2;
    update app.hub_discussion_messages p set reply_count = r.n from (select parent_id, count(*) n from app.hub_discussion_messages where parent_id is not null group by parent_id) r where r.parent_id = p.id`;
}
