// The production shape without Docker (docker-compose.yml): migrations run once by `npm run migrate`,
// then two API processes and one worker, each its own process, on one database and one S3 store. A
// vote cast through one API process counts in the card read through the other; a member joining
// through B queues a hub fan-out that the worker process runs; its notification reaches a stream
// open on A, through the dispatcher of whichever API process leads.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../db/free-port.ts';
import { testCodes, type TestApp } from '../../helpers/app.ts';
import { createClient } from '../../helpers/client.ts';
import { createHub, invite } from '../../helpers/hubs.ts';
import { openStream } from '../../helpers/notifications.ts';
import { createPost, slider, vote } from '../../helpers/posts.ts';
import { answers, startProcess, type RunningProcess } from '../../helpers/process.ts';
import { userAtLevel } from '../../helpers/users.ts';
import { emptyInstall, type ScratchDatabase } from '../../helpers/worlds.ts';

let install: ScratchDatabase & { bucket: string };
const processes: RunningProcess[] = [];
let apiA: TestApp;
let apiB: TestApp;
let urlA: string;
let worker: RunningProcess;

beforeAll(async () => {
  install = await emptyInstall('opinion_cluster'); // `npm run migrate` brings it up to date
  const env = {
    DATABASE_URL: install.ownerUrl,
    JWT_SECRET: 'cluster-test',
    OTP_TEST_CODES: testCodes,
    S3_ENDPOINT: inject('s3Endpoint'),
    S3_BUCKET: install.bucket,
  };

  const migrate = startProcess('npm', ['run', 'migrate'], env);
  expect(await migrate.exited, migrate.output()).toBe(0);

  const [portA, portB] = [await freePort(), await freePort()];
  const start = (args: string[], port: number) => {
    const child = startProcess(process.execPath, ['main.ts', ...args], { ...env, PORT: String(port), MIGRATE_ON_START: 'false' });
    processes.push(child);
    return child;
  };
  const a = start(['--only=api'], portA);
  const b = start(['--only=api'], portB);
  worker = start(['--only=worker'], await freePort());
  urlA = `http://127.0.0.1:${portA}`;
  const urlB = `http://127.0.0.1:${portB}`;
  await a.waitFor(() => answers(`${urlA}/readyz`), 'API process A');
  await b.waitFor(() => answers(`${urlB}/readyz`), 'API process B');
  await worker.waitFor(() => worker.output().includes('worker running'), 'the worker process');
  apiA = createClient(urlA) as TestApp;
  apiB = createClient(urlB) as TestApp;
}, 90_000);

afterAll(async () => {
  for (const child of processes) child.child.kill('SIGTERM');
  const codes = await Promise.all(processes.map((child) => child.exited));
  await install?.drop();
  expect(codes).toEqual([0, 0, 0]);
});

describe('two API processes and one worker on one database', () => {
  it('counts a vote cast through B in the card read through A', { timeout: 60_000 }, async () => {
    const author = await userAtLevel(apiA, 3);
    const voters = [await userAtLevel(apiB, 2), await userAtLevel(apiB, 2)];
    const post = await createPost(apiA, author, slider);
    for (const voter of voters) expect((await vote(apiB, voter, post.id, 'right')).status).toBe(201);
    const card = await apiA.get(`/posts/${post.id}`, { token: author.token });
    expect(card.body.data.voteSummary).toMatchObject({ totalVotes: 2, rightCount: 2 });
  });

  it('runs the hub fan-out of a join through B in the worker, live on a stream open on A', { timeout: 60_000 }, async () => {
    const owner = await userAtLevel(apiA, 4);
    const member = await userAtLevel(apiB, 4);
    const hub = await createHub(apiA, owner);
    const stream = await openStream(urlA, owner.token);
    try {
      expect(stream.status).toBe(200);
      const invitationId = await invite(apiA, hub, owner, member);
      // The owner's stream first gets nothing for its own invitation; the member accepts through B.
      const accept = await apiB.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: member.token });
      expect(accept.body.data).toEqual({ hubId: hub.id, viewerStatus: 'member' });
      const [event] = await stream.waitForEvents(1, 30_000);
      expect(event?.event).toBe('notification');
      expect(event?.data).toMatchObject({ type: 'hub_member_joined', hub_id: hub.id, actor: { id: member.id } });
      // Only the worker process runs jobs: the API processes started no worker.
      expect(processes.filter((child) => child.output().includes('worker running'))).toEqual([worker]);
    } finally {
      stream.close();
    }
  });
});
