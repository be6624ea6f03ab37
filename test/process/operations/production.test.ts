// NODE_ENV=production (contract 11), with real processes: nothing is embedded; the settings
// production needs are checked in one place (one line naming every missing one, exit 1); and the
// production shape runs as a production install runs it (`npm ci --omit=dev`: every development
// package fails to load, test/helpers/production-install.ts), as docker-compose.yml runs it from
// the image: `npm run migrate` once on an empty database, then the API and the worker as separate
// processes, on a real database and S3 store, sending sign-in codes through Twilio's Messages API
// (a stand-in on loopback speaking its wire format).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { freePort } from '../../../db/free-port.ts';
import { createClient, type Client } from '../../helpers/client.ts';
import { answers, startProcess, type RunningProcess } from '../../helpers/process.ts';
import { startTwilioStandIn, type TwilioStandIn } from '../../helpers/twilio.ts';
import { emptyInstall, type ScratchDatabase } from '../../helpers/worlds.ts';

const asProductionInstall = ['--import', './test/helpers/production-install.ts'];
const adminUrl = inject('adminUrl');
/** Every setting production reads, blank: the test's own environment must not fill one in. */
const blank = Object.fromEntries(
  [
    'DATABASE_URL',
    'S3_ENDPOINT',
    'S3_BUCKET',
    'S3_ACCESS_KEY_ID',
    'S3_SECRET_ACCESS_KEY',
    'JWT_SECRET',
    'BALLOT_KEY',
    'OTP_SENDER',
    'OTP_SENDER_MODULE',
    'OTP_TEST_CODES',
  ].map((name) => [name, '']),
);
let install: ScratchDatabase & { bucket: string };
let dataDir: string;
let twilio: TwilioStandIn;
let migrate: RunningProcess;
let service: RunningProcess;
let worker: RunningProcess;
let client: Client;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-production-'));
  twilio = await startTwilioStandIn();
  install = await emptyInstall('opinion_prod'); // the migration job makes the schema
  const port = await freePort();
  // The environment docker-compose.yml gives every app container.
  const production = {
    ...blank,
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    PORT: String(port),
    MIGRATE_ON_START: 'false',
    DATABASE_URL: install.ownerUrl,
    S3_ENDPOINT: inject('s3Endpoint'),
    S3_BUCKET: install.bucket,
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    JWT_SECRET: randomBytes(32).toString('hex'),
    BALLOT_KEY: `k1:${randomBytes(32).toString('hex')}`,
    OTP_SENDER: 'twilio',
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_FROM: '+15005550006',
    TWILIO_API_URL: twilio.url,
  };
  migrate = startProcess(process.execPath, [...asProductionInstall, 'db/cli/migrate.ts'], production);
  expect(await migrate.exited, migrate.output()).toBe(0);
  service = startProcess(process.execPath, [...asProductionInstall, 'main.ts', '--only=api'], production);
  worker = startProcess(process.execPath, [...asProductionInstall, 'main.ts', '--only=worker'], production);
  const base = `http://127.0.0.1:${port}`;
  await service.waitFor(() => answers(`${base}/readyz`), 'the production API');
  await worker.waitFor(() => worker.output().includes('"worker running"'), 'the production worker');
  client = createClient(base);
}, 90_000);

afterAll(async () => {
  for (const running of [service, worker]) running?.child.kill('SIGTERM');
  await Promise.all([service?.exited, worker?.exited]);
  await twilio.close();
  await rm(dataDir, { recursive: true, force: true });
  await install?.drop();
});

describe('NODE_ENV=production without its settings', () => {
  it('names every missing setting in one line, exits 1 and starts nothing', async () => {
    const run = startProcess(process.execPath, [...asProductionInstall, 'main.ts'], {
      ...blank,
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
    });
    expect(await run.exited, run.output()).toBe(1);
    expect(run.problems(), run.output()).toHaveLength(1);
    const [line] = run.problems();
    expect(line?.level).toBe(60);
    expect(line?.msg).toMatch(/^NODE_ENV=production needs /);
    for (const setting of [
      'DATABASE_URL',
      'S3_ENDPOINT',
      'S3_BUCKET',
      'S3_ACCESS_KEY_ID',
      'S3_SECRET_ACCESS_KEY',
      'JWT_SECRET',
      'BALLOT_KEY',
      'OTP_SENDER=twilio or OTP_SENDER_MODULE',
    ]) {
      expect(line?.msg).toContain(setting);
    }
    expect(run.output().split('\n').filter(Boolean), run.output()).toHaveLength(1);
    expect(await readdir(dataDir)).toEqual([]); // no database, store or secret was made
  });

  it('names the Twilio settings OTP_SENDER=twilio lacks, and an OTP_SENDER_MODULE that does not load', async () => {
    // Development runs (they may keep development secrets): a data folder of their own.
    const developmentDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-production-dev-'));
    onTestFinished(() => rm(developmentDir, { recursive: true, force: true }));
    const twilioRun = startProcess(process.execPath, ['main.ts'], {
      ...blank,
      DATA_DIR: developmentDir,
      OTP_SENDER: 'twilio',
      TWILIO_ACCOUNT_SID: 'AC1',
    });
    expect(await twilioRun.exited).toBe(1);
    expect(twilioRun.problems().map((line) => line.msg)).toEqual(['OTP_SENDER=twilio needs TWILIO_AUTH_TOKEN, TWILIO_FROM']);
    const moduleRun = startProcess(process.execPath, ['main.ts', '--only=api'], {
      ...blank,
      DATA_DIR: developmentDir,
      PORT: String(await freePort()),
      MIGRATE_ON_START: 'false',
      DATABASE_URL: install.ownerUrl,
      S3_ENDPOINT: inject('s3Endpoint'),
      OTP_SENDER_MODULE: '/app/otp-sender.js',
    });
    expect(await moduleRun.exited).toBe(1);
    expect(moduleRun.problems().map((line) => line.msg)).toEqual([
      expect.stringMatching(/^OTP_SENDER_MODULE \/app\/otp-sender\.js cannot be loaded: Cannot find module/),
    ]);
    expect(moduleRun.output()).not.toMatch(/\n\s+at /);
  });
});

