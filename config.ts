// Process configuration from the environment (README "Configuration"). Read once at startup.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A problem the operator can fix (a setting, a busy port, an unreachable database): one line, exit 1. */
export class StartupError extends Error {}

export interface Config {
  port: number;
  /** Prometheus metrics on their own port; undefined: off. */
  metricsPort: number | undefined;
  /** The address the metrics port listens on (loopback unless METRICS_HOST says otherwise). */
  metricsHost: string;
  /** false: this process expects the schema current (a separate `npm run migrate` ran it). */
  migrateOnStart: boolean;
  /** How a migration waits for table locks (db/lock-retry.ts): each try's lock_timeout, and how long it keeps trying. */
  migrationLocks: { lockTimeoutMs: number; maxWaitSeconds: number };
  dataDir: string;
  databaseUrl: string | undefined;
  /**
   * A PgBouncer in transaction mode in front of DATABASE_URL's database (DATABASE_POOLER_URL: host,
   * port and database; the login roles and passwords are DATABASE_URL's, db/roles.ts). When set, the
   * API and internal GraphQL pools connect through it (db/pools.ts); everything else stays direct.
   */
  databasePoolerUrl: string | undefined;
  /**
   * The bounds of every API transaction (db/request-transaction.ts): statement_timeout
   * (API_STATEMENT_TIMEOUT_MS) and lock_timeout (API_LOCK_TIMEOUT_MS), set in the transaction so
   * they hold behind a pooler. Hitting either answers 503 with Retry-After.
   */
  apiTimeouts: { statementTimeoutMs: number; lockTimeoutMs: number };
  /**
   * Streaming replicas (DATABASE_REPLICA_URLS, owner-form URLs as DATABASE_URL's) that serve
   * read-only GETs of the API (db/replicas.ts); empty: every read goes to the primary.
   */
  databaseReplicaUrls: string[];
  /** REPLICA_MAX_LAG_MS: a replica lagging more is skipped until it catches up. */
  replicaMaxLagMillis: number;
  jwtSecret: string;
  /**
   * The keys that seal and open vote ballots (BALLOT_KEY, server/votes/ballots.ts): the first seals, all
   * open. Development: one key kept in a local secret file, as JWT_SECRET's.
   */
  ballotKeys: { id: string; key: Buffer }[];
  /** The tallier's batch: at least this many sealed ballots of one post and scope are opened together (BALLOT_BATCH, k). */
  ballotBatch: number;
  /** NODE_ENV=production: nothing embedded, every setting of `requiredInProduction` present. */
  production: boolean;
  otpTestCodes: Map<string, string>;
  otpSender: OtpSenderSetting;
  idp: { projectId: string; issuer: string; jwksUrl: string };
  s3: {
    endpoint: string | undefined;
    bucket: string;
    region: string;
    accessKeyId: string;
    secretAccessKey: string;
    forcePathStyle: boolean;
    /** Base of the signed upload and download URLs handed to clients (devices must reach it). */
    publicUrl: string;
    /** The embedded store (no S3_ENDPOINT): bind address and port. */
    host: string;
    port: number;
  };
  adminApiToken: string | undefined;
  /** Express's trust-proxy setting: which proxies' X-Forwarded-For entries give the client address. */
  trustProxy: boolean | number | string;
  publicWebBaseUrl: string;
  /** The web side of links (server/web): replaceable files and the app-link associations. */
  web: {
    /** A folder whose files replace the shipped ones (logo.png, legal/terms.html, legal/privacy.html); undefined: the shipped ones. */
    dir: string | undefined;
    /** iOS apps that open these links (`<team id>.<bundle id>`): apple-app-site-association. */
    iosAppIds: string[];
    /** The Android app that opens them, and the SHA-256 fingerprints of its signing certificates: assetlinks.json. */
    android: { package: string; certSha256: string[] } | undefined;
  };
  /** The notification stream (contract section 9): a `: ping` comment every pingSeconds, closed after maxSeconds. */
  sse: { pingSeconds: number; maxSeconds: number };
  /** A worker silent this long is dead and its jobs are taken back (worker/liveness.ts). */
  workerDeadAfterSeconds: number;
  /** Overrides of the per-user write limits (server/http/write-limits.ts), by name. */
  writeLimits: Record<string, { max: number; windowSeconds: number }>;
  /**
   * The update gate (server/http/client-version.ts): the oldest app version served per platform
   * (MIN_CLIENT_VERSIONS; null: every version) and where an older app is sent to update
   * (CLIENT_UPDATE_URLS).
   */
  clientVersions: { minimum: ClientPlatforms<string | null>; updateUrls: ClientPlatforms<string | null> };
  termsVersion: string;
  logLevel: string;
  /** Push through FCM HTTP v1 (contract 12); undefined: no service account, push is off. */
  fcm: FcmConfig | undefined;
  /** The worker's image processing (worker/tasks/uploads/images, docs/photos.md). */
  images: ImageConfig;
}

