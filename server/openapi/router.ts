// GET /api/v1/openapi.json and the docs page at GET /api/v1/docs and /api/v1/docs/ (swagger-ui from
// the swagger-ui-dist package, served from node_modules: no CDN).
import { createRequire } from 'node:module';
import path from 'node:path';
import express from 'express';
import { sendCacheable } from '../http/conditional.ts';
import type { Endpoint } from '../http/endpoint.ts';
import { openApiDocument } from './document.ts';
import { docsAssets, docsPage } from './docs-page.ts';

export function openApiRouter(endpoints: Endpoint[]): express.Router {
  const document = openApiDocument(endpoints);
  const assetsDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const router = express.Router();
  const documentText = JSON.stringify(document);
  router.get('/openapi.json', (_req, res) => {
    sendCacheable(res, 200, documentText, 'application/json');
  });
  let page: string | undefined;
  router.get(['/docs', '/docs/'], (req, res) => {
    page ??= docsPage(`${req.baseUrl}/docs/assets`, document);
    sendCacheable(res, 200, page, 'html');
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    const file = req.params.file;
    if (!docsAssets.includes(file)) return next();
    res.sendFile(path.join(assetsDir, file), { maxAge: '1d' });
  });
  return router;
}