describe('a production install with real settings', () => {
  it('migrates an empty database, then runs the API and the worker with nothing embedded, writing JSON lines without warnings', async () => {
    expect(migrate.output()).toContain(`"migrated: ${new URL(adminUrl).host}/${install.database}; db/sql: `);
    for (const running of [migrate, service, worker]) {
      expect(running.output()).not.toContain('embedded');
      expect(running.output()).not.toContain('GRAPHILE_ENV');
      for (const line of running.output().split('\n').filter(Boolean)) expect(() => JSON.parse(line), line).not.toThrow();
      expect(running.problems(), running.output()).toEqual([]);
    }
    expect(service.output()).toContain(`files: ${inject('s3Endpoint')}/`);
    expect(service.output()).not.toContain('worker running');
    expect(worker.output()).not.toContain('API listening');
    // Nothing is written beside the code (the image runs as the `node` user, who cannot write to /app).
    expect(await readdir(dataDir)).toEqual([]);
  });

  it('the worker process runs the jobs (a purge of expired uploads, through the S3 store)', async () => {
    const owner = new pg.Client({ connectionString: install.ownerUrl });
    await owner.connect();
    try {
      const { rows } = await owner.query<{ id: string }>("select id from graphile_worker.add_job('purge_expired_uploads', '{}'::json)");
      const job = rows[0]?.id;
      await worker.waitFor(
        async () => (await owner.query('select 1 from graphile_worker._private_jobs where id = $1', [job])).rowCount === 0,
        'the job to be done',
      );
      expect(worker.problems(), worker.output()).toEqual([]);
    } finally {
      await owner.end();
    }
  });

  it("sends the code through Twilio's Messages API: form body, basic auth, 201; the code it carries signs in", async () => {
    const phone = { phoneCountryCode: '+44', phoneNumber: '7700900123' };
    const requested = await client.post('/auth/otp/request', phone);
    expect(requested.status, JSON.stringify(requested.body)).toBe(200);
    const sent = twilio.requests.at(-1);
    expect(sent).toMatchObject({
      method: 'POST',
      path: `/2010-04-01/Accounts/${twilio.accountSid}/Messages.json`,
      contentType: 'application/x-www-form-urlencoded',
      credentials: `${twilio.accountSid}:${twilio.authToken}`,
      form: { To: '+447700900123', From: '+15005550006', Body: expect.stringMatching(/^\d{4} is your sign-in code\.$/) },
    });
    const code = sent?.form.Body?.slice(0, 4);
    const session = await client.post('/auth/otp/verify', { ...phone, code });
    expect(session.status).toBe(200);
    expect(session.body.data.user.phoneVerified).toBe(true);
  });

  it("answers Twilio's errors: a number it cannot reach is 422 on phoneNumber, a failure of Twilio's is 503 with Retry-After", async () => {
    twilio.fail('+447700900124', 400, 21211, "The 'To' number +447700900124 is not a valid phone number.");
    const unreachable = await client.post('/auth/otp/request', { phoneCountryCode: '+44', phoneNumber: '7700900124' });
    expect(unreachable.status).toBe(422);
    expect(unreachable.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { fields: { phoneNumber: expect.any(String) } } });

    twilio.fail('+447700900125', 500, 20500, 'Internal Server Error');
    const down = await client.post('/auth/otp/request', { phoneCountryCode: '+44', phoneNumber: '7700900125' });
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);

    twilio.fail('+447700900126', 429, 20429, 'Too Many Requests');
    expect((await client.post('/auth/otp/request', { phoneCountryCode: '+44', phoneNumber: '7700900126' })).status).toBe(503);
    // Twilio's messages quote the number: the log names Twilio's code, never the phone.
    await service.waitFor(() => service.output().includes('"twilioCode":20429'), 'the log line of the refusal');
    expect(service.output()).toContain('"twilioCode":21211');
    expect(service.output()).not.toContain('7700900124');
  });
});
