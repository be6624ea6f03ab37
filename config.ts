// Process configuration from the environment (README "Configuration"). Read once at startup.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A problem the operator can fix (a setting, a busy port, an unreachable database): one line, exit 1. */
export class StartupError extends Error {}

export interface Config {
  port: number;
  /** Prometheus metrics on their own port; undefined: off. */
  metricsPort: number | undefined;
  /** false: this process expects the schema current (a separate `npm run migrate` ran it). */
  migrateOnStart: boolean;
  dataDir: string;
  databaseUrl: string | undefined;
  jwtSecret: string;
  otpTestCodes: Map<string, string>;
  otpSenderModule: string | undefined;
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
  /** The notification stream (contract section 9): a `: ping` comment every pingSeconds, closed after maxSeconds. */
  sse: { pingSeconds: number; maxSeconds: number };
  termsVersion: string;
  logLevel: string;
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
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535) throw new StartupError(`${name} must be a port number from 1 to 65535 (got "${raw}")`);
  return port;
}

function httpUrl(name: string, raw: string | undefined, fallback: string): string;
function httpUrl(name: string, raw: string | undefined, fallback: undefined): string | undefined;
function httpUrl(name: string, raw: string | undefined, fallback: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return fallback;
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) throw new StartupError(`${name} must be an http(s) URL (got "${raw}")`);
  return raw.replace(/\/$/, '');
}

function databaseUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!URL.canParse(raw) || !/^postgres(ql)?:$/.test(new URL(raw).protocol)) {
    throw new StartupError('DATABASE_URL must be a postgres:// URL');
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
  if (production && !env.JWT_SECRET) throw new StartupError('JWT_SECRET is required in production');
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
    migrateOnStart: env.MIGRATE_ON_START !== 'false',
    dataDir,
    databaseUrl: databaseUrl(env.DATABASE_URL),
    jwtSecret: env.JWT_SECRET ?? localSecret(dataDir, 'jwt'),
    otpTestCodes: parseOtpTestCodes(env.OTP_TEST_CODES),
    otpSenderModule: env.OTP_SENDER_MODULE || undefined,
    idp: {
      projectId,
      issuer: env.IDP_ISSUER ?? `https://securetoken.google.com/${projectId}`,
      jwksUrl:
        env.IDP_JWKS_URL ??
        'https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com',
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
    sse: {
      pingSeconds: positiveSeconds('SSE_PING_SECONDS', env.SSE_PING_SECONDS, 25),
      maxSeconds: positiveSeconds('SSE_MAX_SECONDS', env.SSE_MAX_SECONDS, 3600),
    },
    termsVersion: env.TERMS_VERSION ?? '2026-11-01',
    logLevel,
  };
}
