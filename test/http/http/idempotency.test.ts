// Idempotency keys (contract part 15, server/http/idempotency.ts) over real sockets: a retried
// write answers its first answer byte for byte and runs once; concurrent retries never both run; a
// key reused for another request is refused; the key is the user's; 401, 429 and 5xx answers are
// not kept; kept answers expire, are swept by the worker task and go with the account's purge, and
// hold nothing readable (a vote's answer shows the tally right after the vote).
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub } from '../../helpers/hubs.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { asViewer, rowsOrError } from '../../helpers/sql.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';

let app: TestApp;
let author: TestUser;
beforeAll(async () => {
  // The in-use tests hold app.comments while a request waits for it: longer than the default lock bound.
  app = await startTestApp({ WRITE_LIMITS: 'reports=1/3600', API_LOCK_TIMEOUT_MS: '60000', API_STATEMENT_TIMEOUT_MS: '60000' });
  author = await userAtLevel(app, 3);
});
afterAll(() => app.close());

const keyed = (key: string) => ({ 'Idempotency-Key': key });
const count = async (sql: string, params: unknown[] = []): Promise<number> => (await app.owner.query(sql, params)).rows[0].n;
const kept = (userId: string) => count('select count(*)::int as n from app_private.idempotent_answers where user_id = $1', [userId]);
const comments = (postId: string) => count('select count(*)::int as n from app.comments where post_id = $1', [postId]);

