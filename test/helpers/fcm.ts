// A stand-in for Firebase Cloud Messaging HTTP v1 and Google's OAuth 2 token endpoint, on loopback:
// a real HTTP server speaking their wire formats, for the tests and the push benchmark alike.
//   * POST /token: the JWT-bearer grant (RFC 7523). The assertion must be RS256-signed by the
//     service account's key (the stand-in makes the key pair and writes the service-account file),
//     with iss = client_email, scope firebase.messaging, aud = token_uri, iat not in the future, exp
//     after now and at most an hour after iat. Answers { access_token, expires_in, token_type } or
//     400 invalid_grant like Google.
//   * POST /v1/projects/{project_id}/messages:send: needs a live access token it issued (401
//     UNAUTHENTICATED otherwise, or while `rejectCredentials` is set), checks the message (a token,
//     string-only data: 400 INVALID_ARGUMENT like FCM), then answers what is scripted for that
//     registration token (see `script`), by default 200 { name }. Error bodies are FCM's.
// It records every message it accepted, with when it answered, and counts token exchanges.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import jwt from 'jsonwebtoken';

export const fcmScope = 'https://www.googleapis.com/auth/firebase.messaging';

/** A scripted answer: 200, or an FCM error (Retry-After in seconds for 429/503). */
export type StandInAnswer =
  | 200
  | {
      status: 404 | 400 | 403 | 429 | 503 | 500 | 401;
      retryAfter?: number;
      error?:
        | 'UNREGISTERED'
        | 'INVALID_ARGUMENT'
        | 'INVALID_PAYLOAD'
        | 'SENDER_ID_MISMATCH'
        | 'QUOTA_EXCEEDED'
        | 'UNAVAILABLE'
        | 'INTERNAL'
        | 'UNAUTHENTICATED';
    };

export interface AcceptedMessage {
  message: Record<string, any>;
  at: number;
}

export interface FcmStandIn {
  url: string;
  projectId: string;
  /** The service-account JSON file to point FCM_SERVICE_ACCOUNT_FILE at. */
  serviceAccountFile: string;
  /** Environment for a worker: FCM_SERVICE_ACCOUNT_FILE and FCM_API_URL. */
  env: Record<string, string>;
  accepted: AcceptedMessage[];
  /** Every send request, whatever the answer: registration token and status. */
  requests: { token: string; status: number; at: number }[];
  tokenExchanges: number;
  /** Answers for one registration token, used in order; then 200. */
  script(token: string, answers: StandInAnswer[]): void;
  /** While true, every send answers 401 (revoked credentials). */
  rejectCredentials: boolean;
  /** Lifetime of issued access tokens, seconds (default 3600). */
  tokenLifetimeSeconds: number;
  /** Milliseconds every send waits before it answers (a slower FCM; default 0). */
  delayMs: number;
  close(): Promise<void>;
}

const fcmErrors = {
  UNREGISTERED: [404, 'Requested entity was not found.', 'NOT_FOUND'],
  INVALID_ARGUMENT: [400, 'The registration token is not a valid FCM registration token', 'INVALID_ARGUMENT'],
  INVALID_PAYLOAD: [400, "Invalid value at 'message.data[0].value' (TYPE_STRING), 3", 'INVALID_ARGUMENT'],
  SENDER_ID_MISMATCH: [403, 'SenderId mismatch', 'PERMISSION_DENIED'],
  QUOTA_EXCEEDED: [429, "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute'.", 'RESOURCE_EXHAUSTED'],
  UNAVAILABLE: [503, 'The service is currently unavailable.', 'UNAVAILABLE'],
  INTERNAL: [500, 'Internal error encountered.', 'INTERNAL'],
  UNAUTHENTICATED: [
    401,
    'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    'UNAUTHENTICATED',
  ],
} as const;

function errorBody(code: keyof typeof fcmErrors): { status: number; body: unknown } {
  const [status, message, grpcStatus] = fcmErrors[code];
  const details: unknown[] =
    code === 'UNAUTHENTICATED'
      ? []
      : [
          {
            '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError',
            errorCode: code === 'INVALID_PAYLOAD' ? 'INVALID_ARGUMENT' : code,
          },
        ];
  if (code === 'INVALID_ARGUMENT')
    details.push({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'message.token', description: 'Invalid registration token' }],
    });
  return { status, body: { error: { code: status, message, status: grpcStatus, ...(details.length ? { details } : {}) } } };
}

