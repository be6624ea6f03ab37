// What the main thread (mount.ts) and the GraphQL thread (thread.ts) send each other.
import type pg from 'pg';
import type { Viewer } from '../../db/viewer.ts';
import type { SchemaRole } from './auth.ts';

/** The thread's settings (workerData). */
export interface ThreadOptions {
  /** The thread's own pool: the GraphQL pool's settings (db/pools.ts graphqlPoolConfig). */
  pool: pg.PoolConfig;
  /** Whether that pool goes through a transaction-mode pooler: PostGraphile then prepares no statement. */
  pooled: boolean;
  graphqlPath: string;
  logLevel: string;
  /** The thread's Linux nice value (the process's other threads keep theirs). */
  niceness: number;
  /** Every role's schema, all built at the process's priority before the thread lowers its own. */
  roles: SchemaRole[];
}

export type ThreadRequest =
  | {
      type: 'request';
      id: number;
      viewer: Viewer;
      role: SchemaRole;
      method: string;
      path: string;
      httpVersion: [number, number];
      secure: boolean;
      /** Lower-case names, one string each. */
      headers: Record<string, string>;
      /** The parsed JSON body (the app parses every body). */
      body: unknown;
    }
  | { type: 'ready'; id: number; roles: SchemaRole[] }
  | { type: 'stats'; id: number }
  | { type: 'release'; id: number };

/** A request as the main thread writes it (the id is the thread wrapper's). */
export type ThreadQuestion = ThreadRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

export type ThreadAnswer =
  | { kind: 'bytes'; status: number; headers: Record<string, string>; body: Uint8Array }
  /** Not an answer for the client: the main thread's error handler logs it and answers 500. */
  | { kind: 'failure'; status: number; message: string; stack?: string }
  | { kind: 'notHere' }
  | { kind: 'done' }
  | { kind: 'stats'; checkouts: number; max: number; threadId: number | null; built: SchemaRole[] };

export interface ThreadReply {
  id: number;
  reply: ThreadAnswer;
}
