// GET /api/v1/openapi.json and a readable docs page at GET /api/v1/docs (self-contained: no CDN).
import express from 'express';
import type { Endpoint } from '../http/endpoint.ts';
import { openApiDocument } from './document.ts';
import { docsPage } from './docs-page.ts';

export function openApiRouter(endpoints: Endpoint[]): express.Router {
  const document = openApiDocument(endpoints);
  const router = express.Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(docsPage);
  });
  return router;
}
