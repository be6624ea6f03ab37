// The route a request matched, as a pattern (never the raw URL: paths hold ids, queries search
// terms), spelled one way for the request log and the metrics: the full path from the root with
// `{name}` parameters, e.g. `/api/v1/posts/{postId}`, `/healthz`, `/api/v1/docs/assets/{file}`.
// An endpoint names its path; an Express route its own pattern; middleware that answers without a
// route (internal GraphQL) sets `res.locals.route`. Anything else is `(unmatched)`, so a scanner's
// URLs add no log keys or metric series.
import type { Request, Response } from 'express';
import type { Endpoint } from './endpoint.ts';

export const basePath = '/api/v1';

export function routePattern(req: Request, res: Response): string {
  const endpoint = res.locals.endpoint as Endpoint | undefined;
  if (endpoint) return `${basePath}${endpoint.path}`;
  if (typeof res.locals.route === 'string') return res.locals.route;
  const path = [(req.route as { path?: unknown } | undefined)?.path].flat()[0];
  if (typeof path !== 'string') return '(unmatched)';
  return `${req.baseUrl}${path}`.replace(/:(\w+)/g, '{$1}');
}
