// Post, comment, vote and bookmark policies, tested directly in SQL.
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import type { SealedTally } from '../../../server/votes/ballots.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { appWithUsers, hubWithMembers } from '../../helpers/worlds.ts';
import { createHub } from '../../helpers/hubs.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { missingLevelCode } from '../../../server/http/access-levels.ts';
import { audiences, checkFrame, frameFields, postHubsMax, visibilities, visibility } from '../../../server/posts/fields.ts';

let app: TestApp;
let author: TestUser;
let member: TestUser;
let outsider: TestUser;
let lockedId: string;
let publicId: string;
beforeAll(async () => {
  [app, author, member, outsider] = await appWithUsers(4, 4, 4);
  const hub = await hubWithMembers(app, author, member);
  lockedId = (await createPost(app, author, { ...slider, visibility: 'private_locked_hub', hubIds: [hub.id] })).id;
  publicId = (await createPost(app, author, slider)).id;
  await vote(app, member, lockedId);
  await vote(app, member, publicId);
  await app.post(`/posts/${lockedId}/comments`, { text: 'members only' }, { token: member.token });
  await app.post(`/posts/${publicId}/save`, undefined, { token: member.token });
});
afterAll(() => app.close());

const read = (user: TestUser | null, sql: string, params: unknown[] = []) =>
  asViewer(app, user ? 'app_user' : 'app_anonymous', user?.id ?? null, (c) => rowsOrError(c, sql, params));