/** How uploaded images are decoded: in decoder processes the worker owns, each bounded. */
export interface ImageConfig {
  /** IMAGE_HEIC: decode HEIC with libheif's tools when installed (off: presign refuses image/heic). */
  heic: boolean;
  /** IMAGE_CONCURRENCY: decoder processes per worker process, one image at a time each (default: the cores but one, at least one: a core stays with requests). */
  concurrency: number;
  /** IMAGE_MEMORY_MB: resident memory of one decoder process past which it is killed and its image refused. */
  memoryMb: number;
  /** IMAGE_TIMEOUT_MS: how long one image may take before its decoder process is killed and the image refused. */
  timeoutMs: number;
  /** IMAGE_BACKFILL_PER_MINUTE: images uploaded before processing existed that the worker queues each minute. */
  backfillPerMinute: number;
}

/** The service account of FCM_SERVICE_ACCOUNT_FILE, where to send, and the push worker's tuning. */
export interface FcmConfig {
  projectId: string;
  clientEmail: string;
  privateKey: string;
  tokenUri: string;
  apiUrl: string;
  /** Messages in flight at once (keep-alive connections to FCM). */
  concurrency: number;
  /** A claimed delivery returns to the queue after this long if its worker dies; a request times out in a third of it. */
  leaseSeconds: number;
  /** First retry delay after a 429 or 5xx; each retry doubles it (Retry-After wins when longer). */
  retryBaseSeconds: number;
}

function positiveInteger(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new StartupError(`${name} must be a positive whole number (got "${raw}")`);
  return Number(raw);
}

function onOff(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === 'on' || raw === '1') return true;
  if (raw === 'false' || raw === 'off' || raw === '0') return false;
  throw new StartupError(`${name} must be true or false (got "${raw}")`);
}

function imageSettings(env: Env): ImageConfig {
  const memoryMb = positiveInteger('IMAGE_MEMORY_MB', env.IMAGE_MEMORY_MB, 512);
  // Below this a decoder process (Node and sharp, about 70 MB at rest) cannot hold a photo at all.
  if (memoryMb < 128) throw new StartupError(`IMAGE_MEMORY_MB must be at least 128 (got "${env.IMAGE_MEMORY_MB}")`);
  return {
    heic: onOff('IMAGE_HEIC', env.IMAGE_HEIC, true),
    concurrency: positiveInteger('IMAGE_CONCURRENCY', env.IMAGE_CONCURRENCY, Math.max(1, os.availableParallelism() - 1)),
    memoryMb,
    timeoutMs: positiveInteger('IMAGE_TIMEOUT_MS', env.IMAGE_TIMEOUT_MS, 30_000),
    backfillPerMinute: positiveInteger('IMAGE_BACKFILL_PER_MINUTE', env.IMAGE_BACKFILL_PER_MINUTE, 60),
  };
}

