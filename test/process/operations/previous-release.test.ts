// Two releases on one schema, as a rolling deploy has them (contract part 16): the previous release
// (the commit deploy/previous-release names, checked out into a temporary folder) runs as real
// processes on a database this checkout migrated, and this checkout's API runs on a database only
// the previous release migrated. The commit must be in the repository's history (a CI clone has it):
// without it this file fails, naming the commit, rather than skip.
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../db/free-port.ts';
import { migrate } from '../../../db/migrate.ts';
import { testCodes, type TestApp } from '../../helpers/app.ts';
import { createClient } from '../../helpers/client.ts';
import { createHub, invite } from '../../helpers/hubs.ts';
import { openStream } from '../../helpers/notifications.ts';
import { corners, markedImage, readMetadata, revealingTags, withPhoneMetadata } from '../../helpers/images.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { putObject, sha256 } from '../../helpers/uploads.ts';
import { answers, projectRoot, startProcess, type RunningProcess } from '../../helpers/process.ts';
import { checkoutCommit, previousReleaseCommit } from '../../helpers/releases.ts';
import { userAtLevel } from '../../helpers/users.ts';
import { emptyInstall, type ScratchDatabase } from '../../helpers/worlds.ts';
import { acrossMajors, currentSchema, schemaFileMajor, schemaFilePath } from '../../../db/schema/schema-file.ts';

const commit = previousReleaseCommit();
let previous: string;
const databases: ScratchDatabase[] = [];
const processes: RunningProcess[] = [];

beforeAll(async () => {
  previous = await mkdtemp(path.join(os.tmpdir(), 'opinion-previous-release-'));
  await checkoutCommit(commit, previous);
}, 600_000); // npm ci when the previous release's package-lock.json differs from this one's

afterAll(async () => {
  for (const child of processes) if (child.child.exitCode === null) child.child.kill('SIGKILL');
  await Promise.all(processes.map((child) => child.exited));
  for (const database of databases) await database.drop();
  if (previous) await rm(previous, { recursive: true, force: true });
});

/** An empty database and a bucket of its own; the settings a process of either release needs for it. */
async function freshDatabase(): Promise<{ ownerUrl: string; env: Record<string, string> }> {
  const install = await emptyInstall('opinion_releases');
  databases.push(install);
  const { ownerUrl, bucket } = install;
  return {
    ownerUrl,
    env: {
      DATABASE_URL: ownerUrl,
      JWT_SECRET: 'releases-test',
      OTP_TEST_CODES: testCodes,
      S3_ENDPOINT: inject('s3Endpoint'),
      S3_BUCKET: bucket,
      MIGRATE_ON_START: 'false',
    },
  };
}

function start(tree: string, only: 'api' | 'worker', env: Record<string, string>, port: number): RunningProcess {
  const child = startProcess(process.execPath, ['main.ts', `--only=${only}`], { ...env, PORT: String(port) }, { cwd: tree });
  processes.push(child);
  return child;
}

async function stop(child: RunningProcess): Promise<number | null> {
  child.child.kill('SIGTERM');
  return child.exited;
}

const errorsOf = (child: RunningProcess) => child.problems().filter((line) => line.level >= 50);

