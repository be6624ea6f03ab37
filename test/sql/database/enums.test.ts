// The TypeScript lists of a database enum's values equal the enum (enum_range), so a value added
// on one side cannot be refused or mis-shaped on the other. Every enum of the schema is named here:
// either with the lists that mirror it, or as read and written by SQL only, so a new enum has to be
// placed too.
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { invitationStatuses } from '../../../server/hubs/invitations.ts';
import { joinRequestSources } from '../../../server/hubs/join-requests.ts';
import { hubRoles } from '../../../server/hubs/shape.ts';
import { notificationTypes } from '../../../server/shapes/notification.ts';
import { feedContexts, postCard } from '../../../server/posts/card.ts';
import { article, articleKinds, visibilities, visibility } from '../../../server/posts/fields.ts';
import { reportReasons } from '../../../server/reports/routes.ts';
import { assetStatuses, uploadRules } from '../../../server/uploads/routes.ts';
import { positions } from '../../../server/votes/summary.ts';
import { scratchDatabase, type ScratchDatabase } from '../../helpers/worlds.ts';

/** Enum → the TypeScript lists that must hold exactly its values. `ordered`: in the enum's order too. */
const mirrored: Record<string, { lists: Record<string, readonly string[]>; ordered?: boolean }> = {
  'app.notification_type': { lists: { notificationTypes }, ordered: true },
  // Tallies are five counts in position order (server/votes/summary.ts).
  'app.vote_position': { lists: { positions }, ordered: true },
  'app.hub_role': { lists: { hubRoles }, ordered: true },
  'app.feed_context': { lists: { feedContexts } },
  'app.upload_purpose': { lists: { 'uploadRules keys': Object.keys(uploadRules) }, ordered: true },
  'app.asset_status': { lists: { assetStatuses }, ordered: true },
  'app.report_reason': { lists: { reportReasons }, ordered: true },
  'app.post_visibility': {
    lists: { visibilities, 'request visibility': visibility.options, 'PostCard visibility': postCard.shape.visibility.options },
    ordered: true,
  },
  'app.article_kind': {
    lists: {
      articleKinds,
      'request article kind': article.shape.kind.options,
      'PostCard article kind': postCard.shape.article.unwrap().shape.kind.options,
    },
    ordered: true,
  },
  'app.join_request_source': { lists: { joinRequestSources }, ordered: true },
  'app.invitation_status': { lists: { invitationStatuses }, ordered: true },
};
/** Read and written by SQL only: no TypeScript list of their values exists. */
const sqlOnly = [
  'app.activity_kind',
  'app.join_request_status',
  'app.moderation_action',
  'app.post_hub_kind',
  'app.report_state',
  'app.report_target',
  'app_private.counter',
  'app_private.push_state',
];

let clone: ScratchDatabase;
let db: pg.Client;
beforeAll(async () => {
  clone = await scratchDatabase('opinion_enums');
  db = new pg.Client({ connectionString: clone.ownerUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await clone?.drop();
});

/** Each enum of our schemas with its values as enum_range gives them (in the enum's order). */
async function databaseEnums(): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ name: string }>(
    `select t.oid::regtype::text as name from pg_type t join pg_namespace n on n.oid = t.typnamespace
     where t.typtype = 'e' and n.nspname in ('app', 'app_private') order by 1`,
  );
  const enums = new Map<string, string[]>();
  for (const { name } of rows) enums.set(name, (await db.query(`select enum_range(null::${name})::text[] as labels`)).rows[0].labels);
  return enums;
}

it('every enum of the schema is either mirrored in TypeScript or SQL-only', async () => {
  const enums = await databaseEnums();
  expect([...enums.keys()], 'name a new enum in test/sql/database/enums.test.ts').toEqual([...Object.keys(mirrored), ...sqlOnly].sort());
});

it('the TypeScript lists hold exactly the values of their enum', async () => {
  const enums = await databaseEnums();
  for (const [name, { lists, ordered }] of Object.entries(mirrored)) {
    const labels = enums.get(name) as string[];
    for (const [listName, list] of Object.entries(lists)) {
      if (ordered) expect([...list], `${listName} = enum_range(null::${name})`).toEqual(labels);
      else expect([...list].sort(), `${listName} holds the values of ${name}`).toEqual([...labels].sort());
    }
  }
});

it('the vote counters hold one count per position, in the order of app.vote_position (sealed_tally and tally_ballots read them so)', async () => {
  const { rows } = await db.query<{ name: string }>(
    `select a.attname::text as name from pg_attribute a
     where a.attrelid = 'app.vote_counters'::regclass and a.attnum > 0 and not a.attisdropped and a.attname like '%\\_count'
     order by a.attnum`,
  );
  const labels = (await databaseEnums()).get('app.vote_position') as string[];
  expect(rows.map((row) => row.name)).toEqual(labels.map((label) => `${label}_count`));
  expect([...positions]).toEqual(labels);
});
