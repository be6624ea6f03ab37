// npm run seed: a small believable world: eight people with profile photos who follow each other,
// three of them default feed users (so a guest and a new user see cards on Home), two hubs with
// members and a conversation each, posts with sliders (public and hub-only) and pictures, and
// votes. Everything goes through the public HTTP API of an in-process server (uploads through
// signed URLs and their completion, as a phone does), so every rule applies; only the default feed
// users are set as the admin tooling sets them (app.add_default_feed_user, as app_admin).
//
// Where it writes: DATABASE_URL and S3_ENDPOINT when set; otherwise the embedded ones under
// DATA_DIR. When `npm start` runs on that folder, the seed uses its database and its S3 store as
// they are (the cluster found through its postmaster.pid, the store on S3_PORT) and never stops
// either; otherwise it starts them for the run and stops them after.
// Prints the seeded phone numbers and how to sign in as them. A problem is one line, exit 1.
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { loadConfig, StartupError, type Config } from '../config.ts';
import { createLogger } from '../logger.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { runningEmbeddedUrl } from '../db/embedded.ts';
import { createPools } from '../db/pools.ts';
import { createApp } from '../server/app.ts';
import { createServices } from '../server/services.ts';
import { openStorage, type OpenStorage } from '../server/uploads/open-storage.ts';
import { avatar, landscape } from './images.ts';

const code = '2468';
type Rgb = [number, number, number];
const people = [
  {
    fullName: 'Maria Kovacs',
    username: 'maria_k',
    colours: [
      [70, 130, 180],
      [250, 228, 206],
    ],
  },
  {
    fullName: 'Daniel Okafor',
    username: 'dan_okafor',
    colours: [
      [46, 139, 87],
      [141, 85, 36],
    ],
  },
  {
    fullName: 'Sofia Lindqvist',
    username: 'sofia_l',
    colours: [
      [205, 92, 92],
      [255, 236, 214],
    ],
  },
  {
    fullName: 'Arjun Mehta',
    username: 'arjun_m',
    colours: [
      [123, 104, 238],
      [198, 134, 66],
    ],
  },
  {
    fullName: 'Lena Fischer',
    username: 'lena_f',
    colours: [
      [218, 165, 32],
      [255, 224, 196],
    ],
  },
  {
    fullName: 'Tomás Herrera',
    username: 'tomas_h',
    colours: [
      [0, 128, 128],
      [224, 172, 105],
    ],
  },
  {
    fullName: 'Aiko Tanaka',
    username: 'aiko_t',
    colours: [
      [199, 21, 133],
      [255, 230, 210],
    ],
  },
  {
    fullName: 'Sam Whitfield',
    username: 'sam_w',
    colours: [
      [105, 105, 105],
      [241, 194, 125],
    ],
  },
].map((person, index) => ({ ...person, phoneCountryCode: '+1', phoneNumber: `555010${String(index + 1).padStart(4, '0')}` }));
const e164 = (person: (typeof people)[number]) => `${person.phoneCountryCode}${person.phoneNumber}`;
/** Whose public posts make the Home feed of guests and of users with no personal source. */
const defaultFeedUsers = [0, 2, 5];

const print = (line: string) => process.stdout.write(`${line}\n`);

/** The database: DATABASE_URL; the running service's embedded cluster (left running); or one started for the seed. */
async function openSeedDatabase(config: Config): Promise<{ ownerUrl: string; location: string; shared: boolean; database?: Database }> {
  const running = config.databaseUrl ? undefined : runningEmbeddedUrl(config.dataDir);
  if (running) return { ownerUrl: running, location: `the running service's embedded PostgreSQL in ${config.dataDir}`, shared: true };
  const database = await openDatabase(config);
  return { ownerUrl: database.ownerUrl, location: database.location, shared: false, database };
}

/** The object store: S3_ENDPOINT; the running service's embedded store on S3_PORT; or one started for the seed. */
async function openSeedStorage(config: Config, serviceRuns: boolean): Promise<OpenStorage> {
  if (config.s3.endpoint || !serviceRuns) return openStorage(config);
  const endpoint = `http://127.0.0.1:${config.s3.port}`;
  return openStorage({ ...config, s3: { ...config.s3, endpoint, publicUrl: endpoint } });
}

