// npm run seed as a newcomer runs it: beside a running `npm start` on the embedded database and S3
// store of one data folder. The seed shares them without stopping either, builds the demo world
// through the API, and prints how to sign in; the world is then read back through the running
// service's API: Home has cards for a guest and for a new user, photos and pictures are real
// images, a seeded person signs in with the code from the service's log and has a personal Home. A
// second run changes nothing.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../db/free-port.ts';
import { createClient, type Client } from '../../helpers/client.ts';
import { answers, clusterRunning, startProcess, type RunningProcess } from '../../helpers/process.ts';

let dataDir: string;
let env: Record<string, string>;
let service: RunningProcess;
let client: Client;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-seed-'));
  await chmod(dataDir, 0o755);
  env = { DATA_DIR: dataDir, DATABASE_URL: '', S3_ENDPOINT: '', PORT: String(await freePort()), S3_PORT: String(await freePort()) };
  service = startProcess(process.execPath, ['main.ts'], env);
  await service.waitFor(() => answers(`http://127.0.0.1:${env.PORT}/readyz`), 'the service', 90_000);
  client = createClient(`http://127.0.0.1:${env.PORT}`);
}, 120_000);

afterAll(async () => {
  service.child.kill('SIGINT');
  await service.exited;
  await rm(dataDir, { recursive: true, force: true });
});

/** A served image is a processed variant: the seed uploads PNGs, lists and cards show WebP (contract part 18). */
async function isWebp(url: string): Promise<boolean> {
  const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
  return bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP';
}

describe('npm run seed beside a running service', () => {
  it('builds the demo world in the running service’s database and store, leaving both running', { timeout: 120_000 }, async () => {
    const seed = startProcess('npm', ['run', 'seed'], env);
    expect(await seed.exited, seed.output()).toBe(0);
    const output = seed.output();
    expect(output).toMatch(
      /Seeded 8 people with photos, 15 follows, 2 hubs, 8 posts \(2 with pictures\), \d+ votes, 6 discussion messages; default feed users @maria_k, @sofia_l, @tomas_h \(the running service's embedded PostgreSQL/,
    );
    expect(output).toContain('5550100001  Maria Kovacs (@maria_k)');
    expect(output).toMatch(/OTP_TEST_CODES='\+15550100001=\d{4},/);
    expect(output).not.toMatch(/kill|\n\s+at |GRAPHILE_ENV/);
    expect(clusterRunning(path.join(dataDir, 'pg'))).toBe(true);
    expect((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status).toBe(200);
    expect(service.problems()).toEqual([]);
  });

  it('gives a guest and a new user cards on Home, with real photos and pictures', async () => {
    const guest = await client.get('/posts');
    expect(guest.status).toBe(200);
    const cards = guest.body.data.items;
    expect(cards.length).toBeGreaterThanOrEqual(5);
    expect(new Set(cards.map((card: { feedContext: string }) => card.feedContext))).toEqual(new Set(['default_feed_user']));
    expect(new Set(cards.map((card: { author: { username: string } }) => card.author.username))).toEqual(
      new Set(['maria_k', 'sofia_l', 'tomas_h']),
    );
    for (const card of cards) expect(await isWebp(card.author.profilePhotoUrl), card.author.username).toBe(true);
    const pictures = cards.flatMap((card: { article: { media: { url: string }[] } | null }) => card.article?.media ?? []);
    expect(pictures).toHaveLength(2);
    for (const picture of pictures) expect(await isWebp(picture.url)).toBe(true);

    const newcomer = await client.post('/auth/anonymous/session', { deviceId: 'seed-test-device' });
    const home = await client.get('/posts', { token: newcomer.body.data.accessToken });
    expect(home.body.data.items.map((card: { id: string }) => card.id)).toEqual(cards.map((card: { id: string }) => card.id));
  });

  it('lets a seeded person sign in with the code in the service’s log, to a Home of their own', async () => {
    const phone = { phoneCountryCode: '+1', phoneNumber: '5550100002' };
    expect((await client.post('/auth/otp/request', phone)).status).toBe(200);
    let code: string | undefined;
    await service.waitFor(() => {
      code = /"phoneEnding":"02","devCode":"(\d{4})"/.exec(service.output())?.[1];
      return code !== undefined;
    }, 'the development code in the log');
    const session = await client.post('/auth/otp/verify', { ...phone, code });
    expect(session.status).toBe(200);
    const home = (await client.get('/posts', { token: session.body.data.accessToken })).body.data.items;
    // Daniel follows Maria and Lena and is in the book club: his Home is his own, not the guests',
    // and holds the club's members-only post.
    expect(home.filter((card: { feedContext: string }) => card.feedContext !== 'default_feed_user').length).toBeGreaterThan(3);
    expect(home.find((card: { sliderText: string }) => card.sliderText === 'Short books only?')?.feedContext).toBe('joined_hub_post');
  });

  it('changes nothing when run again', { timeout: 60_000 }, async () => {
    const before = (await client.get('/posts')).body.data.items.length;
    const again = startProcess('npm', ['run', 'seed'], env);
    expect(await again.exited, again.output()).toBe(0);
    expect(again.output()).toContain('seeded already');
    expect((await client.get('/posts')).body.data.items.length).toBe(before);
  });
});
