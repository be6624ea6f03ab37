// npm run seed: a small believable world on the configured database (DATABASE_URL, or the embedded
// one under DATA_DIR: stop `npm start` first, they share the data folder): eight people, follows,
// two hubs with members, posts with sliders (public and hub-only), votes and hub discussion
// messages. Everything goes through the public HTTP API of an in-process server, so every rule
// applies exactly as for a phone.
// Prints the seeded phone numbers and the OTP_TEST_CODES line that lets you sign in as them.
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { openDatabase } from '../db/database.ts';
import { createPools } from '../db/pools.ts';
import { roleUrl } from '../db/roles.ts';
import { createApp } from '../server/app.ts';
import { createServices } from '../server/services.ts';
import { openStorage } from '../server/uploads/open-storage.ts';

const code = '2468';
const people = [
  { fullName: 'Maria Kovacs', username: 'maria_k' },
  { fullName: 'Daniel Okafor', username: 'dan_okafor' },
  { fullName: 'Sofia Lindqvist', username: 'sofia_l' },
  { fullName: 'Arjun Mehta', username: 'arjun_m' },
  { fullName: 'Lena Fischer', username: 'lena_f' },
  { fullName: 'Tomás Herrera', username: 'tomas_h' },
  { fullName: 'Aiko Tanaka', username: 'aiko_t' },
  { fullName: 'Sam Whitfield', username: 'sam_w' },
].map((person, index) => ({ ...person, phoneCountryCode: '+1', phoneNumber: `555010${String(index + 1).padStart(4, '0')}` }));
const e164 = (person: (typeof people)[number]) => `${person.phoneCountryCode}${person.phoneNumber}`;

const config = loadConfig({ LOG_LEVEL: 'warn', ...process.env });
for (const person of people) config.otpTestCodes.set(e164(person), code);
const log = createLogger(config.logLevel);
const database = await openDatabase(config);
const objects = await openStorage(config);
const pools = createPools(database.ownerUrl);
const services = await createServices(config, log, pools, objects.storage);
await services.notificationHub.start(roleUrl(database.ownerUrl, 'authenticator'));
const server = createApp(services).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;

const print = (line: string) => process.stdout.write(`${line}\n`);

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

async function call(method: string, path: string, body?: unknown, token?: string): Promise<Data> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as { success: boolean; data: Data; error?: { code: string } };
  if (!json.success) throw new Error(`${method} ${path}: ${response.status} ${json.error?.code}`);
  return json.data;
}

async function hubPhoto(token: string): Promise<string> {
  // A 1x1 PNG.
  const bytes = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d49444154789c63f8cfc0f01f0005000201e5272ade0000000049454e44ae426082', 'hex');
  const intent = await call('POST', '/uploads/presign', { purpose: 'hub_photo', contentType: 'image/png', contentLength: bytes.length }, token);
  const put = await fetch(intent.uploadUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: intent.headers });
  if (!put.ok) throw new Error(`upload to ${new URL(intent.uploadUrl).host} failed: ${put.status}`);
  const checksum = createHash('sha256').update(bytes).digest('hex');
  return (await call('POST', '/uploads/complete', { uploadId: intent.uploadId, purpose: 'hub_photo', checksum }, token)).assetId;
}

