// Default feed users (contract section 10): managed through internal GraphQL with the admin token
// and through the real `npm run admin` command (a child process on the same database), and what
// guests then see on Home.
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalGraphql, runAdmin } from '../../helpers/admin.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { createPost } from '../../helpers/posts.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

const adminToken = 'test-admin-token-feeds-0123456789';
let app: TestApp;
let author: TestUser;
let postId: string;
beforeAll(async () => {
  app = await startTestApp({ ADMIN_API_TOKEN: adminToken });
  author = await userAtLevel(app, 3);
  postId = (await createPost(app, author)).id;
});
afterAll(() => app.close());

const graphql = (query: string, token: string, variables: Record<string, unknown> = {}) =>
  internalGraphql(app.url, query, token, variables);

const guestHome = async () => ((await app.get('/posts')).body.data.items as { id: string }[]).map((card) => card.id);

/** The admin command's exit code and its stdout and stderr together. */
async function admin(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const { code, stdout, stderr } = await runAdmin(args, env);
  return { code, output: stdout + stderr };
}

describe('internal GraphQL', () => {
  it('adds, lists and removes default feed users by username with the admin token', async () => {
    const add = await graphql('mutation($u: String!) { addDefaultFeedUser(input: { username: $u }) { result { userId } } }', adminToken, {
      u: `@${(author.username as string).toUpperCase()}`,
    });
    expect(add.errors, JSON.stringify(add.errors)).toBeUndefined();
    expect(add.data.addDefaultFeedUser.result.userId).toBe(author.id);
    const list = await graphql('{ allDefaultFeedUsers { nodes { userId addedAt userByUserId { username } } } }', adminToken);
    expect(list.data.allDefaultFeedUsers.nodes).toEqual([
      expect.objectContaining({ userId: author.id, userByUserId: { username: author.username } }),
    ]);
    expect(await guestHome()).toEqual([postId]);

    const unknown = await graphql('mutation { addDefaultFeedUser(input: { username: "nobody_here" }) { clientMutationId } }', adminToken);
    expect(unknown.errors?.[0]?.message).toBe('User does not exist.');

    const remove = await graphql('mutation($u: String!) { removeDefaultFeedUser(input: { username: $u }) { result } }', adminToken, {
      u: author.username,
    });
    expect(remove.data.removeDefaultFeedUser.result).toBe(true);
    expect(await guestHome()).toEqual([]);
  });

  it('shows user tokens neither the list nor a way to change it', async () => {
    const user = await userAtLevel(app, 2);
    const list = await graphql('{ allDefaultFeedUsers { nodes { userId } } }', user.token);
    // The user schema has no such field, so the query is refused before it runs.
    expect(list.errors?.map((e) => e.message)).toEqual(['Cannot query field "allDefaultFeedUsers" on type "Query".']);
    const add = await graphql('mutation($u: String!) { addDefaultFeedUser(input: { username: $u }) { clientMutationId } }', user.token, {
      u: user.username,
    });
    expect(add.errors?.map((e) => e.message)).toEqual(['This schema has no mutation operations.']);
    const { rows } = await app.owner.query('select count(*)::int as n from app.default_feed_users');
    expect(rows[0].n).toBe(0);
  });
});

describe('npm run admin -- default-feed-users', () => {
  it('adds, lists and removes over DATABASE_URL, with exit codes', { timeout: 60_000 }, async () => {
    const env = { DATABASE_URL: app.ownerUrl };
    const add = await admin(['default-feed-users', 'add', author.username as string], env);
    expect(add, add.output).toMatchObject({ code: 0 });
    expect(await guestHome()).toEqual([postId]);
    const list = await admin(['default-feed-users', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.output).toContain(author.username);

    const unknown = await admin(['default-feed-users', 'add', 'nobody_here'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.output).toContain('no user with the username "nobody_here"');
    const usage = await admin(['default-feed-users', 'add'], env);
    expect(usage.code).toBe(2);
    expect(usage.output).toContain('usage: npm run admin');

    const remove = await admin(['default-feed-users', 'remove', author.username as string], env);
    expect(remove.code).toBe(0);
    expect(remove.output).toContain('no longer a default feed user');
    expect(await guestHome()).toEqual([]);
  });

  it('runs on the embedded data when DATABASE_URL is unset, leaving no database running', { timeout: 120_000 }, async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-admin-'));
    await chmod(dataDir, 0o755);
    try {
      const list = await admin(['default-feed-users', 'list'], { DATA_DIR: dataDir, DATABASE_URL: '' });
      expect(list, list.output).toMatchObject({ code: 0 });
      expect(list.output).toContain('no default feed users');
      expect(existsSync(path.join(dataDir, 'pg', 'PG_VERSION'))).toBe(true);
      expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