/** FCM_SERVICE_ACCOUNT_FILE: a Google service-account JSON key with the fields FCM needs. */
function fcmConfig(env: NodeJS.ProcessEnv): FcmConfig | undefined {
  const file = env.FCM_SERVICE_ACCOUNT_FILE;
  if (!file) return undefined;
  let account: Record<string, unknown>;
  try {
    account = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new StartupError(
      `FCM_SERVICE_ACCOUNT_FILE: cannot read a JSON service account from ${file} (${(error as Error).message.split('\n')[0]})`,
    );
  }
  const missing = ['project_id', 'client_email', 'private_key', 'token_uri'].filter(
    (key) => typeof account[key] !== 'string' || account[key] === '',
  );
  if (missing.length > 0) throw new StartupError(`FCM_SERVICE_ACCOUNT_FILE: ${file} lacks ${missing.join(', ')}`);
  return {
    projectId: account.project_id as string,
    clientEmail: account.client_email as string,
    privateKey: account.private_key as string,
    tokenUri: httpUrl('token_uri of FCM_SERVICE_ACCOUNT_FILE', account.token_uri as string, undefined) as string,
    apiUrl: httpUrl('FCM_API_URL', env.FCM_API_URL, 'https://fcm.googleapis.com'),
    concurrency: positiveInteger('PUSH_CONCURRENCY', env.PUSH_CONCURRENCY, 64),
    leaseSeconds: positiveSeconds('PUSH_LEASE_SECONDS', env.PUSH_LEASE_SECONDS, 30),
    retryBaseSeconds: positiveSeconds('PUSH_RETRY_BASE_SECONDS', env.PUSH_RETRY_BASE_SECONDS, 1),
  };
}

/** Where sign-in codes go (OTP_SENDER, OTP_SENDER_MODULE): server/auth/otp.ts builds the sender. */
export type OtpSenderSetting =
  | { kind: 'log' }
  | { kind: 'module'; path: string }
  | { kind: 'twilio'; accountSid: string; authToken: string; from: string; apiUrl: string };

type Env = Record<string, string | undefined>;

/** The app platforms of X-Client-Version (`<ios|android>/<major.minor.patch>`). */
export const clientPlatforms = ['ios', 'android'] as const;
export type ClientPlatform = (typeof clientPlatforms)[number];
export type ClientPlatforms<T> = Record<ClientPlatform, T>;
/** A version as the app sends it: major.minor.patch, each a whole number without leading zeros. */
export const clientVersionPattern = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/;

/**
 * `platform:value` pairs, comma-separated, each platform at most once (MIN_CLIENT_VERSIONS,
 * CLIENT_UPDATE_URLS); a value may itself hold colons (a URL).
 */
