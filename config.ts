// Process configuration from the environment, read once at startup. Every environment variable the
// service reads is one entry of settingDefinitions below: how its text becomes a value (and the
// StartupError a bad value stops the start with) and its row of the README's "Configuration" table,
// which `npm run docs:config` writes from them (test/docs/config/config.test.ts fails when it is stale).
// loadConfig puts the settings together, with the rules that join two of them.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

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

/** Where sign-in codes go (OTP_SENDER, OTP_SENDER_MODULE): server/auth/otp.ts builds the sender. */
export type OtpSenderSetting =
  | { kind: 'log' }
  | { kind: 'module'; path: string }
  | { kind: 'twilio'; accountSid: string; authToken: string; from: string; apiUrl: string };

type Env = Record<string, string | undefined>;

// ---------------------------------------------------------------------------------------------
// The checks of one variable's text. Unset and empty are the same (a `fallback`) unless a
// setting says otherwise; a value that cannot be used throws a StartupError naming the variable.

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

function positiveSeconds(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new StartupError(`${name} must be a positive number of seconds (got "${raw}")`);
  return seconds;
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

const isPostgresUrl = (raw: string) => URL.canParse(raw) && /^postgres(ql)?:$/.test(new URL(raw).protocol);

/** A comma-separated list, entries trimmed, empty entries dropped. */
const list = (raw: string | undefined) =>
  (raw ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

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
  for (const entry of list(raw)) {
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

/**
 * BALLOT_KEY: `id:key[,id:key...]`, each key 32 bytes as 64 hex digits or base64; the first seals
 * new ballots, every one opens the ballots it sealed (keep an old key until none of its ballots is
 * pending). Ids: letters, digits, `_`, `-`, up to 32.
 */
export function parseBallotKeys(raw: string): { id: string; key: Buffer }[] {
  const keys = list(raw).map((entry) => {
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

/** WRITE_LIMITS: `name=max/seconds` pairs, comma-separated (`posts=30/3600,comments=120/3600`). */
function parseWriteLimits(raw: string | undefined): Record<string, { max: number; windowSeconds: number }> {
  const limits: Record<string, { max: number; windowSeconds: number }> = {};
  for (const entry of list(raw)) {
    const match = /^([a-z_]+)=(\d+)\/(\d+)$/.exec(entry);
    if (!match || Number(match[2]) < 1 || Number(match[3]) < 1) {
      throw new StartupError(`WRITE_LIMITS entries are name=max/seconds with positive integers (got "${entry}")`);
    }
    limits[match[1] as string] = { max: Number(match[2]), windowSeconds: Number(match[3]) };
  }
  return limits;
}

/** TRUST_PROXY: unset or `false` trusts no proxy; `true`, a hop count, or Express's list of addresses, subnets and names (`loopback`, `uniquelocal`...). */
function parseTrustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}

function parseOtpTestCodes(raw: string | undefined): Map<string, string> {
  const codes = new Map<string, string>();
  for (const pair of (raw ?? '').split(',')) {
    const [phone, code] = pair.split('=').map((s) => s.trim());
    if (phone && code) codes.set(phone, code);
  }
  return codes;
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

// ---------------------------------------------------------------------------------------------
// The settings: every environment variable the service reads, once, with its README row.

/** One environment variable: how its text becomes a value, and its row of the README's table (npm run docs:config). */
export interface Setting<T> {
  /** What the value is (markdown): `port`, `whole number`, `http(s) URL`... */
  type: string;
  /** The value when the variable is unset (markdown). */
  default: string;
  /** What it does (markdown). */
  description: string;
  /** The value of the variable's text (undefined: unset); throws a StartupError naming the variable. */
  parse(name: string, raw: string | undefined): T;
}

const code = (value: string | number | boolean) => `\`${value}\``;

/** A setting whose parse is given as is. */
const setting = <T>(type: string, shown: string, description: string, parse: (name: string, raw: string | undefined) => T): Setting<T> => ({
  type,
  default: shown,
  description,
  parse,
});
/** Text as set, unset or empty: `fallback` (an empty value counts as unset). */
const text = (fallback: string | undefined, description: string, shown = fallback === undefined ? 'unset' : code(fallback)) =>
  setting('text', shown, description, (_, raw) => raw || fallback);
/** Text as set, empty included; unset: `fallback`. */
const textOrEmpty = (fallback: string, description: string, shown = code(fallback)) =>
  setting('text', shown, description, (_, raw) => raw ?? fallback);
const port = (fallback: number, description: string) =>
  setting('port', code(fallback), description, (name, raw) => portNumber(name, raw, fallback));
const wholeNumber = (fallback: number, description: string, shown = code(fallback)) =>
  setting('whole number ≥ 1', shown, description, (name, raw) => positiveInteger(name, raw, fallback));
const seconds = (fallback: number, description: string) =>
  setting('seconds > 0', code(fallback), description, (name, raw) => positiveSeconds(name, raw, fallback));
/** An http(s) URL without its trailing slash; unset: `fallback` (undefined: a default made from other settings). */
const url = (fallback: string | undefined, description: string, shown = fallback === undefined ? 'unset' : code(fallback)) =>
  setting('http(s) URL', shown, description, (name, raw) =>
    fallback === undefined ? httpUrl(name, raw, undefined) : httpUrl(name, raw, fallback),
  );
const postgresUrl = (shown: string, description: string) =>
  setting('postgres:// URL', shown, description, (name, raw) => {
    if (!raw) return undefined;
    if (!isPostgresUrl(raw)) throw new StartupError(`${name} must be a postgres:// URL`);
    return raw;
  });

const settingDefinitions = {
  PORT: port(3000, 'HTTP port (every interface)'),
  METRICS_PORT: setting('port', 'unset (off)', 'port of the Prometheus metrics (`/metrics`), never the public port', (name, raw) =>
    portNumber(name, raw, undefined),
  ),
  METRICS_HOST: text('127.0.0.1', 'address the metrics port listens on (`0.0.0.0` for a Prometheus on another host or container)'),
  MIGRATE_ON_START: setting(
    '`false` or anything else',
    code(true),
    '`false`: the process only checks the schema (`/readyz`); run `npm run migrate` once instead',
    (_, raw) => raw !== 'false',
  ),
  MIGRATION_LOCK_TIMEOUT_MS: wholeNumber(
    200,
    'how long one try of a migration step waits for a table lock, in milliseconds (requests arriving meanwhile wait behind it at most this long); a try that times out is rolled back and retried ([docs/database.md](docs/database.md))',
  ),
  MIGRATION_LOCK_WAIT_SECONDS: wholeNumber(
    900,
    'how long a migration keeps retrying a step behind a long transaction (a backup, a report) before it stops with one line naming the process that holds the lock',
  ),
  DATABASE_URL: postgresUrl(
    'embedded PostgreSQL under `.data/pg`',
    "PostgreSQL 15+ connection of the **owner** role (runs migrations). The API and worker log in as `authenticator` and `app_worker`, whose passwords are derived from this URL's credentials and set at startup (`db/roles.ts`); the owner must be a superuser or have `CREATEROLE` and `BYPASSRLS`",
  ),
  DATABASE_REPLICA_URLS: setting(
    'postgres:// URLs, comma-separated',
    'unset (every read on the primary)',
    "PostgreSQL streaming replicas (hot standbys of `DATABASE_URL`'s server), in the same owner form as `DATABASE_URL` (the API logs in there as `authenticator` with the same derived password). Read-only `GET`s of a signed-in session go to its replica once that replica has replayed past the session's last request on the primary, so a session always sees its own writes and never goes back in time; writes, votes, membership transitions, the notification stream, `/readyz` and the worker always use the primary ([docs/deployment.md](docs/deployment.md#read-replicas))",
    (name, raw) => {
      const urls = list(raw);
      for (const url of urls) {
        if (!isPostgresUrl(url))
          throw new StartupError(`${name} must list postgres:// URLs (got "${url.replace(/\/\/[^@]*@/, '//…@')}": credentials hidden)`);
      }
      return urls;
    },
  ),
  REPLICA_MAX_LAG_MS: wholeNumber(
    2000,
    'a replica further behind than this many milliseconds (or unreachable) takes no reads until it catches up; with no usable replica everything reads from the primary',
  ),
  DATABASE_POOLER_URL: postgresUrl(
    'unset: every pool connects to `DATABASE_URL`',
    "a PgBouncer (1.18+) in **transaction** mode in front of `DATABASE_URL`'s database, as `postgres://host:port/database` with no user or password: the API and internal GraphQL pools log in through it as `authenticator` with the password `DATABASE_URL` derives (give the pooler that password, or an `auth_query`). The worker, migrations and the live notifications' connections stay on `DATABASE_URL` ([docs/deployment.md](docs/deployment.md#beyond-one-database-server))",
  ),
  API_STATEMENT_TIMEOUT_MS: wholeNumber(
    5000,
    '`statement_timeout` of every API transaction, in milliseconds (set in the transaction, so it holds behind a pooler); a statement that hits it answers `503 SERVICE_UNAVAILABLE` with `Retry-After: 1`',
  ),
  API_LOCK_TIMEOUT_MS: wholeNumber(
    2000,
    "`lock_timeout` of every API transaction, in milliseconds: a request waiting longer for a lock (a migration's, a long report's) answers `503` with `Retry-After: 1` instead of queueing",
  ),
  NODE_ENV: setting(
    '`production`, `test` or unset',
    'unset (development)',
    '`production`: nothing is embedded, and the service refuses to start without `DATABASE_URL`, the S3 settings, `JWT_SECRET`, `BALLOT_KEY` and an OTP sender (one line naming what is missing)',
    (_, raw) => raw,
  ),
  JWT_SECRET: text(undefined, 'HS256 key of access tokens', 'a random secret kept in `.data/secrets/jwt`'),
  BALLOT_KEY: setting(
    '`id:key`, comma-separated',
    '`local:` and a random key kept in `.data/secrets/ballot`',
    "keys sealing vote positions (AES-256-GCM; the database never sees them): each key 32 bytes as 64 hex digits or base64; the first seals, every one opens what it sealed (rotate by putting a new key first; drop an old one once none of its ballots is pending). Keep it out of the database's backups ([docs/vote-anonymity.md](docs/vote-anonymity.md))",
    (_, raw) => (raw ? parseBallotKeys(raw) : undefined),
  ),
  BALLOT_BATCH: setting(
    'whole number ≥ 2',
    code(5),
    "the tallier's batch `k`: sealed ballots of a post and scope are opened into the counters at least `k` at a time",
    (name, raw) => {
      const k = positiveInteger(name, raw, 5);
      if (k < 2) throw new StartupError(`${name} must be at least 2 (a batch of one is one voter's position)`);
      return k;
    },
  ),
  OTP_TEST_CODES: setting(
    '`+E164=code`, comma-separated',
    'empty',
    'test phone numbers that receive nothing and accept their configured code (every other OTP rule still applies)',
    (_, raw) => parseOtpTestCodes(raw),
  ),
  OTP_SENDER: text(
    undefined,
    "`twilio`: sign-in codes go by SMS through Twilio's Messages API (the `TWILIO_*` settings). Production needs this or `OTP_SENDER_MODULE`",
    'unset: development writes codes to the log',
  ),
  TWILIO_ACCOUNT_SID: text(undefined, 'the Twilio account', 'none (required with `OTP_SENDER=twilio`)'),
  TWILIO_AUTH_TOKEN: text(undefined, "the Twilio account's auth token", 'none (required with `OTP_SENDER=twilio`)'),
  TWILIO_FROM: text(
    undefined,
    'the sender: an E.164 number or a Messaging Service SID (`MG...`)',
    'none (required with `OTP_SENDER=twilio`)',
  ),
  TWILIO_API_URL: url('https://api.twilio.com', "base URL of Twilio's API (a stand-in for tests and staging)"),
  OTP_SENDER_MODULE: text(
    undefined,
    'instead of `OTP_SENDER`: path of a module whose default export implements `OtpSender` (`send(phoneE164, code): Promise<void>`, see `server/auth/otp-delivery.ts`)',
  ),
  IDP_PROJECT_ID: textOrEmpty('opinion-dev', 'identity-provider project: the required `aud`'),
  IDP_ISSUER: setting('text', '`https://securetoken.google.com/<IDP_PROJECT_ID>`', 'the required `iss`', (_, raw) => raw),
  IDP_JWKS_URL: textOrEmpty(
    'https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com',
    'JSON Web Key Set of the provider (cached; refetched when a token names an unknown `kid`, at most every 30 s)',
    "Google's secure-token key set",
  ),
  S3_ENDPOINT: url(
    undefined,
    'object storage for uploads (an S3-compatible store; the bucket must exist)',
    'embedded S3-compatible store under `.data/s3`',
  ),
  S3_BUCKET: textOrEmpty('opinion-uploads', 'the bucket of uploads'),
  S3_REGION: textOrEmpty('us-east-1', "the store's region"),
  S3_ACCESS_KEY_ID: textOrEmpty('S3RVER', "the store's access key id"),
  S3_SECRET_ACCESS_KEY: textOrEmpty('S3RVER', "the store's secret access key"),
  S3_FORCE_PATH_STYLE: setting(
    '`false` or anything else',
    code(true),
    '`false`: virtual-hosted-style addresses (`bucket.host`) instead of path-style',
    (_, raw) => (raw ?? 'true') !== 'false',
  ),
  S3_PUBLIC_URL: url(
    undefined,
    'base of the signed upload/download URLs given to clients: the address devices reach the store at (at most 1024 characters, as every URL setting)',
    '`S3_ENDPOINT`, or `http://127.0.0.1:<S3_PORT>`',
  ),
  S3_HOST: text('127.0.0.1', 'where the embedded store listens (`0.0.0.0` for devices on the network)'),
  S3_PORT: port(3001, "the embedded store's port"),
  ADMIN_API_TOKEN: text(undefined, "bearer token of the internal tooling's admin role", 'unset (internal GraphQL admin access off)'),
  TRUST_PROXY: setting(
    '`true`, a hop count, or a list',
    'unset: trust no proxy',
    "Express's trust-proxy setting: `true`, a hop count, or addresses, subnets and names (`loopback`, `uniquelocal`, `10.0.0.0/8`, comma-separated) of the proxies whose `X-Forwarded-For` entry is the client address for per-address limits. Unset, the socket's address counts (behind an unlisted proxy, all clients share the proxy's)",
    (_, raw) => parseTrustProxy(raw),
  ),
  PUBLIC_WEB_BASE_URL: url(
    undefined,
    'base of share links, invite links, legal pages and the logo: the address phones reach this service at (the service serves those pages itself)',
    '`http://localhost:<PORT>`',
  ),
  WEB_DIR: setting(
    'folder',
    'unset: the files shipped in `web/`',
    'a folder whose `logo.png`, `legal/terms.html` and `legal/privacy.html` replace the shipped ones (each file on its own)',
    (_, raw) => (raw ? path.resolve(raw) : undefined),
  ),
  IOS_APP_IDS: setting(
    '`<team id>.<bundle id>`, comma-separated',
    'unset (no iOS app claims the links)',
    'the iOS apps that open share and invite links (`/.well-known/apple-app-site-association`)',
    (name, raw) => {
      const ids = list(raw);
      for (const id of ids) {
        if (!/^[A-Z0-9]{10}\.[A-Za-z0-9.-]+$/.test(id))
          throw new StartupError(`${name} must list <team id>.<bundle id> values such as ABCDE12345.com.example.opinion (got "${id}")`);
      }
      return ids;
    },
  ),
  ANDROID_APP_PACKAGE: setting(
    'Android package name',
    'unset (no Android app claims the links)',
    'the Android app that opens share and invite links (`/.well-known/assetlinks.json`); needs `ANDROID_CERT_SHA256`',
    (name, raw) => {
      const androidPackage = raw || undefined;
      if (androidPackage !== undefined && !/^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/.test(androidPackage)) {
        throw new StartupError(`${name} must be an Android package name such as com.example.opinion (got "${androidPackage}")`);
      }
      return androidPackage;
    },
  ),
  ANDROID_CERT_SHA256: setting(
    'SHA-256 fingerprints, comma-separated',
    'unset',
    "the fingerprints of the Android app's signing certificates (32 bytes in hex, colons optional); needs `ANDROID_APP_PACKAGE`",
    (name, raw) =>
      list(raw).map((fingerprint) => {
        const hex = fingerprint.replaceAll(':', '').toUpperCase();
        if (!/^[0-9A-F]{64}$/.test(hex))
          throw new StartupError(`${name} must list SHA-256 fingerprints (32 bytes in hex, colons optional; got "${fingerprint}")`);
        return hex.match(/../g)?.join(':') as string;
      }),
  ),
  TERMS_VERSION: setting('text, at most 64 characters', code('2026-11-01'), 'terms version recorded with profile basics', (name, raw) => {
    if (raw === undefined || raw === '') return '2026-11-01';
    if (raw.length > 64) throw new StartupError(`${name} must be at most 64 characters`);
    return raw;
  }),
  SSE_PING_SECONDS: seconds(25, 'seconds between `: ping` comments on `GET /notifications/stream`'),
  SSE_MAX_SECONDS: seconds(3600, 'the server closes each notification stream after this many seconds'),
  WRITE_LIMITS: setting(
    '`name=count/seconds`, comma-separated',
    'the defaults of [docs/security.md](docs/security.md)',
    'per-user write limits (`posts=30/3600,comments=120/3600`)',
    (_, raw) => parseWriteLimits(raw),
  ),
  MIN_CLIENT_VERSIONS: setting(
    '`<ios|android>:<major.minor.patch>`, comma-separated',
    'unset: every app version is served',
    'the oldest app version served per platform, `ios:2.1.0,android:2.0.3` (either or both). An app whose `X-Client-Version` is older gets `426 CLIENT_UPDATE_REQUIRED` on every operation but `GET /auth/login-config`, which lists these ([docs/api.md](docs/api.md))',
    // Bounded as the OpenAPI document states them (32 characters).
    (name, raw) => platformPairs(name, raw, (v) => v.length <= 32 && clientVersionPattern.test(v), 'major.minor.patch'),
  ),
  CLIENT_UPDATE_URLS: setting(
    '`<ios|android>:<url>`, comma-separated',
    'unset',
    'where an older app is sent to update (the store pages); required for each platform `MIN_CLIENT_VERSIONS` names',
    // Bounded as the OpenAPI document states them (1024 characters).
    (name, raw) =>
      platformPairs(
        name,
        raw,
        (v) => v.length <= 1024 && URL.canParse(v) && /^[a-z][a-z0-9+.-]*:$/.test(new URL(v).protocol),
        'absolute URL of at most 1024 characters',
      ),
  ),
  WORKER_DEAD_AFTER_SECONDS: seconds(
    10,
    'a worker process silent this long, its connection gone, is dead: its jobs are taken back by the live workers ([operations](docs/operations.md#worker-liveness))',
  ),
  LOG_LEVEL: setting(logLevels.map(code).join(', '), '`info` (`silent` when `NODE_ENV=test`)', 'pino level', (name, raw) => {
    if (raw && !logLevels.includes(raw)) throw new StartupError(`${name} must be one of ${logLevels.join(', ')} (got "${raw}")`);
    return raw || undefined;
  }),
  DATA_DIR: setting('folder', code('.data'), 'where embedded data and development secrets live', (_, raw) => path.resolve(raw ?? '.data')),
  FCM_SERVICE_ACCOUNT_FILE: text(
    undefined,
    'path of the Firebase service-account JSON key (`project_id`, `client_email`, `private_key`, `token_uri`) the worker pushes with ([docs/push.md](docs/push.md))',
    'unset: push off (startup says so)',
  ),
  FCM_API_URL: url('https://fcm.googleapis.com', 'base URL of FCM HTTP v1'),
  PUSH_CONCURRENCY: wholeNumber(64, 'push messages in flight at once per worker process (keep-alive connections to FCM)'),
  PUSH_LEASE_SECONDS: seconds(
    30,
    'a delivery claimed by a worker that dies goes back to the queue after this long; each FCM request times out after a third of it',
  ),
  PUSH_RETRY_BASE_SECONDS: seconds(
    1,
    'first wait before retrying a 429 or 5xx, doubled on each try (at most 5 tries; a longer `Retry-After` wins)',
  ),
  IMAGE_HEIC: setting(
    '`true`/`on`/`1` or `false`/`off`/`0`',
    code(true),
    "HEIC decoding (needs Debian's `libheif-examples`; off or missing, presign refuses HEIC) ([docs/photos.md](docs/photos.md))",
    (name, raw) => onOff(name, raw, true),
  ),
  IMAGE_CONCURRENCY: setting(
    'whole number ≥ 1',
    'the cores but one, at least 1',
    'decoder processes per worker process, one image at a time each (a core stays with requests)',
    (name, raw) => positiveInteger(name, raw, Math.max(1, os.availableParallelism() - 1)),
  ),
  IMAGE_MEMORY_MB: setting(
    'whole number ≥ 128',
    code(512),
    'resident memory of one decoder process, in MB, past which it is killed and its image refused',
    (name, raw) => {
      const memoryMb = positiveInteger(name, raw, 512);
      // Below this a decoder process (Node and sharp, about 70 MB at rest) cannot hold a photo at all.
      if (memoryMb < 128) throw new StartupError(`${name} must be at least 128 (got "${raw}")`);
      return memoryMb;
    },
  ),
  IMAGE_TIMEOUT_MS: wholeNumber(
    30_000,
    'how long one image may take, in milliseconds, before its decoder process is killed and the image refused',
  ),
  IMAGE_BACKFILL_PER_MINUTE: wholeNumber(60, 'images uploaded before processing existed that the worker queues each minute'),
};

type Definitions = typeof settingDefinitions;
/** The name of every environment variable the service reads. */
export type SettingName = keyof Definitions;
/** Each variable's value once read. */
export type Settings = { [K in SettingName]: ReturnType<Definitions[K]['parse']> };

/**
 * The settings as one zod schema of the environment: each variable's text (unset: undefined) to its
 * value, with its README row as the schema's metadata (`settingsSchema.shape.PORT.meta()`).
 */
export const settingsSchema = z.object(
  Object.fromEntries(
    Object.entries(settingDefinitions).map(([name, definition]: [string, Setting<unknown>]) => [
      name,
      z
        .string()
        .optional()
        .transform((raw) => definition.parse(name, raw))
        .meta({ type: definition.type, default: definition.default, description: definition.description }),
    ]),
  ),
) as unknown as z.ZodObject<{ [K in SettingName]: z.ZodType<Settings[K], string | undefined> }>;

/** The README row of each setting, in the table's order. */
export function settingRows(): { name: SettingName; type: string; default: string; description: string }[] {
  return (Object.keys(settingsSchema.shape) as SettingName[]).map((name) => {
    const meta = settingsSchema.shape[name].meta() as { type: string; default: string; description: string };
    return { name, type: meta.type, default: meta.default, description: meta.description };
  });
}

/** One variable of `env`, read through its schema (a bad value throws the StartupError naming it). */
function read<K extends SettingName>(env: Env, name: K): Settings[K] {
  return settingsSchema.shape[name].parse(env[name]) as Settings[K];
}

// ---------------------------------------------------------------------------------------------
// The configuration: the settings put together, with the rules that join two of them.

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
  const sender = read(env, 'OTP_SENDER');
  const module = read(env, 'OTP_SENDER_MODULE');
  if (sender && module) throw new StartupError('set OTP_SENDER or OTP_SENDER_MODULE, not both');
  if (module) return { kind: 'module', path: path.resolve(module) };
  if (sender === undefined) return { kind: 'log' };
  if (sender !== 'twilio')
    throw new StartupError(`OTP_SENDER must be twilio (got "${sender}"); OTP_SENDER_MODULE plugs in any other sender`);
  const twilio = ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_FROM'] as const;
  const missing = twilio.filter((name) => !read(env, name));
  if (missing.length > 0) throw new StartupError(`OTP_SENDER=twilio needs ${missing.join(', ')}`);
  return {
    kind: 'twilio',
    accountSid: read(env, 'TWILIO_ACCOUNT_SID') as string,
    authToken: read(env, 'TWILIO_AUTH_TOKEN') as string,
    from: read(env, 'TWILIO_FROM') as string,
    apiUrl: read(env, 'TWILIO_API_URL') as string,
  };
}

/** FCM_SERVICE_ACCOUNT_FILE: a Google service-account JSON key with the fields FCM needs. */
function fcmConfig(env: Env): FcmConfig | undefined {
  const file = read(env, 'FCM_SERVICE_ACCOUNT_FILE');
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
    apiUrl: read(env, 'FCM_API_URL') as string,
    concurrency: read(env, 'PUSH_CONCURRENCY'),
    leaseSeconds: read(env, 'PUSH_LEASE_SECONDS'),
    retryBaseSeconds: read(env, 'PUSH_RETRY_BASE_SECONDS'),
  };
}

function imageSettings(env: Env): ImageConfig {
  const memoryMb = read(env, 'IMAGE_MEMORY_MB');
  return {
    heic: read(env, 'IMAGE_HEIC'),
    concurrency: read(env, 'IMAGE_CONCURRENCY'),
    memoryMb,
    timeoutMs: read(env, 'IMAGE_TIMEOUT_MS'),
    backfillPerMinute: read(env, 'IMAGE_BACKFILL_PER_MINUTE'),
  };
}

function clientVersionSettings(env: Env): Config['clientVersions'] {
  const minimum = read(env, 'MIN_CLIENT_VERSIONS');
  const updateUrls = read(env, 'CLIENT_UPDATE_URLS');
  for (const platform of clientPlatforms) {
    if (minimum[platform] !== null && updateUrls[platform] === null) {
      throw new StartupError(`MIN_CLIENT_VERSIONS sets ${platform} but CLIENT_UPDATE_URLS gives no ${platform} URL to send older apps to`);
    }
  }
  return { minimum, updateUrls };
}

/** DATABASE_REPLICA_URLS: hot standbys of DATABASE_URL's server; their login roles are derived as DATABASE_URL's. */
function replicaUrls(env: Env): string[] {
  const urls = read(env, 'DATABASE_REPLICA_URLS');
  if (urls.length > 0 && !env.DATABASE_URL)
    throw new StartupError('DATABASE_REPLICA_URLS needs DATABASE_URL (replicas of the embedded database are not supported)');
  return urls;
}

/** DATABASE_POOLER_URL: where the pooler listens; the credentials are DATABASE_URL's (derived per role), never its own. */
function poolerUrl(env: Env): string | undefined {
  const raw = read(env, 'DATABASE_POOLER_URL');
  if (!raw) return undefined;
  if (!env.DATABASE_URL)
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

function webSettings(env: Env): Config['web'] {
  const iosAppIds = read(env, 'IOS_APP_IDS');
  const certSha256 = read(env, 'ANDROID_CERT_SHA256');
  const androidPackage = read(env, 'ANDROID_APP_PACKAGE');
  if ((androidPackage === undefined) !== (certSha256.length === 0))
    throw new StartupError('ANDROID_APP_PACKAGE and ANDROID_CERT_SHA256 go together: set both or neither');
  return {
    dir: read(env, 'WEB_DIR'),
    iosAppIds,
    android: androidPackage === undefined ? undefined : { package: androidPackage, certSha256 },
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const production = read(env, 'NODE_ENV') === 'production';
  if (production) checkProduction(env);
  const logLevel = read(env, 'LOG_LEVEL') ?? (env.NODE_ENV === 'test' ? 'silent' : 'info');
  const projectId = read(env, 'IDP_PROJECT_ID');
  const dataDir = read(env, 'DATA_DIR');
  const port = read(env, 'PORT');
  const s3Endpoint = read(env, 'S3_ENDPOINT');
  const s3Port = read(env, 'S3_PORT');
  return {
    port,
    metricsPort: read(env, 'METRICS_PORT'),
    metricsHost: read(env, 'METRICS_HOST') as string,
    migrateOnStart: read(env, 'MIGRATE_ON_START'),
    migrationLocks: {
      lockTimeoutMs: read(env, 'MIGRATION_LOCK_TIMEOUT_MS'),
      maxWaitSeconds: read(env, 'MIGRATION_LOCK_WAIT_SECONDS'),
    },
    dataDir,
    databaseUrl: read(env, 'DATABASE_URL'),
    databaseReplicaUrls: replicaUrls(env),
    replicaMaxLagMillis: read(env, 'REPLICA_MAX_LAG_MS'),
    databasePoolerUrl: poolerUrl(env),
    apiTimeouts: {
      statementTimeoutMs: read(env, 'API_STATEMENT_TIMEOUT_MS'),
      lockTimeoutMs: read(env, 'API_LOCK_TIMEOUT_MS'),
    },
    jwtSecret: read(env, 'JWT_SECRET') ?? localSecret(dataDir, 'jwt'),
    ballotKeys: read(env, 'BALLOT_KEY') ?? parseBallotKeys(`local:${localSecret(dataDir, 'ballot')}`),
    ballotBatch: read(env, 'BALLOT_BATCH'),
    production,
    otpTestCodes: read(env, 'OTP_TEST_CODES'),
    otpSender: otpSenderSetting(env),
    idp: {
      projectId,
      issuer: read(env, 'IDP_ISSUER') ?? `https://securetoken.google.com/${projectId}`,
      jwksUrl: read(env, 'IDP_JWKS_URL'),
    },
    s3: {
      endpoint: s3Endpoint,
      bucket: read(env, 'S3_BUCKET'),
      region: read(env, 'S3_REGION'),
      accessKeyId: read(env, 'S3_ACCESS_KEY_ID'),
      secretAccessKey: read(env, 'S3_SECRET_ACCESS_KEY'),
      forcePathStyle: read(env, 'S3_FORCE_PATH_STYLE'),
      publicUrl: read(env, 'S3_PUBLIC_URL') ?? s3Endpoint ?? `http://127.0.0.1:${s3Port}`,
      host: read(env, 'S3_HOST') as string,
      port: s3Port,
    },
    adminApiToken: read(env, 'ADMIN_API_TOKEN'),
    trustProxy: read(env, 'TRUST_PROXY'),
    publicWebBaseUrl: read(env, 'PUBLIC_WEB_BASE_URL') ?? `http://localhost:${port}`,
    web: webSettings(env),
    sse: {
      pingSeconds: read(env, 'SSE_PING_SECONDS'),
      maxSeconds: read(env, 'SSE_MAX_SECONDS'),
    },
    workerDeadAfterSeconds: read(env, 'WORKER_DEAD_AFTER_SECONDS'),
    writeLimits: read(env, 'WRITE_LIMITS'),
    clientVersions: clientVersionSettings(env),
    termsVersion: read(env, 'TERMS_VERSION'),
    logLevel,
    fcm: fcmConfig(env),
    images: imageSettings(env),
  };
}