/** Waits until a backend of the test database waits for a lock (the request held mid-transaction). */
async function untilSomeoneWaitsForALock(): Promise<void> {
  for (;;) {
    const waiting = await count(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    if (waiting > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('Idempotency-Key', () => {
  it('answers a retried POST /posts with the first answer, byte for byte, and makes one post', async () => {
    const key = randomUUID();
    const body = { thoughtText: 'Once only', visibility: 'public' };
    const first = await app.post('/posts', body, { token: author.token, headers: keyed(key) });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await app.post('/posts', body, { token: author.token, headers: keyed(key) });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    // The same JSON with its keys in another order and other spacing is the same request.
    const reordered = await app.request('POST', '/posts', {
      token: author.token,
      headers: { ...keyed(key), 'content-type': 'application/json' },
      rawBody: '{ "visibility": "public",  "thoughtText": "Once only" }',
    });
    expect(reordered.text).toBe(first.text);
    expect(await count(`select count(*)::int as n from app.posts where author_id = $1 and thought_text = 'Once only'`, [author.id])).toBe(
      1,
    );
    // Without the key, the same body is a new post, as before.
    expect((await app.post('/posts', body, { token: author.token })).body.data.id).not.toBe(first.body.data.id);
  });

  it('makes one comment of six concurrent retries; the others answer 409 IN_USE with Retry-After: 1, then the kept answer', async () => {
    const post = await createPost(app, author);
    const commenter = await userAtLevel(app, 2);
    const key = randomUUID();
    const send = () => app.post(`/posts/${post.id}/comments`, { text: 'Sent six times' }, { token: commenter.token, headers: keyed(key) });
    const answers = await Promise.all(Array.from({ length: 6 }, send));
    const created = answers.filter((a) => a.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const answer of answers.filter((a) => a.status !== 201)) {
      expect(answer.status).toBe(409);
      expect(answer.body.error.code).toBe('IDEMPOTENCY_KEY_IN_USE');
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    for (const answer of created) expect(answer.text).toBe(created[0]?.text);
    const retried = await send();
    expect(retried.text).toBe(created[0]?.text);
    expect(await comments(post.id)).toBe(1);
  });

  it('answers 409 IDEMPOTENCY_KEY_IN_USE while the first request runs, then the first answer', async () => {
    const post = await createPost(app, author);
    const commenter = await userAtLevel(app, 2);
    const key = randomUUID();
    const send = () => app.post(`/posts/${post.id}/comments`, { text: 'Held' }, { token: commenter.token, headers: keyed(key) });
    // A test connection holds the comments table: the first request claims its key, then waits at its insert.
    const holder = new pg.Client({ connectionString: app.ownerUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table app.comments in share mode');
      const first = send();
      await untilSomeoneWaitsForALock();
      const second = await send();
      expect(second.status).toBe(409);
      expect(second.body.error).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE', message: expect.any(String) });
      expect(second.headers.get('retry-after')).toBe('1');
      await holder.query('commit');
      const answered = await first;
      expect(answered.status).toBe(201);
      expect((await send()).text).toBe(answered.text);
    } finally {
      await holder.end();
    }
    expect(await comments(post.id)).toBe(1);
  });

  it('answers a retried vote with its first success, never 409 VOTE_ALREADY_CAST', async () => {
    const post = await createPost(app, author, slider);
    const voter = await userAtLevel(app, 2);
    const key = randomUUID();
    const first = await app.post(`/posts/${post.id}/vote`, { position: 'left' }, { token: voter.token, headers: keyed(key) });
    expect(first.status).toBe(201);
    const again = await app.post(`/posts/${post.id}/vote`, { position: 'left' }, { token: voter.token, headers: keyed(key) });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Without a key (or with another one), the vote is what it was: final.
    expect((await app.post(`/posts/${post.id}/vote`, { position: 'left' }, { token: voter.token })).body.error.code).toBe(
      'VOTE_ALREADY_CAST',
    );
    expect(await count('select count(*)::int as n from app.vote_receipts where post_id = $1', [post.id])).toBe(1);
  });

  it('keeps a vote that had to seal again for a hub (its retry stays in the held transaction) with its hub scope', async () => {
    const owner = await userAtLevel(app, 4);
    const hub = await createHub(app, owner);
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    // This process has not seen the post: the first cast_vote misses the hub's ballot and is sealed again.
    const post = await createPost(app, owner, { ...slider, visibility: 'public_hub', hubIds: [hub.id] });
    const key = randomUUID();
    const resealed = vi.spyOn(app.services.metrics.votes, 'resealed');
    const first = await app.post(`/posts/${post.id}/vote`, { position: 'right' }, { token: member.token, headers: keyed(key) });
    expect(first.status, first.text).toBe(201);
    expect(resealed).toHaveBeenCalledTimes(1);
    resealed.mockRestore();
    expect(first.body.data.voteReceipt.hubVoteScope).toEqual({ hubIds: [hub.id] });
    const again = await app.post(`/posts/${post.id}/vote`, { position: 'right' }, { token: member.token, headers: keyed(key) });
    expect(again.text).toBe(first.text);
    expect(await count('select count(*)::int as n from app.vote_receipts where post_id = $1', [post.id])).toBe(1);
    expect(await kept(member.id)).toBe(1);
  });

  it('refuses the key for another body, path or method (422 IDEMPOTENCY_KEY_REUSED), changing nothing', async () => {
    const post = await createPost(app, author);
    const key = randomUUID();
    expect((await app.post(`/posts/${post.id}/comments`, { text: 'one' }, { token: author.token, headers: keyed(key) })).status).toBe(201);
    const other = await createPost(app, author);
    const refusals = [
      await app.post(`/posts/${post.id}/comments`, { text: 'two' }, { token: author.token, headers: keyed(key) }),
      await app.post(`/posts/${other.id}/comments`, { text: 'one' }, { token: author.token, headers: keyed(key) }),
      await app.delete(`/posts/${other.id}`, { token: author.token, headers: keyed(key) }),
    ];
    for (const refusal of refusals) {
      expect(refusal.status).toBe(422);
      expect(refusal.body.error).toEqual({
        code: 'IDEMPOTENCY_KEY_REUSED',
        message: 'This idempotency key was used for another request.',
        details: {},
      });
    }
    expect(await comments(post.id)).toBe(1);
    expect(await comments(other.id)).toBe(0);
    expect((await app.get(`/posts/${other.id}`, { token: author.token })).status).toBe(200);
  });

  it('checks the header as request shape: 422 VALIDATION_FAILED naming it, after 401 and 403', async () => {
    const post = await createPost(app, author);
    for (const bad of ['x'.repeat(256), 'caf\u00e9']) {
      const answer = await app.post(`/posts/${post.id}/comments`, { text: 'x' }, { token: author.token, headers: keyed(bad) });
      expect(answer.status).toBe(422);
      expect(answer.body.error.details.fields).toEqual({ 'Idempotency-Key': 'Must be 1-255 printable ASCII characters' });
    }
    // With a body error too, one answer names both.
    const both = await app.post(
      `/posts/${post.id}/comments`,
      { text: 'x', extra: 1 },
      { token: author.token, headers: keyed('x'.repeat(256)) },
    );
    expect(Object.keys(both.body.error.details.fields).sort()).toEqual(['Idempotency-Key', 'extra']);
    // 255 printable characters, spaces inside, are a key.
    expect(
      (await app.post(`/posts/${post.id}/comments`, { text: 'x' }, { token: author.token, headers: keyed(`a b${'~'.repeat(252)}`) }))
        .status,
    ).toBe(201);
    expect((await app.post(`/posts/${post.id}/comments`, { text: 'x' }, { headers: keyed('x'.repeat(256)) })).status).toBe(401);
    const early = await userAtLevel(app, 1);
    expect(
      (await app.post('/posts', { thoughtText: 'x', visibility: 'public' }, { token: early.token, headers: keyed('x'.repeat(256)) })).body
        .error.code,
    ).toBe('PROFILE_BASICS_REQUIRED');
    // Reads and the public sign-in endpoints do not take it: it changes nothing there.
    expect((await app.get(`/posts/${post.id}`, { token: author.token, headers: keyed('x'.repeat(256)) })).status).toBe(200);
    expect((await app.post('/auth/anonymous/session', { deviceId: `d-${randomUUID()}` }, { headers: keyed('x'.repeat(256)) })).status).toBe(
      200,
    );
  });

  it('keeps an error answer of the handler (404) and replays it; nothing of the first request remains', async () => {
    const key = randomUUID();
    const missing = randomUUID();
    const before = await kept(author.id);
    const first = await app.post(`/posts/${missing}/comments`, { text: 'late' }, { token: author.token, headers: keyed(key) });
    expect(first.status).toBe(404);
    const again = await app.post(`/posts/${missing}/comments`, { text: 'late' }, { token: author.token, headers: keyed(key) });
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await kept(author.id)).toBe(before + 1);
  });

  it('does not keep 401, 429 or 5xx answers: the retry runs again', async () => {
    const reporter = await userAtLevel(app, 2);
    const [a, b] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    const report = (user: TestUser, key: string) =>
      app.post(`/reports/users/${user.id}`, { reason: 'spam' }, { token: reporter.token, headers: keyed(key) });
    // 429: the write limit is 1 report an hour here.
    expect((await report(a, randomUUID())).status).toBe(201);
    const key = randomUUID();
    const limited = await report(b, key);
    expect(limited.status).toBe(429);
    await app.owner.query(`delete from app_private.sliding_limits where key like 'write:reports:%'`);
    expect((await report(b, key)).status).toBe(201);

    // 5xx: the comment function goes missing for a moment.
    const post = await createPost(app, author);
    const failing = randomUUID();
    const send = () => app.post(`/posts/${post.id}/comments`, { text: 'after a 500' }, { token: reporter.token, headers: keyed(failing) });
    await app.owner.query('alter function app.create_comment(uuid, text, uuid) rename to create_comment_gone');
    try {
      expect((await send()).status).toBe(500);
    } finally {
      await app.owner.query('alter function app.create_comment_gone(uuid, text, uuid) rename to create_comment');
    }
    expect((await send()).status).toBe(201);
    expect(await comments(post.id)).toBe(1);

    // 401: a revoked session; the same user signed in again retries with the key, and it runs.
    const user = await userAtLevel(app, 2);
    const retry = randomUUID();
    expect(
      (await app.post('/auth/logout', { refreshToken: user.refreshToken, logoutFromAllDevices: false }, { token: user.token })).status,
    ).toBe(200);
    expect(
      (await app.post(`/posts/${post.id}/comments`, { text: 'signed out' }, { token: user.token, headers: keyed(retry) })).status,
    ).toBe(401);
    expect(await kept(user.id)).toBe(0);
  });

  it('keeps keys per user: another user with the same key and request runs their own', async () => {
    const post = await createPost(app, author);
    const [one, two] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    const key = 'shared-key';
    const first = await app.post(`/posts/${post.id}/comments`, { text: 'same' }, { token: one.token, headers: keyed(key) });
    const second = await app.post(`/posts/${post.id}/comments`, { text: 'same' }, { token: two.token, headers: keyed(key) });
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.data.author.id).toBe(two.id);
    expect(second.body.data.id).not.toBe(first.body.data.id);
    expect(await comments(post.id)).toBe(2);
  });

  it('holds nothing readable: no key, no position, no tally, no body; only digests and ciphertext', async () => {
    const post = await createPost(app, author, slider);
    const voter = await userAtLevel(app, 2);
    const key = randomUUID();
    const answer = await app.post(`/posts/${post.id}/vote`, { position: 'strong_left' }, { token: voter.token, headers: keyed(key) });
    expect(answer.status, answer.text).toBe(201);
    const { rows } = await app.owner.query('select * from app_private.idempotent_answers where user_id = $1', [voter.id]);
    expect(rows).toHaveLength(1);
    const row = rows[0];
    expect(Object.keys(row).sort()).toEqual([
      'body',
      'created_at',
      'expires_at',
      'fingerprint',
      'headers',
      'key_digest',
      'status',
      'user_id',
    ]);
    expect(row.headers).toEqual({ 'Content-Type': 'application/json; charset=utf-8' });
    const stored = Buffer.concat([row.body, row.fingerprint, row.key_digest, Buffer.from(JSON.stringify(row.headers))]);
    for (const text of [key, 'left', 'Count', 'totalVotes', post.id, answer.text]) expect(stored.includes(text)).toBe(false);
    expect(row.body.length).toBe(Buffer.byteLength(answer.text) + 28);
    // The fingerprint is no plain hash of any of the five possible requests.
    for (const position of ['strong_left', 'left', 'neutral', 'right', 'strong_right']) {
      const request = `POST\n/api/v1/posts/${post.id}/vote\n${JSON.stringify({ position })}`;
      expect(row.fingerprint.equals(createHash('sha256').update(request).digest())).toBe(false);
    }
    // Every column of the table is in this test's list: a new one must be looked at here.
    const columns = await app.owner.query(
      `select column_name from information_schema.columns where table_schema = 'app_private' and table_name = 'idempotent_answers' order by 1`,
    );
    expect(columns.rows.map((c) => c.column_name)).toEqual([
      'body',
      'created_at',
      'expires_at',
      'fingerprint',
      'headers',
      'key_digest',
      'status',
      'user_id',
    ]);
    // No role but the owner reads it.
    for (const role of ['app_user', 'app_admin', 'app_anonymous', 'app_worker', 'authenticator']) {
      const { rows: grants } = await app.owner.query(`select has_table_privilege($1, 'app_private.idempotent_answers', 'select') as can`, [
        role,
      ]);
      expect(grants[0].can, role).toBe(false);
    }
  });

  it("in SQL: only the functions reach the table, a 401, 429 or 5xx is never kept, and a digest is the user's own", async () => {
    const [one, two] = [await userAtLevel(app, 2), await userAtLevel(app, 2)];
    const digest = Buffer.alloc(32, 7);
    const fingerprint = Buffer.alloc(32, 9);
    const keep = 'select app.keep_idempotent_answer($1, $2, $3, $4, $5)';
    await asViewer(app, 'app_user', one.id, async (client) => {
      expect(await rowsOrError(client, 'select * from app_private.idempotent_answers')).toBe('42501');
      for (const status of [401, 429, 500, 503])
        expect(await rowsOrError(client, keep, [digest, fingerprint, status, '{}', Buffer.from('x')]), String(status)).toBe('P0001');
      expect(await rowsOrError(client, keep, [digest, fingerprint, 404, '{}', Buffer.from('x')])).toEqual([{ keep_idempotent_answer: '' }]);
      expect(await rowsOrError(client, 'select outcome, status from app.claim_idempotency_key($1, $2)', [digest, fingerprint])).toEqual([
        { outcome: 'kept', status: 404 },
      ]);
      await client.query('commit');
    });
    await asViewer(app, 'app_user', two.id, async (client) => {
      expect(await rowsOrError(client, 'select outcome from app.claim_idempotency_key($1, $2)', [digest, fingerprint])).toEqual([
        { outcome: 'new' },
      ]);
    });
    await asViewer(app, 'app_anonymous', null, async (client) => {
      expect(await rowsOrError(client, 'select outcome from app.claim_idempotency_key($1, $2)', [digest, fingerprint])).toBe('42501');
    });
  });

  it('is documented on every bearer write of the OpenAPI document, with both codes and Retry-After on the 409', async () => {
    const document = (await app.get('/openapi.json')).body;
    let writes = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        const takes = method !== 'get' && JSON.stringify(operation.security) === JSON.stringify([{ bearer: [] }]);
        const header = operation.parameters.some((p: any) => p.$ref === '#/components/parameters/Idempotency-Key');
        expect(header, `${method} ${path}`).toBe(takes);
        if (!takes) continue;
        writes += 1;
        const response = (status: string) => {
          const found = operation.responses[status];
          return found.$ref ? document.components.responses[found.$ref.split('/').pop()] : found;
        };
        expect(response('409')['x-error-codes'], `${method} ${path}`).toContain('IDEMPOTENCY_KEY_IN_USE');
        expect(response('409').headers['Retry-After']).toBeDefined();
        expect(response('422')['x-error-codes'], `${method} ${path}`).toContain('IDEMPOTENCY_KEY_REUSED');
      }
    }
    expect(writes).toBeGreaterThan(40);
  });

  it('forgets a key after 24 hours; the worker task sweeps expired answers, and the purge of the account takes the rest', async () => {
    const user = await userAtLevel(app, 2);
    const post = await createPost(app, author);
    const old = randomUUID();
    const send = (key: string, text: string) =>
      app.post(`/posts/${post.id}/comments`, { text }, { token: user.token, headers: keyed(key) });
    expect((await send(old, 'day one')).status).toBe(201);
    expect((await send(randomUUID(), 'fresh')).status).toBe(201);
    await app.owner.query(
      `update app_private.idempotent_answers set expires_at = now() - interval '1 second' where user_id = $1 and created_at = (select min(created_at) from app_private.idempotent_answers where user_id = $1)`,
      [user.id],
    );
    // An expired key is a new key (even for another request).
    const reused = await send(old, 'day two');
    expect(reused.status).toBe(201);
    expect(reused.headers.get('idempotent-replayed')).toBeNull();
    expect(await kept(user.id)).toBe(2);
    await app.owner.query(`update app_private.idempotent_answers set expires_at = now() - interval '1 second' where user_id = $1`, [
      user.id,
    ]);
    await app.owner.query(`select graphile_worker.add_job('purge_idempotent_answers', '{}'::json)`);
    await app.runJobs();
    expect(await kept(user.id)).toBe(0);

    // No export holds them: the archive has nothing of the kept answers, the keys or their digests.
    const exportKey = randomUUID();
    const requested = await app.post('/users/me/exports', undefined, { token: user.token, headers: keyed(exportKey) });
    expect(requested.status).toBe(202);
    await app.runJobs();
    const ready = await app.get(`/users/me/exports/${requested.body.data.exportId}`, { token: user.token });
    const archive = await (await fetch(ready.body.data.url)).text();
    const { rows: keptRows } = await app.owner.query(
      'select key_digest, fingerprint, body from app_private.idempotent_answers where user_id = $1',
      [user.id],
    );
    expect(keptRows).toHaveLength(1);
    for (const text of [
      exportKey,
      'idempot',
      keptRows[0].key_digest.toString('hex'),
      keptRows[0].body.toString('base64'),
      keptRows[0].body.toString('hex'),
    ]) {
      expect(archive.toLowerCase()).not.toContain(text.toLowerCase());
    }

    // The purge: every kept answer of the account goes.
    expect((await send(randomUUID(), 'before deletion')).status).toBe(201);
    expect((await app.post('/users/me/deletion', undefined, { token: user.token, headers: keyed(randomUUID()) })).status).toBe(202);
    expect(await kept(user.id)).toBe(3);
    await app.owner.query(`update app_private.account_states set purge_after = now() - interval '1 second' where user_id = $1`, [user.id]);
    await app.owner.query('select app_private.purge_account_begin($1), app_private.purge_account_content($1)', [user.id]);
    expect(await kept(user.id)).toBe(0);
  });
});