// The fields of response bodies the seed reads (the API's own shapes are in the OpenAPI document).
interface Data {
  accessToken: string;
  user: { id: string };
  nextStep: string;
  uploadId: string;
  uploadUrl: string;
  headers: Record<string, string>;
  assetId: string;
  hubId: string;
  invitations: { invitationId: string }[];
  items: { id: string }[];
  id: string;
}

async function seed(base: string, ownerUrl: string): Promise<string | undefined> {
  async function call(method: string, path: string, body?: unknown, token?: string): Promise<Data> {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as { success: boolean; data: Data; error?: { code: string; details?: unknown } };
    if (!json.success)
      throw new Error(`${method} ${path} answered ${response.status} ${json.error?.code} ${JSON.stringify(json.error?.details ?? {})}`);
    return json.data;
  }

  /** An image through the real upload flow: presign, PUT to the signed URL, complete with its checksum. */
  async function upload(token: string, purpose: 'profile_photo' | 'hub_photo' | 'post_image', bytes: Buffer): Promise<string> {
    const intent = await call('POST', '/uploads/presign', { purpose, contentType: 'image/png', contentLength: bytes.length }, token);
    const put = await fetch(intent.uploadUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: intent.headers }).catch(
      (error: Error) => {
        throw new StartupError(
          `the S3 store at ${new URL(intent.uploadUrl).host} cannot be reached (${error.message}): run the seed with the S3_PORT or S3_ENDPOINT the service uses`,
        );
      },
    );
    if (!put.ok) throw new Error(`the upload to ${new URL(intent.uploadUrl).host} answered ${put.status}`);
    const checksum = createHash('sha256').update(bytes).digest('hex');
    return (await call('POST', '/uploads/complete', { uploadId: intent.uploadId, purpose, checksum }, token)).assetId;
  }

  // Each person signs in with their phone, completes profile basics, a photo and contacts (level 4).
  const tokens: string[] = [];
  const ids: string[] = [];
  for (const person of people) {
    await call('POST', '/auth/otp/request', { phoneCountryCode: person.phoneCountryCode, phoneNumber: person.phoneNumber });
    const session = await call('POST', '/auth/otp/verify', {
      phoneCountryCode: person.phoneCountryCode,
      phoneNumber: person.phoneNumber,
      code,
    });
    const status = await call('GET', '/users/me/onboarding/status', undefined, session.accessToken);
    if (status.nextStep !== 'profile_basics' && person === people[0]) return undefined; // seeded already
    await call(
      'PUT',
      '/users/me/onboarding/profile-basics',
      { fullName: person.fullName, username: person.username, acceptTerms: true },
      session.accessToken,
    );
    const [background, tone] = person.colours as [Rgb, Rgb];
    const profileAssetId = await upload(session.accessToken, 'profile_photo', avatar(background, tone));
    await call('PUT', '/users/me/onboarding/media', { profileAssetId }, session.accessToken);
    await call('PUT', '/users/me/onboarding/contacts', undefined, session.accessToken);
    tokens.push(session.accessToken);
    ids.push(session.user.id);
  }
  const token = (i: number) => tokens[i] as string;

  // Default feed users, as `npm run admin -- default-feed-users add` makes them.
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    await owner.query('begin');
    await owner.query('set local role app_admin');
    for (const index of defaultFeedUsers) await owner.query('select app.add_default_feed_user($1)', [people[index]?.username]);
    await owner.query('commit');
  } finally {
    await owner.end();
  }

  // Follows: everyone follows Maria; a few more pairs.
  const follows = [
    [1, 0],
    [2, 0],
    [3, 0],
    [4, 0],
    [5, 0],
    [6, 0],
    [7, 0],
    [0, 1],
    [0, 2],
    [2, 3],
    [3, 2],
    [4, 5],
    [6, 7],
    [7, 6],
    [1, 4],
  ];
  for (const [from, to] of follows) await call('POST', `/users/${ids[to as number]}/follow`, undefined, token(from as number));

  // Two hubs: Maria's book club (four members), Arjun's running group (three).
  const hubs = [
    {
      owner: 0,
      name: 'Sunday Book Club',
      description: 'One book a month, argued about over coffee.',
      members: [1, 2, 5],
      picture: landscape([72, 61, 139], [139, 69, 19], [255, 239, 213]),
    },
    {
      owner: 3,
      name: 'Riverside Runners',
      description: 'Early runs along the river, all paces welcome.',
      members: [4, 6],
      picture: landscape([135, 206, 235], [34, 139, 34], [255, 215, 0]),
    },
  ];
  const hubIds: string[] = [];
  for (const hub of hubs) {
    const profileAssetId = await upload(token(hub.owner), 'hub_photo', hub.picture);
    const created = await call('POST', '/hubs', { name: hub.name, description: hub.description, profileAssetId }, token(hub.owner));
    hubIds.push(created.hubId);
    for (const member of hub.members) {
      const person = people[member] as (typeof people)[number];
      const invited = await call(
        'POST',
        `/hubs/${created.hubId}/invitations`,
        { invitees: [{ phoneCountryCode: person.phoneCountryCode, phoneNumber: person.phoneNumber }] },
        token(hub.owner),
      );
      await call('POST', `/hub-invitations/${invited.invitations[0]?.invitationId}/accept`, undefined, token(member));
    }
  }

  // Posts with sliders and pictures, and votes from people who can see them.
  const posts = [
    {
      author: 0,
      thoughtText: 'Four-day weeks would make most teams more productive, not less.',
      sliderText: 'Four-day work week?',
      slider: { leftLabel: 'Never', rightLabel: 'Yesterday' },
      visibility: 'public',
      votes: { 1: 'right', 2: 'strong_right', 3: 'neutral', 4: 'left', 6: 'right' },
    },
    {
      author: 2,
      thoughtText: 'Cities should close their centres to private cars on weekends.',
      sliderText: 'Car-free city centres?',
      slider: { leftLabel: 'Keep the cars', rightLabel: 'Close them' },
      visibility: 'public',
      votes: { 0: 'right', 3: 'left', 5: 'strong_left', 7: 'neutral' },
    },
    {
      author: 5,
      thoughtText: 'Pineapple belongs on pizza and I will not be taking questions.',
      sliderText: 'Pineapple on pizza?',
      slider: { leftLabel: 'Crime', rightLabel: 'Delicious' },
      visibility: 'public',
      votes: { 0: 'strong_left', 1: 'right', 2: 'left', 4: 'strong_right', 6: 'neutral', 7: 'left' },
    },
    {
      author: 0,
      thoughtText: 'Next month: something under 300 pages, please.',
      sliderText: 'Short books only?',
      slider: { leftLabel: 'Doorstoppers', rightLabel: 'Novellas' },
      visibility: 'private_locked_hub',
      hubIds: [0],
      votes: { 1: 'right', 2: 'neutral', 5: 'strong_right' },
    },
    {
      author: 3,
      thoughtText: 'Moving the Saturday run to 6:30 to beat the heat.',
      sliderText: 'Earlier start?',
      slider: { leftLabel: 'Too early', rightLabel: 'Perfect' },
      visibility: 'public_hub',
      hubIds: [1],
      votes: { 4: 'right', 6: 'left' },
    },
    { author: 7, thoughtText: 'Phones should stay out of classrooms entirely.', visibility: 'public', votes: {} },
    {
      author: 2,
      thoughtText: 'The view from the ridge this morning. Worth the 5 am alarm.',
      sliderText: 'Sunrise hikes?',
      slider: { leftLabel: 'Sleep in', rightLabel: 'Every weekend' },
      visibility: 'public',
      picture: landscape([255, 160, 122], [85, 107, 47], [255, 250, 205]),
      votes: { 0: 'right', 4: 'strong_right' },
    },
    {
      author: 5,
      thoughtText: 'Our community garden got its first harvest in.',
      visibility: 'public',
      picture: landscape([100, 149, 237], [107, 142, 35], [255, 255, 224]),
      votes: {},
    },
  ];
  let voteCount = 0;
  for (const post of posts) {
    const { author, votes, hubIds: hubIndexes, picture, ...body } = post;
    const article = picture ? { kind: 'media', assetIds: [await upload(token(author), 'post_image', picture)] } : undefined;
    const created = await call(
      'POST',
      '/posts',
      { ...body, ...(article ? { article } : {}), ...(hubIndexes ? { hubIds: hubIndexes.map((i) => hubIds[i]) } : {}) },
      token(author),
    );
    for (const [voter, position] of Object.entries(votes)) {
      await call('POST', `/posts/${created.id}/vote`, { position }, token(Number(voter)));
      voteCount += 1;
    }
  }

  // A conversation in each hub's discussion of its post: two top-level messages and a reply.
  const conversations = [
    {
      hub: 0,
      messages: [
        [1, 'Yes please, last month took me three weeks.'],
        [5, 'Short is fine, but no self-help.'],
        [0, 'Agreed, novels only.', 0],
      ],
    },
    {
      hub: 1,
      messages: [
        [4, '6:30 works if we keep the coffee stop.'],
        [6, 'I can only make 7 on Saturdays.'],
        [3, 'Let us try 6:30 for a month and see.', 1],
      ],
    },
  ] as const;
  let messageCount = 0;
  for (const conversation of conversations) {
    const hubId = hubIds[conversation.hub] as string;
    const member = conversation.messages[0][0];
    const [discussion] = (await call('GET', `/hubs/${hubId}/discussions`, undefined, token(member))).items;
    const path = `/hubs/${hubId}/discussions/${discussion?.id}/messages`;
    const written: string[] = [];
    for (const [author, text, replyTo] of conversation.messages) {
      const parentMessageId = replyTo === undefined ? undefined : written[replyTo];
      written.push((await call('POST', path, { text, ...(parentMessageId ? { parentMessageId } : {}) }, token(author))).id);
      messageCount += 1;
    }
  }
  const pictures = posts.filter((post) => post.picture).length;
  const feedUsers = defaultFeedUsers.map((index) => `@${people[index]?.username}`).join(', ');
  return (
    `Seeded ${people.length} people with photos, ${follows.length} follows, ${hubs.length} hubs, ${posts.length} posts (${pictures} with pictures), ` +
    `${voteCount} votes, ${messageCount} discussion messages; default feed users ${feedUsers}`
  );
}