describe('posts', () => {
  it('hide private_locked_hub posts from outsiders and anonymous requests, not from members and the author', async () => {
    expect(await read(outsider, 'select id from app.posts where id = $1', [lockedId])).toEqual([]);
    expect(await read(null, 'select id from app.posts where id = $1', [lockedId])).toEqual([]);
    expect(await read(member, 'select id from app.posts where id = $1', [lockedId])).toEqual([{ id: lockedId }]);
    expect(await read(author, 'select id from app.posts where id = $1', [lockedId])).toEqual([{ id: lockedId }]);
    expect(await read(null, 'select id from app.posts where id = $1', [publicId])).toEqual([{ id: publicId }]);
  });

  it('hide private_locked_hub posts from a member below access level 4 (no longer Hub-ready), who keeps the membership', async () => {
    // A path that leaves a membership behind an account below level 4: the account is hidden
    // (deletion requested, or suspended: its memberships are taken aside and its handle held),
    // someone takes its handle meanwhile, and it is shown again (restored): the memberships come
    // back, the handle does not (it must choose another), so the account is at level 1.
    // Spec 2.3 rule 14 and part 5 ask for an active, Hub-ready member.
    const {
      rows: [held],
    } = await app.owner.query<{ username: string }>('select username from app.users where id = $1', [member.id]);
    await app.owner.query('select app_private.hide_account($1)', [member.id]);
    await app.owner.query('update app.users set username = $1 where id = $2', [held?.username, outsider.id]);
    expect((await app.owner.query('select app_private.show_account($1) as shown', [member.id])).rows[0].shown).toBe(true);
    try {
      expect((await app.owner.query('select app.user_access_level($1) as level', [member.id])).rows[0].level).toBeLessThan(4);
      expect((await app.owner.query('select count(*)::int as n from app.hub_memberships where user_id = $1', [member.id])).rows[0].n).toBe(
        1,
      );
      expect(await read(member, 'select id from app.posts where id = $1', [lockedId])).toEqual([]);
      expect(await read(member, 'select text from app.comments where post_id = $1', [lockedId])).toEqual([]);
      expect(await read(member, 'select app.can_see_post($1) as visible', [lockedId])).toEqual([{ visible: false }]);
      expect(await read(outsider, 'select id from app.posts where id = $1', [publicId])).toEqual([{ id: publicId }]);
    } finally {
      await app.owner.query(`update app.users set username = 'x' || substr(md5(random()::text), 1, 12) where id = $1`, [outsider.id]);
      await app.owner.query('update app.users set username = $1 where id = $2', [held?.username, member.id]);
    }
    // Back at level 4, the member reads the post again.
    expect(await read(member, 'select id from app.posts where id = $1', [lockedId])).toEqual([{ id: lockedId }]);
  });

  it('state the locked-post rule once: app.post_stays_in_hubs, which every function asks', async () => {
    const { rows } = await app.owner.query<{ visibility: string; stays: boolean }>(
      `select v::text as visibility, app.post_stays_in_hubs(v) as stays from unnest(enum_range(null::app.post_visibility)) v`,
    );
    expect(rows).toEqual([
      { visibility: 'public', stays: false },
      { visibility: 'public_hub', stays: false },
      { visibility: 'private_locked_hub', stays: true },
    ]);
    // No other function body compares a visibility with the literal (comments aside).
    const { rows: bodies } = await app.owner.query<{ name: string; body: string }>(
      `select p.oid::regprocedure::text as name, p.prosrc as body from pg_proc p
       where p.pronamespace in ('app'::regnamespace, 'app_private'::regnamespace) and p.prosrc like '%private_locked_hub%'`,
    );
    const stating = bodies.filter(({ body }) => body.replace(/--[^\n]*/g, '').includes("'private_locked_hub'")).map(({ name }) => name);
    expect(stating).toEqual(['app.post_stays_in_hubs(app.post_visibility)']);
  });

  it('inline the locked-post rule into the feed functions: their plans compare the visibility, calling no rule function', async () => {
    // Inlinable: plain SQL, no security definer, no settings, immutable or stable as their bodies are.
    const { rows } = await app.owner.query<{ name: string; volatility: string; definer: boolean; config: string[] | null }>(
      `select p.proname::text as name, p.provolatile::text as volatility, p.prosecdef as definer, p.proconfig as config
       from pg_proc p where p.oid in ('app.post_stays_in_hubs(app.post_visibility)'::regprocedure, 'app.post_reaches(app.posts, uuid)'::regprocedure)
       order by 1`,
    );
    expect(rows).toEqual([
      { name: 'post_reaches', volatility: 's', definer: false, config: null },
      { name: 'post_stays_in_hubs', volatility: 'i', definer: false, config: null },
    ]);
    const { rows: plan } = await app.owner.query<{ 'QUERY PLAN': string }>(
      `explain (verbose, costs off) select p.id from app.posts p
       where not app.post_stays_in_hubs(p.visibility) and app.post_visible_to(p, $1::uuid, '{}')`,
      [member.id],
    );
    const text = plan.map((row) => row['QUERY PLAN']).join('\n');
    expect(text).toContain("<> 'private_locked_hub'::app.post_visibility");
    expect(text).not.toMatch(/post_stays_in_hubs|post_reaches|post_visible_to/);
  });

  it('hide comments of posts the viewer cannot see', async () => {
    expect(await read(outsider, 'select text from app.comments where post_id = $1', [lockedId])).toEqual([]);
    expect(await read(member, 'select text from app.comments where post_id = $1', [lockedId])).toEqual([{ text: 'members only' }]);
  });

  it('cannot be written directly', async () => {
    expect(await read(author, `update app.posts set thought_text = 'x' where id = $1 returning id`, [publicId])).toBe('42501');
    expect(
      await read(author, `insert into app.comments (post_id, author_id, text) values ($1, $2, 'x') returning id`, [publicId, author.id]),
    ).toBe('42501');
  });
});

