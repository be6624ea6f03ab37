// The internal GraphQL executor, run in a worker thread of the API process (mount.ts starts it on
// the first authenticated GraphQL request). PostGraphile's work for one operation (planning,
// running the plan, serialising the answer) is tens of milliseconds of JavaScript for the heaviest
// operations the bounds allow; on REST's event loop every REST request would wait behind it. Here
// it runs on an event loop of its own, with a pool of its own, and once every role's schema is
// built, at a lower CPU priority than the process's other threads (Linux nice 5 on this thread
// alone): REST's latency does not follow GraphQL's (docs/performance.md, "Internal GraphQL beside REST").
//
// The main thread authenticates a request, takes its admission (admission.ts), and posts the
// request here with its viewer; this thread answers with the status, headers and bytes to send, or
// with a failure the main thread's error handler renders. Nothing here reads a token.
import { readlinkSync } from 'node:fs';
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { GraphQLSchema } from 'postgraphile/graphql';
import type { GrafservBody, RequestDigest, Result } from 'postgraphile/grafserv';
import { survivesServerLoss } from '../../db/pools.ts';
import type { Viewer } from '../../db/viewer.ts';
import { createLogger } from '../../logger.ts';
import type { SchemaRole } from './auth.ts';
import type { ThreadAnswer, ThreadOptions, ThreadRequest } from './thread-messages.ts';

declare global {
  // Grafast declares its request context as a global namespace's interface: this is how it is extended.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Grafast {
    interface RequestContext {
      /** The authenticated viewer of the request (the main thread's session check). */
      viewer: Viewer;
    }
  }
}

const options = workerData as ThreadOptions;
const port = parentPort;
if (!port) throw new Error('server/graphql/thread.ts runs only as a worker thread');

/** This thread's id in the operating system (Linux), or null. */
function osThreadId(): number | null {
  try {
    const id = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(id) ? id : null;
  } catch {
    return null;
  }
}
const threadId = osThreadId();
let niced = false;
/**
 * This thread, and only this thread, at nice `niceness` (Linux: setpriority takes a thread's id),
 * once every role's schema is built: a build (seconds of CPU, once per role and process) runs at
 * the process's priority, so a loaded host does not starve a moderator's first operation for the
 * length of a build at a tenth of a core; every operation after it runs below REST. (An unprivileged
 * thread cannot raise its priority back, so this happens once.)
 */
function lowerPriority(): void {
  if (niced) return;
  niced = true;
  try {
    if (threadId !== null) os.setPriority(threadId, options.niceness);
  } catch {
    // Not allowed: the thread runs at the process's priority.
  }
}

// Read by grafast and @dataplan/pg once, when loaded (this thread's own copy of the environment):
// development and tests keep grafast's development checks; behind a transaction-mode pooler no
// statement is prepared (named statements do not survive a transaction there); and JIT is not set
// per connection (a session setting: auth.ts sets it per transaction instead).
process.env.GRAPHILE_ENV ??=
  process.env.NODE_ENV === 'development' || process.env.NODE_ENV === 'test' ? process.env.NODE_ENV : 'production';
process.env.DATAPLAN_PG_DONT_DISABLE_JIT ??= '1';
if (options.pooled) process.env.DATAPLAN_PG_PREPARED_STATEMENT_CACHE_SIZE = '0';

const [{ default: pg }, { postgraphile }, { GrafservBase }, { internalGraphqlPreset, internalPgService }] = await Promise.all([
  import('pg'),
  import('postgraphile'),
  import('postgraphile/grafserv'),
  import('./preset.ts'),
]);

const log = createLogger(options.logLevel);
const pool = survivesServerLoss(new pg.Pool(options.pool));
let checkouts = 0;
pool.on('acquire', () => (checkouts += 1));

/** Grafserv without a web framework: a request digest in, a result out. */
class ThreadGrafserv extends GrafservBase {
  async answer(digest: RequestDigest): Promise<Result | null> {
    return await this.processRequest(digest);
  }
}

interface Running {
  serv: ThreadGrafserv;
  schema: GraphQLSchema;
  release(): Promise<void>;
}

const running = new Map<SchemaRole, Promise<Running>>();
/** The roles whose schema is built (for the stats message). */
const built = new Set<SchemaRole>();

async function start(role: SchemaRole): Promise<Running> {
  const pgService = internalPgService(pool, role);
  const pgl = postgraphile(internalGraphqlPreset({ graphqlPath: options.graphqlPath, role, pgService, log }));
  const release = async () => {
    await pgl.release();
    await pgService.release?.();
  };
  try {
    const schema = await pgl.getSchema();
    built.add(role);
    return { serv: pgl.createServ((config) => new ThreadGrafserv(config)), schema, release };
  } catch (error) {
    await release().catch(() => undefined);
    throw error;
  }
}