function platformPairs(
  name: string,
  raw: string | undefined,
  valid: (value: string) => boolean,
  what: string,
): ClientPlatforms<string | null> {
  const values: ClientPlatforms<string | null> = { ios: null, android: null };
  for (const entry of (raw ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const colon = entry.indexOf(':');
    const platform = entry.slice(0, colon);
    const value = entry.slice(colon + 1).trim();
    if (colon < 0 || !(clientPlatforms as readonly string[]).includes(platform) || !valid(value)) {
      throw new StartupError(`${name} entries are <ios|android>:<${what}>, comma-separated (got "${entry}")`);
    }
    if (values[platform as ClientPlatform] !== null) throw new StartupError(`${name} names ${platform} twice`);
    values[platform as ClientPlatform] = value;
  }
  return values;
}

function clientVersionSettings(env: Env): Config['clientVersions'] {
  // Bounded as the OpenAPI document states them (32 and 1024 characters).
  const minimum = platformPairs(
    'MIN_CLIENT_VERSIONS',
    env.MIN_CLIENT_VERSIONS,
    (v) => v.length <= 32 && clientVersionPattern.test(v),
    'major.minor.patch',
  );
  const updateUrls = platformPairs(
    'CLIENT_UPDATE_URLS',
    env.CLIENT_UPDATE_URLS,
    (v) => v.length <= 1024 && URL.canParse(v) && /^[a-z][a-z0-9+.-]*:$/.test(new URL(v).protocol),
    'absolute URL of at most 1024 characters',
  );
  for (const platform of clientPlatforms) {
    if (minimum[platform] !== null && updateUrls[platform] === null) {
      throw new StartupError(`MIN_CLIENT_VERSIONS sets ${platform} but CLIENT_UPDATE_URLS gives no ${platform} URL to send older apps to`);
    }
  }
  return { minimum, updateUrls };
}

/**
 * What the service cannot run without when NODE_ENV=production, where nothing is embedded and no
 * development default applies. Checked in one place (loadConfig): one line naming every missing
 * setting, exit 1. A setting production needs is one line here.
 */
export const requiredInProduction: { setting: string; present(env: Env): boolean }[] = [
  { setting: 'DATABASE_URL', present: (env) => Boolean(env.DATABASE_URL) },
  { setting: 'S3_ENDPOINT', present: (env) => Boolean(env.S3_ENDPOINT) },
  { setting: 'S3_BUCKET', present: (env) => Boolean(env.S3_BUCKET) },
  { setting: 'S3_ACCESS_KEY_ID', present: (env) => Boolean(env.S3_ACCESS_KEY_ID) },
  { setting: 'S3_SECRET_ACCESS_KEY', present: (env) => Boolean(env.S3_SECRET_ACCESS_KEY) },
  { setting: 'JWT_SECRET', present: (env) => Boolean(env.JWT_SECRET) },
  { setting: 'BALLOT_KEY', present: (env) => Boolean(env.BALLOT_KEY) },
  { setting: 'OTP_SENDER=twilio or OTP_SENDER_MODULE', present: (env) => Boolean(env.OTP_SENDER || env.OTP_SENDER_MODULE) },
];

function checkProduction(env: Env): void {
  const missing = requiredInProduction.filter((required) => !required.present(env)).map((required) => required.setting);
  if (missing.length > 0) throw new StartupError(`NODE_ENV=production needs ${missing.join(', ')} (nothing is embedded in production)`);
}

function otpSenderSetting(env: Env): OtpSenderSetting {
  const sender = env.OTP_SENDER || undefined;
  const module = env.OTP_SENDER_MODULE || undefined;
  if (sender && module) throw new StartupError('set OTP_SENDER or OTP_SENDER_MODULE, not both');
  if (module) return { kind: 'module', path: path.resolve(module) };
  if (sender === undefined) return { kind: 'log' };
  if (sender !== 'twilio')
    throw new StartupError(`OTP_SENDER must be twilio (got "${sender}"); OTP_SENDER_MODULE plugs in any other sender`);
  const missing = ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_FROM'].filter((name) => !env[name]);
  if (missing.length > 0) throw new StartupError(`OTP_SENDER=twilio needs ${missing.join(', ')}`);
  return {
    kind: 'twilio',
    accountSid: env.TWILIO_ACCOUNT_SID as string,
    authToken: env.TWILIO_AUTH_TOKEN as string,
    from: env.TWILIO_FROM as string,
    apiUrl: httpUrl('TWILIO_API_URL', env.TWILIO_API_URL, 'https://api.twilio.com'),
  };
}

// A development secret kept under the data folder, created on first use (mode 0600), so every
// process started on the same data folder agrees on it. Production sets the variable instead.
export function localSecret(dataDir: string, name: string): string {
  const file = path.join(dataDir, 'secrets', name);
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    try {
      writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    return readFileSync(file, 'utf8').trim();
  }
}

/**
 * BALLOT_KEY: `id:key[,id:key...]`, each key 32 bytes as 64 hex digits or base64; the first seals
 * new ballots, every one opens the ballots it sealed (keep an old key until none of its ballots is
 * pending). Ids: letters, digits, `_`, `-`, up to 32.
 */
export function parseBallotKeys(raw: string): { id: string; key: Buffer }[] {
  const keys = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const colon = entry.indexOf(':');
      const id = colon < 0 ? '' : entry.slice(0, colon);
      const text = entry.slice(colon + 1);
      if (!/^[A-Za-z0-9_-]{1,32}$/.test(id))
        throw new StartupError('BALLOT_KEY: each key is id:key, the id made of letters, digits, _ or - (up to 32)');
      const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
      if (key.length !== 32 || (!/^[0-9a-fA-F]{64}$/.test(text) && key.toString('base64').replace(/=+$/, '') !== text.replace(/=+$/, ''))) {
        throw new StartupError(`BALLOT_KEY: key "${id}" must be 32 bytes, as 64 hex digits or base64`);
      }
      return { id, key };
    });
  if (keys.length === 0) throw new StartupError('BALLOT_KEY: no key');
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new StartupError('BALLOT_KEY: two keys share an id');
  return keys;
}