describe('votes', () => {
  it('show a user their own receipts only, and counters to nobody', async () => {
    expect(await read(member, 'select post_id from app.vote_receipts order by post_id')).toEqual(
      [lockedId, publicId].sort().map((post_id) => ({ post_id })),
    );
    expect(await read(outsider, 'select post_id from app.vote_receipts where user_id = $1', [member.id])).toEqual([]);
    expect(await read(author, 'select * from app.vote_scope_receipts where user_id = $1', [member.id])).toEqual([]);
    expect(await read(member, 'select * from app.vote_counters')).toBe('42501');
    // Sealed ballots: no API role reads, writes or deletes them (only the security-definer vote,
    // tally read and tallier functions touch them).
    for (const viewer of [member, author, outsider]) {
      expect(await read(viewer, 'select * from app_private.sealed_ballots')).toBe('42501');
      expect(await read(viewer, 'delete from app_private.sealed_ballots returning id')).toBe('42501');
      expect(await read(viewer, `select * from app_private.ballots_to_tally($1, null, 5)`, [publicId])).toBe('42501');
      expect(await read(viewer, `select app_private.tally_ballots($1, null, '{}', '{0,0,0,0,0}', 5)`, [publicId])).toBe('42501');
    }
    expect(await read(member, 'select * from app.activity_events')).toBe('42501');
    expect(
      await read(author, `insert into app.vote_receipts (post_id, user_id) values ($1, $2) returning post_id`, [publicId, author.id]),
    ).toBe('42501');
  });

  it('tally only posts the viewer can see', async () => {
    expect(await read(outsider, 'select app.vote_tally($1, null) as t', [lockedId])).toEqual([{ t: null }]);
    // The member's one 'left' vote: not in the counters (one ballot, fewer than k), pending and sealed;
    // opened by the API's ballot box, counted once, every other position at zero.
    const [tally] = (await read(member, 'select app.vote_tally($1, null) as t', [lockedId])) as { t: SealedTally }[];
    expect(tally?.t.c.map(Number)).toEqual([0, 0, 0, 0, 0]);
    expect(tally?.t.b).toHaveLength(1);
    expect(app.services.ballots.openTally(tally?.t as SealedTally, lockedId, null)).toEqual([0, 1, 0, 0, 0]);
  });
});

describe('saved posts', () => {
  it('are private to their owner, and only visible posts can be saved', async () => {
    expect(await read(outsider, 'select post_id from app.saved_posts where user_id = $1', [member.id])).toEqual([]);
    expect(await read(member, 'select post_id from app.saved_posts')).toEqual([{ post_id: publicId }]);
    expect(
      await read(outsider, `insert into app.saved_posts (user_id, post_id) values ($1, $2) returning post_id`, [outsider.id, lockedId]),
    ).toBe('42501');
    expect(
      await read(outsider, `insert into app.saved_posts (user_id, post_id) values ($1, $2) returning post_id`, [member.id, publicId]),
    ).toBe('42501');
  });
});

describe('the audience rule', () => {
  it('answers in SQL (app_private.check_post_audience) what the TypeScript table says, for every visibility, hub count and level', async () => {
    // The author is a member of postHubsMax hubs (one made above), so hub counts up to the most are
    // valid for them, and one more is not.
    const hubs: string[] = [];
    for (let i = 0; i < postHubsMax; i++) {
      await app.owner.query(`delete from app_private.sliding_limits where key like '%' || $1`, [author.id]);
      hubs.push((await createHub(app, author)).id);
    }
    const viewers = [await userAtLevel(app, 2), await userAtLevel(app, 3), author];
    const frame = z.strictObject({ ...frameFields, visibility }).superRefine(checkFrame);
    const extra = '00000000-0000-4000-8000-000000000000';
    const client = await app.owner.connect();
    try {
      for (const viewer of viewers) {
        const level = (await client.query('select app.user_access_level($1) as level', [viewer.id])).rows[0].level as number;
        for (const name of visibilities) {
          for (const count of [0, 1, 2, postHubsMax, postHubsMax + 1]) {
            const hubIds = count > postHubsMax ? [...hubs, extra] : hubs.slice(0, count);
            const valid = frame.safeParse({ visibility: name, hubIds }).success;
            const expected = missingLevelCode(level, audiences[name].level) ?? (valid ? null : 'VALIDATION_FAILED');
            await client.query('begin');
            await client.query(`select set_config('app.user_id', $1, true)`, [viewer.id]);
            const answer = await client
              .query('select app_private.check_post_audience($1, $2)', [name, hubIds])
              .then(() => null)
              .catch((error: Error) => error.message);
            await client.query('rollback');
            expect(answer, `${name} with ${count} hubs at level ${level}`).toBe(expected);
          }
        }
      }
    } finally {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }
  });
});