try {
  // Each person signs in with their phone, completes profile basics, media and contacts (level 4).
  const tokens: string[] = [];
  const ids: string[] = [];
  for (const person of people) {
    await call('POST', '/auth/otp/request', { phoneCountryCode: person.phoneCountryCode, phoneNumber: person.phoneNumber });
    const session = await call('POST', '/auth/otp/verify', { phoneCountryCode: person.phoneCountryCode, phoneNumber: person.phoneNumber, code });
    const status = await call('GET', '/users/me/onboarding/status', undefined, session.accessToken);
    if (status.nextStep !== 'profile_basics' && person === people[0]) {
      print('This database is seeded already.');
      throw Object.assign(new Error('seeded'), { seeded: true });
    }
    await call('PUT', '/users/me/onboarding/profile-basics', { fullName: person.fullName, username: person.username, acceptTerms: true }, session.accessToken);
    await call('PUT', '/users/me/onboarding/media', {}, session.accessToken);
    await call('PUT', '/users/me/onboarding/contacts', undefined, session.accessToken);
    tokens.push(session.accessToken);
    ids.push(session.user.id);
  }
  const token = (i: number) => tokens[i] as string;

  // Follows: everyone follows Maria; a few more pairs.
  const follows = [[1, 0], [2, 0], [3, 0], [4, 0], [5, 0], [6, 0], [7, 0], [0, 1], [0, 2], [2, 3], [3, 2], [4, 5], [6, 7], [7, 6], [1, 4]];
  for (const [from, to] of follows) await call('POST', `/users/${ids[to as number]}/follow`, undefined, token(from as number));

  // Two hubs: Maria's book club (four members), Arjun's running group (three).
  const hubs = [
    { owner: 0, name: 'Sunday Book Club', description: 'One book a month, argued about over coffee.', members: [1, 2, 5] },
    { owner: 3, name: 'Riverside Runners', description: 'Early runs along the river, all paces welcome.', members: [4, 6] },
  ];
  const hubIds: string[] = [];
  for (const hub of hubs) {
    const profileAssetId = await hubPhoto(token(hub.owner));
    const created = await call('POST', '/hubs', { name: hub.name, description: hub.description, profileAssetId }, token(hub.owner));
    hubIds.push(created.hubId);
    for (const member of hub.members) {
      const person = people[member] as (typeof people)[number];
      const invited = await call('POST', `/hubs/${created.hubId}/invitations`, { invitees: [{ phoneCountryCode: person.phoneCountryCode, phoneNumber: person.phoneNumber }] }, token(hub.owner));
      await call('POST', `/hub-invitations/${invited.invitations[0]?.invitationId}/accept`, undefined, token(member));
    }
  }

  // Posts with sliders, and votes from people who can see them.
  const posts = [
    { author: 0, thoughtText: 'Four-day weeks would make most teams more productive, not less.', sliderText: 'Four-day work week?', slider: { leftLabel: 'Never', rightLabel: 'Yesterday' }, visibility: 'public', votes: { 1: 'right', 2: 'strong_right', 3: 'neutral', 4: 'left', 6: 'right' } },
    { author: 2, thoughtText: 'Cities should close their centres to private cars on weekends.', sliderText: 'Car-free city centres?', slider: { leftLabel: 'Keep the cars', rightLabel: 'Close them' }, visibility: 'public', votes: { 0: 'right', 3: 'left', 5: 'strong_left', 7: 'neutral' } },
    { author: 5, thoughtText: 'Pineapple belongs on pizza and I will not be taking questions.', sliderText: 'Pineapple on pizza?', slider: { leftLabel: 'Crime', rightLabel: 'Delicious' }, visibility: 'public', votes: { 0: 'strong_left', 1: 'right', 2: 'left', 4: 'strong_right', 6: 'neutral', 7: 'left' } },
    { author: 0, thoughtText: 'Next month: something under 300 pages, please.', sliderText: 'Short books only?', slider: { leftLabel: 'Doorstoppers', rightLabel: 'Novellas' }, visibility: 'private_locked_hub', hubIds: [0], votes: { 1: 'right', 2: 'neutral', 5: 'strong_right' } },
    { author: 3, thoughtText: 'Moving the Saturday run to 6:30 to beat the heat.', sliderText: 'Earlier start?', slider: { leftLabel: 'Too early', rightLabel: 'Perfect' }, visibility: 'public_hub', hubIds: [1], votes: { 4: 'right', 6: 'left' } },
    { author: 7, thoughtText: 'Phones should stay out of classrooms entirely.', visibility: 'public', votes: {} },
  ];
  for (const post of posts) {
    const { author, votes, hubIds: hubIndexes, ...body } = post;
    const created = await call('POST', '/posts', { ...body, ...(hubIndexes ? { hubIds: hubIndexes.map((i) => hubIds[i]) } : {}) }, token(author));
    for (const [voter, position] of Object.entries(votes)) await call('POST', `/posts/${created.id}/vote`, { position }, token(Number(voter)));
  }

  // A conversation in each hub's discussion of its post: two top-level messages and a reply.
  const conversations = [
    { hub: 0, messages: [[1, 'Yes please, last month took me three weeks.'], [5, 'Short is fine, but no self-help.'], [0, 'Agreed, novels only.', 0]] },
    { hub: 1, messages: [[4, '6:30 works if we keep the coffee stop.'], [6, 'I can only make 7 on Saturdays.'], [3, 'Let us try 6:30 for a month and see.', 1]] },
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
  print(`Seeded ${people.length} people, ${follows.length} follows, ${hubs.length} hubs, ${posts.length} posts, ${messageCount} discussion messages (${database.location}).`);
} catch (error) {
  if (!(error as { seeded?: boolean }).seeded) throw error;
} finally {
  await services.notificationHub.stop();
  await new Promise((resolve) => server.close(resolve));
  await services.graphql.release();
  await pools.end();
  await objects.stop();
  await database.stop();
}

print('\nSign in with these phones (country code +1) and the code below:');
for (const person of people) print(`  ${person.phoneNumber}  ${person.fullName} (@${person.username})`);
print(`\nStart the service with fixed codes for them:\n  OTP_TEST_CODES='${people.map((person) => `${e164(person)}=${code}`).join(',')}' npm start`);
print('(without it, development writes each sign-in code to the server log.)');