describe(`the previous release (${commit.slice(0, 12)}) and this one on one schema`, () => {
  it(
    'runs the previous release: sign-in, post, vote, comment, feed, notification stream and a worker job on a database this checkout migrated',
    { timeout: 120_000 },
    async () => {
      const { ownerUrl, env } = await freshDatabase();
      await migrate(ownerUrl);
      const [apiPort, workerPort] = [await freePort(), await freePort()];
      const api = start(previous, 'api', env, apiPort);
      const worker = start(previous, 'worker', env, workerPort);
      const url = `http://127.0.0.1:${apiPort}`;
      // /healthz, not /readyz: a release older than the readiness rule of contract part 16 reads the
      // newer schema as "pending" (it compared hashes), though it serves it.
      await api.waitFor(() => answers(`${url}/healthz`), "the previous release's API");
      await worker.waitFor(() => worker.output().includes('worker running'), "the previous release's worker");
      const app = createClient(url) as TestApp;

      const author = await userAtLevel(app, 4);
      const voter = await userAtLevel(app, 4);
      const stream = await openStream(url, author.token);
      try {
        expect(stream.status).toBe(200);
        const post = await createPost(app, author, slider);
        expect((await app.get(`/posts/${post.id}`, { token: voter.token })).status).toBe(200);
        const cast = await vote(app, voter, post.id, 'right');
        expect(cast.status, JSON.stringify(cast.body)).toBe(201);
        const [event] = await stream.waitForEvents(1, 20_000);
        expect(event?.event).toBe('notification');
        expect(event?.data).toMatchObject({ type: 'post_voted' });
        expect(JSON.stringify(event?.data)).toContain(post.id);
        const home = await app.get('/posts?limit=20', { token: author.token });
        expect(home.status, JSON.stringify(home.body)).toBe(200);
        expect(home.body.data.items.map((card: { id: string }) => card.id)).toContain(post.id);
        const comment = await app.post(`/posts/${post.id}/comments`, { text: 'Across releases' }, { token: voter.token });
        expect(comment.status, JSON.stringify(comment.body)).toBe(201);
        // A job for the worker: a member joining a hub fans out to the owner's stream through it.
        const hub = await createHub(app, author);
        const invitationId = await invite(app, hub, author, voter);
        const accept = await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: voter.token });
        expect(accept.status, JSON.stringify(accept.body)).toBe(200);
        await worker.waitFor(
          () => stream.events.some((e) => (e.data as { type?: string } | undefined)?.type === 'hub_member_joined'),
          'the hub fan-out run by the worker',
          30_000,
        );
      } finally {
        stream.close();
      }
      expect(errorsOf(api), api.output()).toEqual([]);
      expect(errorsOf(worker), worker.output()).toEqual([]);
      expect(await stop(api), api.output()).toBe(0);
      expect(await stop(worker), worker.output()).toBe(0);
    },
  );

  it(
    "shows photos during the rollout: the previous release's API serves only processed variants of what it uploads, processed by this checkout's worker",
    { timeout: 120_000 },
    async () => {
      const { ownerUrl, env } = await freshDatabase();
      await migrate(ownerUrl);
      const [apiPort, workerPort] = [await freePort(), await freePort()];
      const api = start(previous, 'api', env, apiPort);
      const worker = start(projectRoot, 'worker', env, workerPort);
      const url = `http://127.0.0.1:${apiPort}`;
      await api.waitFor(() => answers(`${url}/healthz`), "the previous release's API");
      await worker.waitFor(() => worker.output().includes('worker running'), "this checkout's worker");
      const app = createClient(url) as TestApp;
      const user = await userAtLevel(app, 3);
      const photo = await withPhoneMetadata(await markedImage(600, 600).jpeg().toBuffer(), 6); // square: the crop keeps the marker
      const intent = (
        await app.post(
          '/uploads/presign',
          { purpose: 'profile_photo', contentType: 'image/jpeg', contentLength: photo.length },
          { token: user.token },
        )
      ).body.data;
      expect((await putObject(intent.uploadUrl, photo, intent.headers)).status).toBe(200);
      const complete = await app.post(
        '/uploads/complete',
        { uploadId: intent.uploadId, purpose: 'profile_photo', checksum: sha256(photo) },
        { token: user.token },
      );
      expect(complete.status, JSON.stringify(complete.body)).toBe(201);
      // The previous release answers at once and attaches the asset while it may still be processing.
      const attach = await app.patch('/users/me/profile', { profileAssetId: complete.body.data.assetId }, { token: user.token });
      expect(attach.status, JSON.stringify(attach.body)).toBe(200);
      const owner = new pg.Client({ connectionString: ownerUrl });
      await owner.connect();
      try {
        await worker.waitFor(
          async () =>
            (await owner.query('select processed_at from app.assets where id = $1', [complete.body.data.assetId])).rows[0]?.processed_at !=
            null,
          "the photo processed by this checkout's worker",
          30_000,
        );
      } finally {
        await owner.end();
      }
      // What the previous release gives out (it reads object_key) is the JPEG variant: upright, bare.
      const profile = await app.get(`/users/by-username/${user.username}`);
      const served = await fetch(profile.body.data.profilePhotoUrl);
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe('image/jpeg');
      const bytes = Buffer.from(await served.arrayBuffer());
      expect(revealingTags(await readMetadata(bytes))).toEqual([]);
      expect((await corners(bytes)).topRight).toBe('marker');
      const download = await app.get(`/uploads/${complete.body.data.assetId}/download-url`, { token: user.token });
      expect(Buffer.from(await (await fetch(download.body.data.url)).arrayBuffer())).toEqual(bytes);
      expect(errorsOf(api), api.output()).toEqual([]);
      expect(errorsOf(worker), worker.output()).toEqual([]);
      expect(await stop(api), api.output()).toBe(0);
      expect(await stop(worker), worker.output()).toBe(0);
    },
  );

  it(
    "answers /readyz 503 naming what is pending on a database only the previous release migrated, and ready once this checkout's migration ran (to the schema a fresh database gets), without a restart",
    { timeout: 120_000 },
    async () => {
      const { ownerUrl, env } = await freshDatabase();
      const oldMigrate = startProcess(process.execPath, ['db/cli/migrate.ts'], { DATABASE_URL: ownerUrl }, { cwd: previous });
      processes.push(oldMigrate);
      expect(await oldMigrate.exited, oldMigrate.output()).toBe(0);

      // What this build needs that the previous release does not ship: its migrations, and db/sql
      // when its files differ (a release whose db/sql changed raises the level it needs).
      const migrationNames = (tree: string) =>
        readdirSync(path.join(tree, 'migrations'))
          .filter((name) => name.endsWith('.sql'))
          .map((name) => name.slice(0, -'.sql'.length));
      const sqlFiles = (tree: string) =>
        Object.fromEntries(
          readdirSync(path.join(tree, 'db', 'sql'), { recursive: true, encoding: 'utf8' })
            .filter((name) => name.endsWith('.sql'))
            .sort()
            .map((name) => [name, readFileSync(path.join(tree, 'db', 'sql', name), 'utf8')]),
        );
      const missingMigrations = migrationNames(projectRoot).filter((name) => !migrationNames(previous).includes(name));
      const sqlChanged = JSON.stringify(sqlFiles(projectRoot)) !== JSON.stringify(sqlFiles(previous));

      const port = await freePort();
      const api = start(projectRoot, 'api', env, port);
      const url = `http://127.0.0.1:${port}`;
      await api.waitFor(() => answers(`${url}/healthz`), "this checkout's API");
      const readyz = async () => {
        const response = await fetch(`${url}/readyz`);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        return { status: response.status, body: (await response.json()) as { status: string; pending?: string[] } };
      };
      const first = await readyz();
      if (missingMigrations.length === 0 && !sqlChanged) {
        // The two releases ship the same schema: nothing is missing.
        expect(first).toEqual({ status: 200, body: { status: 'ready' } });
      } else {
        expect(first.status, JSON.stringify(first.body)).toBe(503);
        expect(first.body.status).toBe('migrations pending');
        expect(first.body.pending).toEqual(expect.arrayContaining(missingMigrations));
        if (sqlChanged) expect(first.body.pending?.some((item) => item.includes('db/sql'))).toBe(true);
        // Still serving while it waits (the process did not stop on an older schema).
        expect((await fetch(`${url}/healthz`)).status).toBe(200);
      }

      await migrate(ownerUrl);
      // It now has the schema a fresh database gets: what this checkout renames or drops (triggers,
      // functions) is renamed or dropped in place, never left beside its replacement.
      const client = new pg.Client({ connectionString: ownerUrl });
      await client.connect();
      const major = (await client.query<{ major: number }>(`select current_setting('server_version_num')::int / 10000 as major`)).rows[0]
        ?.major as number;
      await client.end();
      const produced = await currentSchema(ownerUrl, major);
      const committed = readFileSync(schemaFilePath, 'utf8');
      if (major === schemaFileMajor) expect(produced).toBe(committed);
      else expect(acrossMajors(produced)).toBe(acrossMajors(committed));
      await api.waitFor(async () => (await readyz()).status === 200, 'ready after the migration', 10_000);
      expect((await readyz()).body).toEqual({ status: 'ready' });
      expect(errorsOf(api), api.output()).toEqual([]);
      expect(await stop(api), api.output()).toBe(0);
    },
  );
});
