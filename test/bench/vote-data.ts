// Data of the vote benchmark, made in bulk as the database owner: Hub-ready voters with live
// sessions, one hub they all belong to, and fresh posts for every phase (a vote needs a post the
// voter has not voted on). Uses only tables that every schema version of the benchmark has.
import pg from 'pg';

export interface Voter {
  userId: string;
  sessionId: string;
}

export interface BenchData {
  voters: Voter[];
  authorId: string;
  hubId: string;
}

export async function seed(owner: pg.Pool, voterCount: number): Promise<BenchData> {
  const { rows } = await owner.query<{ id: string; session_id: string }>(
    `with made as (
       insert into app.users (username, full_name, terms_accepted_at, terms_version, media_completed_at, contacts_synced_at)
       select 'bench_' || g, 'Bench Voter', now(), 'bench', now(), now() from generate_series(0, $1) g returning id),
     phones as (
       insert into app.phone_identities (user_id, phone_e164)
       select id, '+1555' || lpad((row_number() over ())::text, 7, '0') from made)
     insert into app.sessions (user_id, expires_at) select id, now() + interval '1 day' from made
     returning user_id as id, id as session_id`,
    [voterCount],
  );
  const [author, ...voters] = rows.map((r) => ({ userId: r.id, sessionId: r.session_id }));
  const authorId = (author as Voter).userId;
  const hub = await owner.query<{ id: string }>(
    `with intent as (
       insert into app.upload_intents (owner_id, purpose, content_type, content_length, object_key, expires_at)
       values ($1, 'hub_photo', 'image/png', 1, 'bench/' || gen_random_uuid(), now() + interval '1 hour') returning id),
     asset as (
       insert into app.assets (upload_id, owner_id, purpose, content_type, size, checksum, object_key)
       select id, $1, 'hub_photo', 'image/png', 1, repeat('0', 64), 'bench/asset/' || gen_random_uuid() from intent returning id)
     insert into app.hubs (name, profile_asset_id, created_by) select 'Bench hub', id, $1 from asset returning id`,
    [authorId],
  );
  const hubId = hub.rows[0]?.id as string;
  await owner.query(
    `insert into app.hub_memberships (hub_id, user_id, role)
     select $1, u, case when u = $2 then 'super_admin'::app.hub_role else 'member' end from unnest($3::uuid[]) u`,
    [hubId, authorId, [authorId, ...voters.map((v) => v.userId)]],
  );
  await owner.query(
    `create schema bench_floor;
     create table bench_floor.receipts (post_id uuid not null, user_id uuid not null, voted_at timestamptz not null default now(),
       primary key (post_id, user_id));
     create table bench_floor.counters (post_id uuid not null, slot smallint not null, count bigint not null, primary key (post_id, slot));`,
  );
  await owner.query('analyze');
  return { voters, authorId, hubId };
}

/** `count` new slider posts by the author: public, or public_hub targeted to the hub. */
export async function makePosts(owner: pg.Pool, data: BenchData, count: number, kind: 'public' | 'hub'): Promise<string[]> {
  const { rows } = await owner.query<{ id: string }>(
    `insert into app.posts (author_id, slider_text, slider_left_label, slider_right_label, visibility)
     select $1, 'Bench prompt ' || g, 'No', 'Yes', $3::app.post_visibility from generate_series(1, $2) g returning id`,
    [data.authorId, count, kind === 'hub' ? 'public_hub' : 'public'],
  );
  const ids = rows.map((r) => r.id);
  if (kind === 'hub') {
    await owner.query(`insert into app.post_hubs (post_id, hub_id, kind, added_by) select p, $2, 'target', $3 from unnest($1::uuid[]) p`, [
      ids,
      data.hubId,
      data.authorId,
    ]);
  }
  return ids;
}
