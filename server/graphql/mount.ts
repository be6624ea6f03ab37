// The internal GraphQL endpoint, POST /internal/graphql (outside /api/v1 and its OpenAPI document).
// Every request is authenticated first, on this thread (auth.ts), and admitted (admission.ts: how
// many operations one user, one address and the process run at once); PostGraphile then answers as
// that viewer, from the schema of the viewer's role (user tokens get the schema built from
// app_user's grants, what REST may show a user; the admin token the one built from app_admin's:
// preset.ts), in a worker thread of its own (thread.ts), so its work never holds REST's event loop.
// The thread is started, and PostGraphile loaded and every role's schema built, on the first
// authenticated request, not at startup: processes and tests that never use GraphQL neither load it
// nor introspect. A failed build is retried on the next request; a thread that ends is started
// again by the next request. release() must run before the pools end.
import { Worker } from 'node:worker_threads';
import type { RequestHandler, Response } from 'express';
import type pg from 'pg';
import type { TransactionBounds } from '../../db/request-transaction.ts';
import type { Log } from '../../logger.ts';
import type { Tokens } from '../auth/tokens.ts';
import { ApiError } from '../http/errors.ts';
import { Admission } from './admission.ts';
import { adminTokenMatcher, graphqlViewer, schemaRoleOf, schemaRoles, type GraphqlAuth, type SchemaRole } from './auth.ts';
import type { ThreadAnswer, ThreadOptions, ThreadQuestion, ThreadReply } from './thread-messages.ts';

export const internalGraphqlPath = '/internal/graphql';

/** The GraphQL thread's nice value: below the API's other threads, so REST keeps the CPU it needs. */
export const graphqlThreadNiceness = 5;

export interface InternalGraphql {
  /** Express middleware: serves internalGraphqlPath and passes every other request on. */
  handler: RequestHandler;
  /** Starts the thread and builds both schemas now instead of on the first request. */
  ready(): Promise<void>;
  /**
   * Connections the thread's pool handed out so far, its size, and the thread's id in the operating
   * system (Linux; null elsewhere, and before the thread starts).
   */
  poolStats(): Promise<{ checkouts: number; max: number; threadId: number | null; built: SchemaRole[] }>;
  /** Stops serving and releases PostGraphile, its pgServices, the thread's pool and the thread. Idempotent. */
  release(): Promise<void>;
}

export interface InternalGraphqlOptions {
  /** The pool of the session checks (db/pools.ts `graphql`), never REST's. */
  pool: pg.Pool;
  /** The settings of the thread's pool (db/pools.ts `graphqlConfig`). */
  poolConfig: pg.PoolConfig;
  /** Whether those pools go through a transaction-mode pooler: PostGraphile then prepares no statement. */
  pooled: boolean;
  /** The bounds of the token check's transaction (the API's). */
  bounds: TransactionBounds;
  tokens: Tokens;
  adminApiToken: string | undefined;
  log: Log;
  /** How many operations run at once (admission.ts); one per user and address, two in all, by default. */
  admission?: Admission;
}

type Answered = (answer: ThreadAnswer) => void;

/** The GraphQL thread: one request, one reply, by id; every waiting request fails if the thread ends. */
class GraphqlThread {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, { answered: Answered; failed: (error: unknown) => void }>();
  #next = 1;
  #ended: Error | undefined;

