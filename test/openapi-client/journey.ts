// A mobile client's first minutes, written against the client generated from the OpenAPI document
// (openapi-typescript types for openapi-fetch). test/http/openapi/openapi.test.ts generates `./api.ts` from
// the served document, type-checks this file against it with tsc (so a response or error detail
// typed too weakly, an id that is not a string, a missing field, fails the build) and runs it
// against the server. Nothing here is typed by hand: every type comes from the document.
import createClient from 'openapi-fetch';
import type { components, paths } from './api.ts';

type Session = components['schemas']['Session'];
type PostCard = components['schemas']['PostCard'];

export interface JourneyResult {
  logoUrl: string;
  session: Session;
  refusedFields: Record<string, string>;
  retryAfterSeconds: number;
  requestId: string | null;
  cards: PostCard[];
}

export async function journey(
  baseUrl: string,
  deviceId: string,
  phone: { phoneCountryCode: string; phoneNumber: string },
): Promise<JourneyResult> {
  const api = createClient<paths>({ baseUrl: `${baseUrl}/api/v1` });

  const config = await api.GET('/auth/login-config', { params: { header: { 'X-Request-Id': 'journey-1' } } });
  if (!config.data) throw new Error('login-config failed');
  const logoUrl: string = config.data.data.logoUrl;
  const requestId = config.response.headers.get('X-Request-Id');

  const anonymous = await api.POST('/auth/anonymous/session', { body: { deviceId } });
  if (!anonymous.data) throw new Error('anonymous session failed');
  const session: Session = anonymous.data.data;
  const level: number = session.user.accessLevel;
  const headers = { authorization: `${session.tokenType} ${session.accessToken}` };

  // A refused body names each field it refuses: details.fields is typed.
  const basics = await api.PUT('/users/me/onboarding/profile-basics', {
    headers,
    body: { fullName: 'Jo', username: 'x!', acceptTerms: true },
  });
  let refusedFields: Record<string, string> = {};
  if (basics.error && basics.error.error.code === 'VALIDATION_FAILED') refusedFields = basics.error.error.details.fields ?? {};

  // A second code for the same phone within 60 s is refused with the seconds to wait: typed too.
  await api.POST('/auth/otp/request', { body: phone });
  const again = await api.POST('/auth/otp/request', { body: phone });
  let retryAfterSeconds = 0;
  if (again.error && again.error.error.code === 'RATE_LIMITED') retryAfterSeconds = again.error.error.details.retryAfterSeconds;

  // Home as this new user: post cards, each with its author and vote summary (or null).
  const home = await api.GET('/posts', { headers, params: { query: { limit: 10 } } });
  if (!home.data) throw new Error(`Home failed at level ${level}`);
  const cards: PostCard[] = home.data.data.items;
  for (const card of cards) {
    const id: string = card.id;
    const author: string | null = card.author.username;
    const total: number | undefined = card.voteSummary?.totalVotes;
    void [id, author, total];
  }
  return { logoUrl, session, refusedFields, retryAfterSeconds, requestId, cards };
}
