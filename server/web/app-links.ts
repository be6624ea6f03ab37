// The files that let the apps open these links (iOS universal links, Android app links), from
// settings: IOS_APP_IDS gives GET /.well-known/apple-app-site-association, ANDROID_APP_PACKAGE and
// ANDROID_CERT_SHA256 give GET /.well-known/assetlinks.json. Without the settings each answers 404
// (no app claims the links). Both are JSON at their fixed paths, never redirected, as the platforms
// require. The paths the apps open are the web pages of pages.ts.
import express from 'express';
import type { Config } from '../../config.ts';

/** The paths of the links the app opens: share links and invite URLs. */
export const appLinkPaths = ['/p/*', '/hub-invite-links/*', '/hub-invitations/*'];

export function appleAppSiteAssociation(config: Config): unknown {
  return {
    applinks: {
      // iOS 13 and later read appIDs and components; earlier versions appID and paths.
      details: [
        {
          appIDs: config.web.iosAppIds,
          components: appLinkPaths.map((path) => ({ '/': path })),
        },
        ...config.web.iosAppIds.map((appID) => ({ appID, paths: appLinkPaths })),
      ],
    },
  };
}

export function assetLinks(config: Config): unknown {
  const android = config.web.android;
  if (!android) return [];
  return [
    {
      relation: ['delegate_permission/common.handle_all_urls'],
      target: { namespace: 'android_app', package_name: android.package, sha256_cert_fingerprints: android.certSha256 },
    },
  ];
}

export function appLinkFiles(config: Config): express.Router {
  const router = express.Router();
  const json = (res: express.Response, body: unknown) =>
    res.set('Cache-Control', 'public, max-age=3600').type('application/json').send(JSON.stringify(body));
  router.get('/.well-known/apple-app-site-association', (_req, res, next) => {
    if (config.web.iosAppIds.length === 0) return next();
    json(res, appleAppSiteAssociation(config));
  });
  router.get('/.well-known/assetlinks.json', (_req, res, next) => {
    if (!config.web.android) return next();
    json(res, assetLinks(config));
  });
  return router;
}