/** BALLOT_BATCH (k): at least 2, default 5. */
function ballotBatch(raw: string | undefined): number {
  const k = positiveInteger('BALLOT_BATCH', raw, 5);
  if (k < 2) throw new StartupError("BALLOT_BATCH must be at least 2 (a batch of one is one voter's position)");
  return k;
}

function positiveSeconds(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new StartupError(`${name} must be a positive number of seconds (got "${raw}")`);
  return seconds;
}

/** WRITE_LIMITS: `name=max/seconds` pairs, comma-separated (`posts=30/3600,comments=120/3600`). */
function parseWriteLimits(raw: string | undefined): Record<string, { max: number; windowSeconds: number }> {
  const limits: Record<string, { max: number; windowSeconds: number }> = {};
  for (const entry of (raw ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const match = /^([a-z_]+)=(\d+)\/(\d+)$/.exec(entry);
    if (!match || Number(match[2]) < 1 || Number(match[3]) < 1) {
      throw new StartupError(`WRITE_LIMITS entries are name=max/seconds with positive integers (got "${entry}")`);
    }
    limits[match[1] as string] = { max: Number(match[2]), windowSeconds: Number(match[3]) };
  }
  return limits;
}

function portNumber(name: string, raw: string | undefined, fallback: number): number;
function portNumber(name: string, raw: string | undefined, fallback: undefined): number | undefined;
function portNumber(name: string, raw: string | undefined, fallback: number | undefined): number | undefined {
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535)
    throw new StartupError(`${name} must be a port number from 1 to 65535 (got "${raw}")`);
  return port;
}

function httpUrl(name: string, raw: string | undefined, fallback: string): string;
function httpUrl(name: string, raw: string | undefined, fallback: undefined): string | undefined;
function httpUrl(name: string, raw: string | undefined, fallback: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return fallback;
  // At most 1024 characters: the links and signed URLs made from it stay within the API's documented URL length.
  if (raw.length > 1024 || !URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) {
    throw new StartupError(`${name} must be an http(s) URL of at most 1024 characters (got "${raw.slice(0, 200)}")`);
  }
  return raw.replace(/\/$/, '');
}

/** TERMS_VERSION: the version of the terms the app shows, at most 64 characters (GET /auth/login-config). */
function termsVersion(raw: string | undefined): string {
  if (raw === undefined || raw === '') return '2026-11-01';
  if (raw.length > 64) throw new StartupError('TERMS_VERSION must be at most 64 characters');
  return raw;
}

function databaseUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!URL.canParse(raw) || !/^postgres(ql)?:$/.test(new URL(raw).protocol)) {
    throw new StartupError('DATABASE_URL must be a postgres:// URL');
  }
  return raw;
}

