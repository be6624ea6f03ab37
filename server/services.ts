// What endpoint handlers may use, built once per process (server/app.ts).
import type { Config } from '../config.ts';
import type { Log } from '../logger.ts';
import type { Pools } from '../db/pools.ts';
import { BallotBox } from './votes/ballots.ts';
import { createIdpVerifier, type IdpVerifier } from './auth/idp.ts';
import { createOtp, loadOtpSender, type Otp, type OtpSender } from './auth/otp.ts';
import { createTokens, type Tokens } from './auth/tokens.ts';
import type { Admission } from './graphql/admission.ts';
import { createInternalGraphql, type InternalGraphql } from './graphql/mount.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { DatabaseOutage } from './outage.ts';
import { NotificationHub } from './sse/hub.ts';
import type { Storage } from './uploads/storage.ts';
import { ProcessedAssets } from './uploads/processed-assets.ts';
import { resolveWriteLimits, type WriteLimits } from './http/write-limits.ts';

export interface Services {
  config: Config;
  log: Log;
  pools: Pools;
  tokens: Tokens;
  otp: Otp;
  idp: IdpVerifier;
  storage: Storage;
  /** The internal GraphQL API (built on first use); release it before the pools end. */
  graphql: InternalGraphql;
  /** Live notification streams of this process; start it with the API, stop it before the pools end. */
  notificationHub: NotificationHub;
  metrics: Metrics;
  /** Logs one warning per database outage instead of one error per failed request. */
  outage: DatabaseOutage;
  /** The per-user write limits in force (defaults and WRITE_LIMITS). */
  writeLimits: WriteLimits;
  /** Seals vote positions and opens pending ballots at read time (BALLOT_KEY: server/votes/ballots.ts). */
  ballots: BallotBox;
  /** What uploads may be: HEIC only where the worker can decode it (IMAGE_HEIC and libheif's tools). */
  images: { heic: boolean };
  /** Wakes a request waiting for an image's processing (POST /uploads/complete). */
  processedAssets: ProcessedAssets;
}

// Handlers see these services (server/http/endpoint.ts declares the name and knows nothing else).
type AppServices = Services;
declare module './http/endpoint.ts' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Services extends AppServices {}
}

/** Adapters a deployment (or a test) plugs in instead of the configured ones. */
export interface ServiceOverrides {
  otpSender?: OtpSender;
  /** The process's metrics, shared with its worker (main.ts); a fresh set otherwise. */
  metrics?: Metrics;
  /** How many internal GraphQL operations run at once (server/graphql/admission.ts). */
  graphqlAdmission?: Admission;
  /** Whether HEIC uploads are accepted (main.ts asks the worker's image engine); false when not said. */
  heic?: boolean;
}

export async function createServices(
  config: Config,
  log: Log,
  pools: Pools,
  storage: Storage,
  overrides: ServiceOverrides = {},
): Promise<Services> {
  const tokens = createTokens(config.jwtSecret);
  const processedAssets = new ProcessedAssets();
  const notificationHub = new NotificationHub(config.sse, log, storage, processedAssets);
  const metrics = overrides.metrics ?? createMetrics(pools);
  metrics.watchLive(notificationHub);
  return {
    config,
    writeLimits: resolveWriteLimits(config.writeLimits),
    ballots: new BallotBox(config.ballotKeys),
    images: { heic: overrides.heic ?? false },
    processedAssets,
    log,
    pools,
    storage,
    tokens,
    otp: createOtp(config, overrides.otpSender ?? (await loadOtpSender(config, log)), log),
    idp: createIdpVerifier(config.idp),
    graphql: createInternalGraphql({
      pool: pools.graphql,
      poolConfig: pools.graphqlConfig,
      pooled: pools.pooled,
      bounds: config.apiTimeouts,
      tokens,
      adminApiToken: config.adminApiToken,
      log,
      ...(overrides.graphqlAdmission ? { admission: overrides.graphqlAdmission } : {}),
    }),
    notificationHub,
    metrics,
    outage: new DatabaseOutage(log, pools.api),
  };
}
