// One object per route. The same definition drives the Express route, the checks in contract order
// (token 401, access level 403, request shape 422, then the handler's existence/state checks), the
// response shaping, and the OpenAPI document (server/openapi).
import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { Viewer } from '../../db/viewer.ts';
import type { AccessLevel, AuthMode } from './auth.ts';
import type { ErrorCode } from './catalog.ts';
import type { PathParameter } from './ids.ts';
import type { WriteLimitDeclaration } from './write-limits.ts';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * What handlers may use, as `services`. Empty here and filled in by server/services.ts (declaration
 * merging), so this framework imports none of the services it hands over: they may import it.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Services {}

export interface HandlerContext<B, Q, P> {
  body: B;
  query: Q;
  params: P;
  viewer: Viewer;
  /** The viewer's access level: 0 without a token (sessionCheckWithFirstStatement: the endpoint's level). */
  level: number;
  tx: RequestTransaction;
  services: Services;
  req: Request;
  res: Response;
}

export interface Endpoint<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  method: Method;
  /** OpenAPI-style path below /api/v1, e.g. `/users/{userId}/follow`. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  auth: AuthMode;
  /** Minimum access level (spec part 5); the gate answers the missing level's 403 code. */
  level?: AccessLevel;
  /**
   * Bearer endpoints whose handler does nothing before its first statement: the session check and
   * the level gate travel with that statement, in one round trip (app.session_gate answers the
   * same 401/403 codes). The handler's `level` is then the endpoint's level (or 1).
   */
  sessionCheckWithFirstStatement?: true;
  body?: B;
  query?: Q;
  /** Path ids and the 404 code an unknown one answers. */
  ids?: Record<string, ErrorCode>;
  /** Path parameters that are not ids: their form (in the OpenAPI document too) and the 404 another form answers. */
  pathParameters?: Record<string, PathParameter>;
  status?: 200 | 201 | 202;
  /**
   * An endpoint that answers 201 or 200 by outcome (a creation that finds the record already there):
   * `pick` chooses from the handler's data (before the response schema strips it); the OpenAPI
   * document lists both with their descriptions.
   */
  statusOf?: { pick(data: unknown): 200 | 201; descriptions: Record<200 | 201, string> };
  message?: string;
  response: R;
  /**
   * The per-user write limit of a write endpoint (server/http/write-limits.ts): checked in the
   * request's transaction before its statements; 429 RATE_LIMITED when full.
   */
  limit?: WriteLimitDeclaration;
  /**
   * The other per-user or per-address limits that count this operation (their names): the
   * RateLimit headers of its answers name them (server/http/rate-limit-headers.ts). For the
   * OpenAPI document; the limits themselves live in their SQL.
   */
  rateLimits?: string[];
  /**
   * Served to every app version: the update gate (server/http/client-version.ts) does not apply.
   * Only GET /auth/login-config, where the app learns the minimum versions.
   */
  anyClientVersion?: true;
  /** Error codes beyond those every endpoint of its kind can answer (401/403 gate/422). */
  errors?: ErrorCode[];
  /** A streaming endpoint answers with its own content type and writes the response itself. */
  stream?: { contentType: string };
  handler(ctx: HandlerContext<z.output<B>, z.output<Q>, Record<string, string>>): Promise<z.input<R> | undefined>;
  /**
   * An answer finished after the request's transaction committed (POST /uploads/complete waits for
   * the image's processing, which needs the asset committed): the handler's data commits (with an
   * Idempotency-Key, kept as the answer so far), then this gives the final data, or throws the
   * final error, and that is kept in its place.
   */
  afterCommit?(data: z.input<R> | undefined, ctx: { viewer: Viewer; services: Services }): Promise<z.input<R>>;
}

export function endpoint<B extends z.ZodType, Q extends z.ZodType, R extends z.ZodType>(definition: Endpoint<B, Q, R>): Endpoint {
  return definition as unknown as Endpoint;
}

export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}