/** DATABASE_REPLICA_URLS: comma-separated postgres:// URLs of hot standbys; their login roles are derived as DATABASE_URL's. */
function replicaUrls(raw: string | undefined, primary: string | undefined): string[] {
  const urls = (raw ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  for (const url of urls) {
    if (!URL.canParse(url) || !/^postgres(ql)?:$/.test(new URL(url).protocol)) {
      throw new StartupError(
        `DATABASE_REPLICA_URLS must list postgres:// URLs (got "${url.replace(/\/\/[^@]*@/, '//…@')}": credentials hidden)`,
      );
    }
  }
  if (urls.length > 0 && !primary)
    throw new StartupError('DATABASE_REPLICA_URLS needs DATABASE_URL (replicas of the embedded database are not supported)');
  return urls;
}

/** DATABASE_POOLER_URL: where the pooler listens; the credentials are DATABASE_URL's (derived per role), never its own. */
function poolerUrl(raw: string | undefined, ownerUrl: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!URL.canParse(raw) || !/^postgres(ql)?:$/.test(new URL(raw).protocol))
    throw new StartupError('DATABASE_POOLER_URL must be a postgres:// URL');
  if (!ownerUrl)
    throw new StartupError(
      'DATABASE_POOLER_URL needs DATABASE_URL (the pooler fronts that database; its roles and passwords come from it)',
    );
  const url = new URL(raw);
  if (url.username || url.password) {
    throw new StartupError(
      'DATABASE_POOLER_URL takes no user or password: the API logs in as authenticator with the password DATABASE_URL derives',
    );
  }
  return raw;
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** TRUST_PROXY: unset or `false` trusts no proxy; `true`, a hop count, or Express's list of addresses, subnets and names (`loopback`, `uniquelocal`...). */
function parseTrustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}