  constructor(options: ThreadOptions, log: Log, onEnd: () => void) {
    this.#worker = new Worker(new URL('./thread.ts', import.meta.url), { workerData: options });
    this.#worker.on('message', ({ id, reply }: ThreadReply) => {
      const waiting = this.#waiting.get(id);
      this.#waiting.delete(id);
      waiting?.answered(reply);
    });
    const end = (error: Error) => {
      if (this.#ended) return;
      this.#ended = error;
      onEnd();
      for (const { failed } of this.#waiting.values()) failed(error);
      this.#waiting.clear();
    };
    this.#worker.on('error', (error) => {
      log.error({ err: { message: error.message, stack: error.stack } }, 'the internal GraphQL thread failed');
      end(error);
    });
    this.#worker.on('exit', (code) => end(new Error(`the internal GraphQL thread ended (exit code ${code})`)));
  }

  ask(request: ThreadQuestion): Promise<ThreadAnswer> {
    if (this.#ended) return Promise.reject(this.#ended);
    const id = this.#next++;
    return new Promise((answered, failed) => {
      this.#waiting.set(id, { answered, failed });
      this.#worker.postMessage({ ...request, id });
    });
  }

  async stop(): Promise<void> {
    if (!this.#ended) await this.ask({ type: 'release' }).catch(() => undefined);
    await this.#worker.terminate();
  }
}

/** Headers as the thread takes them: lower-case names, one string each. */
function headersOf(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  return flat;
}

function send(res: Response, answer: Extract<ThreadAnswer, { kind: 'bytes' }>): void {
  const body = Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength);
  res.writeHead(answer.status, { ...answer.headers, 'Content-Length': String(body.length) });
  res.end(body);
}

export function createInternalGraphql({
  pool,
  poolConfig,
  pooled,
  bounds,
  tokens,
  adminApiToken,
  log,
  admission = new Admission(),
}: InternalGraphqlOptions): InternalGraphql {
  const auth: GraphqlAuth = { pool, bounds, tokens, isAdminToken: adminTokenMatcher(adminApiToken) };
  const threadOptions: ThreadOptions = {
    pool: poolConfig,
    pooled,
    graphqlPath: internalGraphqlPath,
    logLevel: log.level,
    niceness: graphqlThreadNiceness,
    roles: [...schemaRoles],
  };
  let thread: GraphqlThread | undefined;
  let released = false;

  function current(): GraphqlThread {
    if (released) throw new ApiError('SERVICE_UNAVAILABLE');
    const started = (thread ??= new GraphqlThread(threadOptions, log, () => {
      if (thread === started) thread = undefined;
    }));
    return started;
  }

  const handler: RequestHandler = (req, res, next) => {
    if (req.path !== internalGraphqlPath) {
      next();
      return;
    }
    // The request log and the metrics name this route (server/http/route-name.ts); the log the acting user.
    res.locals.route = internalGraphqlPath;
    graphqlViewer(req, auth)
      .then(async (viewer) => {
        res.locals.userId = viewer.userId ?? undefined;
        // Room for the operation, for this user and this address (429 after a short wait), held
        // until the response is done or the client goes away.
        const leave = await admission.enter([`user:${viewer.userId ?? 'admin'}`, `address:${req.ip ?? req.socket.remoteAddress ?? ''}`]);
        res.once('close', leave);
        let answer: ThreadAnswer;
        try {
          answer = await current().ask({
            type: 'request',
            viewer,
            role: schemaRoleOf(viewer),
            method: req.method,
            path: req.path,
            httpVersion: [req.httpVersionMajor, req.httpVersionMinor],
            secure: req.secure,
            headers: headersOf(req.headers),
            body: req.body as unknown,
          });
        } catch (error) {
          leave();
          throw error instanceof ApiError ? error : new ApiError('SERVICE_UNAVAILABLE');
        }
        switch (answer.kind) {
          case 'bytes':
            send(res, answer);
            return;
          case 'failure': {
            // What grafserv would hand Express's error handler: logged with an id, answered 500.
            const error = new Error(answer.message);
            if (answer.stack) error.stack = answer.stack;
            throw error;
          }
          default:
            next();
        }
      })
      .catch(next);
  };

  return {
    handler,
    async ready() {
      const answer = await current().ask({ type: 'ready', roles: [...schemaRoles] });
      if (answer.kind === 'failure') throw new Error(answer.message);
    },
    async poolStats() {
      if (!thread) return { checkouts: 0, max: poolConfig.max ?? 10, threadId: null, built: [] };
      const answer = await thread.ask({ type: 'stats' });
      if (answer.kind !== 'stats') throw new Error(`the GraphQL thread answered ${answer.kind} to stats`);
      return { checkouts: answer.checkouts, max: answer.max, threadId: answer.threadId, built: answer.built };
    },
    async release() {
      if (released) return;
      released = true;
      const stopping = thread;
      thread = undefined;
      await stopping?.stop();
    },
  };
}
