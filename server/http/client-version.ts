// The update gate (contract 15): the app names itself in `X-Client-Version: <ios|android>/<major.minor.patch>`;
// a version below the platform's MIN_CLIENT_VERSIONS answers 426 CLIENT_UPDATE_REQUIRED with the
// minimum and where to update (CLIENT_UPDATE_URLS), on every operation under /api/v1 but those
// that declare `anyClientVersion` (GET /auth/login-config, which lists the minimums so the app can
// check at launch). Checked first, before the token: an app too old to be served learns nothing else. No header, or
// one that is not of that form, is served: only an app that says it is too old is stopped.
import type { Request } from 'express';
import { clientPlatforms, clientVersionPattern, type ClientPlatform, type Config } from '../../config.ts';
import { ApiError } from './errors.ts';

export const clientVersionHeader = 'X-Client-Version';

/** The platform and version of a well-formed header, else undefined. */
export function parseClientVersion(header: string | undefined): { platform: ClientPlatform; version: number[] } | undefined {
  if (header === undefined) return undefined;
  const slash = header.indexOf('/');
  const platform = header.slice(0, slash) as ClientPlatform;
  const version = clientVersionPattern.exec(header.slice(slash + 1));
  if (slash < 0 || !clientPlatforms.includes(platform) || !version) return undefined;
  return { platform, version: version.slice(1, 4).map(Number) };
}

/** Negative when version a is older than b, 0 when equal, positive when newer. */
export function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i += 1) {
    const difference = (a[i] ?? 0) - (b[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/**
 * The gate of one process's settings: throws 426 CLIENT_UPDATE_REQUIRED for a request whose
 * well-formed X-Client-Version is below its platform's minimum.
 */
export function clientVersionGate({ minimum, updateUrls }: Config['clientVersions']): (req: Request) => void {
  const minimums = Object.fromEntries(
    clientPlatforms.map((platform) => [
      platform,
      minimum[platform] === null ? null : (parseClientVersion(`${platform}/${minimum[platform]}`)?.version ?? null),
    ]),
  ) as Record<ClientPlatform, number[] | null>;
  return (req) => {
    const client = parseClientVersion(req.get(clientVersionHeader));
    const oldest = client && minimums[client.platform];
    if (client && oldest && compareVersions(client.version, oldest) < 0) {
      throw new ApiError('CLIENT_UPDATE_REQUIRED', { minimumVersion: minimum[client.platform], updateUrl: updateUrls[client.platform] });
    }
  };
}