const config = (() => {
  try {
    return loadConfig({ LOG_LEVEL: 'warn', ...process.env });
  } catch (error) {
    if (!(error instanceof StartupError)) throw error;
    print(error.message);
    process.exit(1);
  }
})();
for (const person of people) config.otpTestCodes.set(e164(person), code);
const log = createLogger(config.logLevel);
let exitCode = 0;
const stops: (() => Promise<void>)[] = [];
try {
  const database = await openSeedDatabase(config);
  const shared = database.shared;
  if (database.database) stops.push(() => (database.database as Database).stop());
  const objects = await openSeedStorage(config, shared);
  stops.push(() => objects.stop());
  const pools = createPools(database.ownerUrl, { apiMax: 4, graphqlMax: 1, workerMax: 1 });
  stops.push(() => pools.end());
  // No notification hub and no worker: the service (when it runs) delivers and runs what the seed writes.
  const services = await createServices(config, log, pools, objects.storage);
  stops.push(() => services.graphql.release());
  const server = createApp(services).listen(0, '127.0.0.1');
  stops.push(() => new Promise((resolve) => server.close(() => resolve())));
  await new Promise((resolve) => server.once('listening', resolve));
  const summary = await seed(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, database.ownerUrl);
  print(summary ? `${summary} (${database.location}).` : `This database is seeded already (${database.location}).`);
  print('\nSign in with these phones (country code +1):');
  for (const person of people) print(`  ${person.phoneNumber}  ${person.fullName} (@${person.username})`);
  if (shared) print('\nThe running service writes each sign-in code to its log ("development OTP"). For the fixed code');
  else print('\nIn development the service writes each sign-in code to its log ("development OTP"). For the fixed code');
  print(
    `${code} instead, start the service with:\n  OTP_TEST_CODES='${people.map((person) => `${e164(person)}=${code}`).join(',')}' npm start`,
  );
} catch (error) {
  exitCode = 1;
  print(error instanceof StartupError ? error.message : `seed failed: ${(error as Error).message}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
process.exit(exitCode);