function webSettings(env: Env): Config['web'] {
  const list = (raw: string | undefined) =>
    (raw ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  const iosAppIds = list(env.IOS_APP_IDS);
  for (const id of iosAppIds) {
    if (!/^[A-Z0-9]{10}\.[A-Za-z0-9.-]+$/.test(id))
      throw new StartupError(`IOS_APP_IDS must list <team id>.<bundle id> values such as ABCDE12345.com.example.opinion (got "${id}")`);
  }
  const androidPackage = env.ANDROID_APP_PACKAGE || undefined;
  const certSha256 = list(env.ANDROID_CERT_SHA256).map((fingerprint) => {
    const hex = fingerprint.replaceAll(':', '').toUpperCase();
    if (!/^[0-9A-F]{64}$/.test(hex))
      throw new StartupError(`ANDROID_CERT_SHA256 must list SHA-256 fingerprints (32 bytes in hex, colons optional; got "${fingerprint}")`);
    return hex.match(/../g)?.join(':') as string;
  });
  if (androidPackage !== undefined && !/^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/.test(androidPackage)) {
    throw new StartupError(`ANDROID_APP_PACKAGE must be an Android package name such as com.example.opinion (got "${androidPackage}")`);
  }
  if ((androidPackage === undefined) !== (certSha256.length === 0))
    throw new StartupError('ANDROID_APP_PACKAGE and ANDROID_CERT_SHA256 go together: set both or neither');
  return {
    dir: env.WEB_DIR ? path.resolve(env.WEB_DIR) : undefined,
    iosAppIds,
    android: androidPackage === undefined ? undefined : { package: androidPackage, certSha256 },
  };
}

function parseOtpTestCodes(raw: string | undefined): Map<string, string> {
  const codes = new Map<string, string>();
  for (const pair of (raw ?? '').split(',')) {
    const [phone, code] = pair.split('=').map((s) => s.trim());
    if (phone && code) codes.set(phone, code);
  }
  return codes;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const production = env.NODE_ENV === 'production';
  if (production) checkProduction(env);
  const logLevel = env.LOG_LEVEL || (env.NODE_ENV === 'test' ? 'silent' : 'info');
  if (!logLevels.includes(logLevel)) throw new StartupError(`LOG_LEVEL must be one of ${logLevels.join(', ')} (got "${logLevel}")`);
  const projectId = env.IDP_PROJECT_ID ?? 'opinion-dev';
  const dataDir = path.resolve(env.DATA_DIR ?? '.data');
  const port = portNumber('PORT', env.PORT, 3000);
  const s3Endpoint = httpUrl('S3_ENDPOINT', env.S3_ENDPOINT, undefined);
  const s3Port = portNumber('S3_PORT', env.S3_PORT, 3001);
  return {
    port,
    metricsPort: portNumber('METRICS_PORT', env.METRICS_PORT, undefined),
    metricsHost: env.METRICS_HOST || '127.0.0.1',
    migrateOnStart: env.MIGRATE_ON_START !== 'false',
    migrationLocks: {
      lockTimeoutMs: positiveInteger('MIGRATION_LOCK_TIMEOUT_MS', env.MIGRATION_LOCK_TIMEOUT_MS, 200),
      maxWaitSeconds: positiveInteger('MIGRATION_LOCK_WAIT_SECONDS', env.MIGRATION_LOCK_WAIT_SECONDS, 900),
    },
    dataDir,
    databaseUrl: databaseUrl(env.DATABASE_URL),
    databaseReplicaUrls: replicaUrls(env.DATABASE_REPLICA_URLS, env.DATABASE_URL),
    replicaMaxLagMillis: positiveInteger('REPLICA_MAX_LAG_MS', env.REPLICA_MAX_LAG_MS, 2000),
    databasePoolerUrl: poolerUrl(env.DATABASE_POOLER_URL, env.DATABASE_URL),
    apiTimeouts: {
      statementTimeoutMs: positiveInteger('API_STATEMENT_TIMEOUT_MS', env.API_STATEMENT_TIMEOUT_MS, 5000),
      lockTimeoutMs: positiveInteger('API_LOCK_TIMEOUT_MS', env.API_LOCK_TIMEOUT_MS, 2000),
    },
    jwtSecret: env.JWT_SECRET || localSecret(dataDir, 'jwt'),
    ballotKeys: parseBallotKeys(env.BALLOT_KEY || `local:${localSecret(dataDir, 'ballot')}`),
    ballotBatch: ballotBatch(env.BALLOT_BATCH),
    production,
    otpTestCodes: parseOtpTestCodes(env.OTP_TEST_CODES),
    otpSender: otpSenderSetting(env),
    idp: {
      projectId,
      issuer: env.IDP_ISSUER ?? `https://securetoken.google.com/${projectId}`,
      jwksUrl: env.IDP_JWKS_URL ?? 'https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com',
    },
    s3: {
      endpoint: s3Endpoint,
      bucket: env.S3_BUCKET ?? 'opinion-uploads',
      region: env.S3_REGION ?? 'us-east-1',
      accessKeyId: env.S3_ACCESS_KEY_ID ?? 'S3RVER',
      secretAccessKey: env.S3_SECRET_ACCESS_KEY ?? 'S3RVER',
      forcePathStyle: (env.S3_FORCE_PATH_STYLE ?? 'true') !== 'false',
      publicUrl: httpUrl('S3_PUBLIC_URL', env.S3_PUBLIC_URL, s3Endpoint ?? `http://127.0.0.1:${s3Port}`),
      host: env.S3_HOST || '127.0.0.1',
      port: s3Port,
    },
    adminApiToken: env.ADMIN_API_TOKEN || undefined,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    publicWebBaseUrl: httpUrl('PUBLIC_WEB_BASE_URL', env.PUBLIC_WEB_BASE_URL, `http://localhost:${port}`),
    web: webSettings(env),
    sse: {
      pingSeconds: positiveSeconds('SSE_PING_SECONDS', env.SSE_PING_SECONDS, 25),
      maxSeconds: positiveSeconds('SSE_MAX_SECONDS', env.SSE_MAX_SECONDS, 3600),
    },
    workerDeadAfterSeconds: positiveSeconds('WORKER_DEAD_AFTER_SECONDS', env.WORKER_DEAD_AFTER_SECONDS, 10),
    writeLimits: parseWriteLimits(env.WRITE_LIMITS),
    clientVersions: clientVersionSettings(env),
    termsVersion: termsVersion(env.TERMS_VERSION),
    logLevel,
    fcm: fcmConfig(env),
    images: imageSettings(env),
  };
}