/** The builds that follow the first use: every other role's schema, then the lower priority. */
let firstBuilds: Promise<void> | undefined;

/**
 * The schema of `role`, built on first use. The first use also builds every other role's schema
 * after its own (the request does not wait for them), then lowers this thread's priority; a failed
 * build is tried again on the next request of its role.
 */
function instance(role: SchemaRole): Promise<Running> {
  const own = build(role);
  firstBuilds ??= (async () => {
    await own.catch(() => undefined);
    for (const other of options.roles) if (other !== role) await build(other).catch(() => undefined);
    lowerPriority();
  })();
  return own;
}

function build(role: SchemaRole): Promise<Running> {
  let current = running.get(role);
  if (!current) {
    current = start(role).catch((error: unknown) => {
      running.delete(role);
      throw error;
    });
    running.set(role, current);
  }
  return current;
}

/** Result bytes from a grafserv result (no subscriptions or incremental delivery here: streams are joined). */
async function bytesOf(result: Result): Promise<ThreadAnswer> {
  switch (result.type) {
    case 'buffer':
      return { kind: 'bytes', status: result.statusCode, headers: result.headers, body: result.buffer };
    case 'json':
      return { kind: 'bytes', status: result.statusCode, headers: result.headers, body: Buffer.from(JSON.stringify(result.json), 'utf8') };
    case 'noContent':
      return { kind: 'bytes', status: result.statusCode, headers: result.headers, body: Buffer.alloc(0) };
    case 'bufferStream': {
      const chunks: Buffer[] = [];
      for await (const chunk of result.bufferIterator) chunks.push(chunk);
      return { kind: 'bytes', status: result.statusCode, headers: result.headers, body: Buffer.concat(chunks) };
    }
    case 'error': {
      const { error, statusCode } = result;
      // A SafeError (grafast's: a message meant for the client) is sent as text, as grafserv does.
      if (error.name === 'SafeError') {
        return {
          kind: 'bytes',
          status: statusCode,
          headers: { 'Content-Type': 'text/plain; charset=utf-8' },
          body: Buffer.from(error.message, 'utf8'),
        };
      }
      return { kind: 'failure', status: statusCode, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
    }
    default:
      return { kind: 'failure', status: 500, message: `unexpected grafserv result ${(result as { type: string }).type}` };
  }
}

async function answer(request: Extract<ThreadRequest, { type: 'request' }>): Promise<ThreadAnswer> {
  const { serv } = await instance(request.role);
  const body: GrafservBody = { type: 'json', json: request.body as never };
  const digest: RequestDigest = {
    method: request.method,
    httpVersionMajor: request.httpVersion[0],
    httpVersionMinor: request.httpVersion[1],
    isSecure: request.secure,
    path: request.path,
    headers: request.headers,
    getQueryParams: () => Object.create(null) as Record<string, string>,
    getBody: () => body,
    requestContext: { viewer: request.viewer },
  };
  const result = await serv.answer(digest);
  // Not this path (mount.ts sends only the GraphQL path): the main thread passes it on.
  if (result === null) return { kind: 'notHere' };
  return bytesOf(result);
}

port.on('message', (message: ThreadRequest) => {
  switch (message.type) {
    case 'request':
      answer(message)
        .catch((error: unknown): ThreadAnswer => {
          const failed = error instanceof Error ? error : new Error(String(error));
          return { kind: 'failure', status: 500, message: failed.message, ...(failed.stack ? { stack: failed.stack } : {}) };
        })
        .then((reply) =>
          port.postMessage(
            { id: message.id, reply },
            reply.kind === 'bytes' && reply.body.byteOffset === 0 && reply.body.byteLength === reply.body.buffer.byteLength
              ? [reply.body.buffer as ArrayBuffer]
              : [],
          ),
        );
      return;
    case 'ready':
      Promise.all(message.roles.map(instance)).then(
        () => port.postMessage({ id: message.id, reply: { kind: 'done' } }),
        (error: unknown) => port.postMessage({ id: message.id, reply: { kind: 'failure', status: 500, message: String(error) } }),
      );
      return;
    case 'stats':
      port.postMessage({ id: message.id, reply: { kind: 'stats', checkouts, max: options.pool.max ?? 10, threadId, built: [...built] } });
      return;
    case 'release':
      void (async () => {
        await firstBuilds?.catch(() => undefined);
        const current = [...running.values()];
        running.clear();
        for (const instance of current) {
          const started = await instance.catch(() => undefined);
          await started?.release().catch(() => undefined);
        }
        await pool.end().catch(() => undefined);
        port.postMessage({ id: message.id, reply: { kind: 'done' } });
      })();
      return;
  }
});