const defaultError: Record<number, keyof typeof fcmErrors> = {
  404: 'UNREGISTERED',
  400: 'INVALID_ARGUMENT',
  403: 'SENDER_ID_MISMATCH',
  429: 'QUOTA_EXCEEDED',
  503: 'UNAVAILABLE',
  500: 'INTERNAL',
  401: 'UNAUTHENTICATED',
};

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFcmStandIn(options: { port?: number; dir?: string } = {}): Promise<FcmStandIn> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const projectId = `stand-in-${randomBytes(3).toString('hex')}`;
  const clientEmail = `push@${projectId}.iam.gserviceaccount.com`;
  const issued = new Map<string, number>();
  const scripts = new Map<string, StandInAnswer[]>();
  const standIn: FcmStandIn = {
    url: '',
    projectId,
    serviceAccountFile: '',
    env: {},
    accepted: [],
    requests: [],
    tokenExchanges: 0,
    rejectCredentials: false,
    tokenLifetimeSeconds: 3600,
    delayMs: 0,
    script(token, answers) {
      scripts.set(token, [...answers]);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
      res.end(JSON.stringify(body));
    };
    void (async () => {
      const text = await readBody(req);
      if (req.method === 'POST' && req.url === '/token') {
        const form = new URLSearchParams(text);
        if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
          return send(400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' });
        try {
          const claims = jwt.verify(form.get('assertion') ?? '', publicKey, {
            algorithms: ['RS256'],
            issuer: clientEmail,
            audience: `${standIn.url}/token`,
          }) as jwt.JwtPayload;
          const now = Math.floor(Date.now() / 1000);
          if (
            claims.scope !== fcmScope ||
            typeof claims.iat !== 'number' ||
            claims.iat > now + 5 ||
            typeof claims.exp !== 'number' ||
            claims.exp - claims.iat > 3600
          ) {
            return send(400, { error: 'invalid_scope', error_description: 'Invalid JWT claims' });
          }
        } catch (error) {
          return send(400, { error: 'invalid_grant', error_description: `Invalid JWT Signature. (${(error as Error).message})` });
        }
        standIn.tokenExchanges += 1;
        const accessToken = `ya29.${randomBytes(24).toString('base64url')}`;
        issued.set(accessToken, Date.now() + standIn.tokenLifetimeSeconds * 1000);
        return send(200, { access_token: accessToken, expires_in: standIn.tokenLifetimeSeconds, token_type: 'Bearer' });
      }
      if (req.method === 'POST' && req.url === `/v1/projects/${projectId}/messages:send`) {
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        const expires = bearer ? issued.get(bearer) : undefined;
        let message: Record<string, any> | undefined;
        try {
          message = (JSON.parse(text) as { message?: Record<string, any> }).message;
        } catch {
          message = undefined;
        }
        const token = typeof message?.token === 'string' ? message.token : '';
        if (standIn.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, standIn.delayMs));
        const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
          standIn.requests.push({ token, status, at: Date.now() });
          send(status, body, headers);
        };
        if (standIn.rejectCredentials || expires === undefined || expires < Date.now()) {
          const { status, body } = errorBody('UNAUTHENTICATED');
          return answer(status, body);
        }
        const data = message?.data as Record<string, unknown> | undefined;
        if (!message || !token || (data && Object.values(data).some((value) => typeof value !== 'string'))) {
          const { status, body } = errorBody('INVALID_PAYLOAD');
          return answer(status, body);
        }
        const scripted = scripts.get(token)?.shift();
        if (scripted !== undefined && scripted !== 200) {
          const { status, body } = errorBody(scripted.error ?? (defaultError[scripted.status] as keyof typeof fcmErrors));
          return answer(status, body, scripted.retryAfter === undefined ? {} : { 'retry-after': String(scripted.retryAfter) });
        }
        standIn.accepted.push({ message, at: Date.now() });
        return answer(200, { name: `projects/${projectId}/messages/0:${Date.now()}%${randomBytes(8).toString('hex')}` });
      }
      // For a benchmark that runs the stand-in in a process of its own: what it accepted (taken away).
      if (req.method === 'POST' && req.url === '/_stand-in/take') {
        const taken = standIn.accepted.splice(0).map((accepted) => ({
          notificationId: accepted.message.data?.notificationId ?? null,
          token: accepted.message.token,
          at: accepted.at,
        }));
        standIn.requests.splice(0);
        return send(200, { accepted: taken, tokenExchanges: standIn.tokenExchanges });
      }
      send(404, { error: { code: 404, message: 'Not found', status: 'NOT_FOUND' } });
    })();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  standIn.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  standIn.serviceAccountFile = path.join(options.dir ?? os.tmpdir(), `fcm-service-account-${projectId}.json`);
  writeFileSync(
    standIn.serviceAccountFile,
    JSON.stringify({
      type: 'service_account',
      project_id: projectId,
      private_key_id: randomBytes(20).toString('hex'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
      client_email: clientEmail,
      client_id: '1',
      token_uri: `${standIn.url}/token`,
    }),
    { mode: 0o600 },
  );
  standIn.env = { FCM_SERVICE_ACCOUNT_FILE: standIn.serviceAccountFile, FCM_API_URL: standIn.url };
  return standIn;
}
