// The Express application: request context, JSON bodies (64 KiB), every resource's endpoints under
// /api/v1, the OpenAPI document and docs page, /healthz and /readyz, the web pages of links, the internal GraphQL API at
// /internal/graphql, unknown routes, and the error envelope; and the HTTP server around it.
import { createServer as createHttpServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import express from 'express';
import type { Endpoint } from './http/endpoint.ts';
import { expressPath } from './http/endpoint.ts';
import { answerClientErrors } from './http/client-errors.ts';
import { ApiError } from './http/errors.ts';
import { errorHandler } from './http/error-handler.ts';
import { requestContext } from './http/request-context.ts';
import { runEndpoint } from './http/run-endpoint.ts';
import { basePath } from './http/route-name.ts';
import type { Services } from './services.ts';
import { allEndpoints } from './features.ts';
import { openApiRouter } from './openapi/router.ts';
import { healthRouter } from './health.ts';
import { appLinkFiles } from './web/app-links.ts';
import { webPages } from './web/pages.ts';

export { basePath } from './http/route-name.ts';

/**
 * The order in which the endpoints are mounted: where two paths of one method could match one URL,
 * the one with a fixed segment where the other has a parameter comes first, so
 * GET /users/by-username/{username} answers /users/by-username/followers, never
 * GET /users/{userId}/followers. Each path sorts by its segments' kinds (fixed before parameter,
 * from the left); paths of one shape keep their order. Two paths that can match one URL differ in
 * kind at their first such segment, so the order of the features never decides the route.
 */
export function mountOrder(endpoints: readonly Endpoint[]): Endpoint[] {
  const shape = (definition: Endpoint) =>
    definition.path
      .split('/')
      .map((segment) => (segment.startsWith('{') ? '1' : '0'))
      .join('');
  return endpoints
    .map((definition) => ({ definition, shape: shape(definition) }))
    .sort((a, b) => (a.shape < b.shape ? -1 : a.shape > b.shape ? 1 : 0))
    .map(({ definition }) => definition);
}

export function createApp(services: Services): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // No ETag of Express's own: the API's GET answers carry theirs (server/http/conditional.ts), the
  // other routes none.
  app.set('etag', false);
  // The client address (req.ip) for per-address limits: the socket's, or a trusted proxy's entry.
  app.set('trust proxy', services.config.trustProxy);
  app.use(services.metrics.requests());
  app.use(requestContext(services.log));
  app.use(healthRouter(services.pools.api));
  // The pages behind the links the app hands out (logo, legal pages, share and invite links) and
  // the app-link files; outside /api/v1, no token, read as an anonymous request.
  app.use(webPages(services));
  app.use(appLinkFiles(services.config));
  // Bodies are JSON whatever the declared content type; an empty body reads as {}.
  app.use(express.json({ limit: '64kb', type: () => true }));

  const api = express.Router();
  for (const definition of mountOrder(allEndpoints)) {
    api[definition.method](expressPath(definition.path), runEndpoint(definition, services));
  }
  api.use(openApiRouter(allEndpoints));
  app.use(basePath, api);
  app.use(services.graphql.handler);

  app.use((_req, _res, next) => next(new ApiError('ROUTE_NOT_FOUND')));
  app.use(errorHandler(services.log, services.outage));
  return app;
}

/** The HTTP server around the app (Node's default header limit, 16 KiB, with enveloped refusals). */
/**
 * How long a client may take to send a request (docs/security.md). Node's own defaults (60 s for
 * the headers, 5 minutes for the whole request, checked every 30 s) let a client that sends a
 * byte a second hold a socket for minutes; these close it within about 11 s (headers) or 31 s
 * (body), answering 408 REQUEST_TIMEOUT where the socket still takes it. Neither applies once a
 * request has been received: a response may take as long as it takes, and an event stream (GET
 * /notifications/stream) stays open.
 */
export interface RequestTimeouts {
  /** The request line and headers, from the first byte. */
  headersMs: number;
  /** The whole request, body included (bodies are at most 64 KiB). */
  requestMs: number;
  /** How often the server looks for requests past their time. */
  checkEveryMs: number;
}

export const requestTimeouts: RequestTimeouts = { headersMs: 10_000, requestMs: 30_000, checkEveryMs: 1_000 };

export function createServer(services: Services, timeouts: RequestTimeouts = requestTimeouts): Server {
  const server = createHttpServer(
    { headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: timeouts.checkEveryMs },
    createApp(services),
  );
  // Node's check counts a connection's headers time from the connection itself, so a socket that
  // never sends a byte is answered 408 like a slow one (answerClientErrors) at its first check
  // after headersMs. In case a runtime counts from the first byte instead, a socket that has sent
  // nothing by the check after that is closed here: later than Node's own check, so that one
  // answer is what a client gets (when both ran at headersMs, either could come first, and a
  // client saw a 408 or a bare close by chance).
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(
      () => {
        if (socket.bytesRead === 0) socket.destroy();
      },
      timeouts.headersMs + 2 * timeouts.checkEveryMs,
    );
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
  return answerClientErrors(server, services.log);
}
